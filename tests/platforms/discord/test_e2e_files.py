"""End to end on Discord: pictures and files going out. "Draw me a cat" brings one message with the
picture attached and the caption as its text; a file over the server's upload limit is named in
the text instead (a boosted server takes more); an action's embeds go along. What went out is
remembered with what it carried."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.kernel.outgoing import OutgoingFile, Reply
from bot.kernel.types import ChannelType, Room
from bot.runtime.agent import AgentRuntime
from platforms.discord._mapping import discord_id

from ...fakes.openai_server import make_png
from .scene import drawing, until

DRAWS = {"IMAGE_MODEL": "dall-e-3"}
PICTURE = make_png(4, 4)
MB = 1000 * 1000


async def test_draw_me_a_cat_brings_one_attachment_with_its_caption_remembered_with_what_it_carried(scene) -> None:
    s = scene
    assert s.openai is not None
    await s.start(DRAWS, with_brann=False)
    s.openai.script_images(PICTURE)
    s.brain.plans["Ada"].append(drawing("Here's your cat!"))
    asked = await s.fake.user_says(s.sam, s.general, "Ada, draw me a cat")
    (sent,) = await s.fake.wait_for_sent(s.ada, 1)
    assert sent.content == "Here's your cat!" and sent.reference is asked
    (attachment,) = sent.attachments
    assert attachment.filename == "image-1.png" and attachment.data == PICTURE
    # The prompt the model says it drew is the picture's alt text.
    assert attachment.description == "drawn: a ginger cat asleep on a keyboard"
    assert len(s.openai.requests_for("images")) == 1
    rt = s.runtime("Ada")
    memory_id = discord_id(rt.agent_id, sent.id)
    said = None
    for _ in range(100):
        said = await rt.store.get_memory(memory_id)
        if said is not None:
            break
        await asyncio.sleep(0.02)
    assert said is not None and said.content.text == "Here's your cat!" and "files" not in said.content.to_json()
    assert said.content.attachments is not None
    (carried,) = said.content.attachments
    assert carried.title == "image-1.png" and carried.size == len(PICTURE) and carried.id == str(attachment.id)
    await asyncio.sleep(0.2)
    assert len(s.ada.sent) == 1


async def test_without_an_image_model_the_character_says_it_cannot_draw(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(drawing("Here's your cat!"))
    await s.fake.user_says(s.sam, s.general, "Ada, draw me a cat")
    (sent,) = await s.fake.wait_for_sent(s.ada, 1)
    assert sent.content == "I can't draw pictures here: no image model is set up for me." and sent.attachments == []


async def in_general(s, tmp_path: Path) -> tuple[AgentRuntime, Room]:
    """Ada's runtime and #general as a stored room (after Sam spoke there)."""
    rt = s.runtime("Ada")
    await s.fake.user_says(s.sam, s.general, "anyone around?")
    await until(lambda: any("Decide what Ada does" in p for p in s.brain.prompts))
    room = Room(
        discord_id(rt.agent_id, s.general.id),
        source="discord",
        type=ChannelType.GROUP,
        agent_id=rt.agent_id,
        channel_id=str(s.general.id),
        name="general",
    )
    return rt, room


@pytest.mark.parametrize(("tier", "sent_files"), [(0, ["notes.txt"]), (2, ["film.mp4", "notes.txt"])])
async def test_a_file_over_the_servers_upload_limit_is_not_sent_and_the_text_says_so(
    scene, tmp_path: Path, tier: int, sent_files: list[str]
) -> None:
    s = scene
    s.guild.premium_tier = tier  # boosted to tier 2, the server takes 50 MiB
    await s.start(with_brann=False)
    rt, room = await in_general(s, tmp_path)
    film = OutgoingFile.of_bytes(b"\x00" * (12 * MB), "film.mp4")
    notes = OutgoingFile.of_bytes(b"scene 1: a cat", "notes.txt")
    await rt.get_service("discord").send_to_room(
        room, Reply.of_content({"text": "The film and my notes.", "files": [film, notes]})
    )
    (sent,) = await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert [a.filename for a in sent.attachments] == sent_files
    if tier == 0:
        assert sent.content == (
            "The film and my notes.\n\n(I couldn't send film.mp4: it is 12 MB, more than the 10.5 MB Discord takes.)"
        )
    else:
        assert sent.content == "The film and my notes."


async def test_embeds_an_action_gives_go_with_the_message(scene, tmp_path: Path) -> None:
    s = scene
    await s.start(with_brann=False)
    rt, room = await in_general(s, tmp_path)
    content = {
        "text": "Tonight's menu.",
        "files": [OutgoingFile.of_bytes(PICTURE, "menu.png", description="the menu")],
        "embeds": [{"title": "Menu", "image": {"url": "attachment://menu.png"}}],
    }
    await rt.get_service("discord").send_to_room(room, Reply.of_content(content))
    (sent,) = await s.fake.wait_for_sent(s.ada, 1)
    assert [e["title"] for e in sent.embeds] == ["Menu"] and sent.embeds[0]["image"]["url"] == "attachment://menu.png"
    assert [(a.filename, a.description) for a in sent.attachments] == [("menu.png", "the menu")]
