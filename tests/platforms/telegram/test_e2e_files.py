"""End to end on Telegram: pictures and files going out. "Draw me a cat" brings one photo with its
caption; a picture too big for a photo goes as a document; a file too big for Telegram is named in
the text instead; a caption too long goes as its own message first; several pictures go as one
album. What went out is remembered with what it carried."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.kernel.outgoing import OutgoingFile, Reply
from bot.kernel.types import ChannelType, Room
from bot.runtime.agent import AgentRuntime
from platforms.telegram._mapping import room_id

from ...fakes.openai_server import make_png
from .scene import drawing, until

DRAWS = {"IMAGE_MODEL": "dall-e-3"}
PICTURE = make_png(4, 4)


async def test_draw_me_a_cat_brings_one_photo_with_its_caption_remembered_with_what_it_carried(scene) -> None:
    s = scene
    assert s.openai is not None
    await s.start(DRAWS, with_brann=False)
    s.openai.script_images(PICTURE)
    s.brain.plans["Ada"].append(drawing("Here's your cat!"))
    chat = s.fake.private(s.sam, s.ada)
    asked = await s.fake.user_says(s.sam, chat, "draw me a cat")
    (photo,) = await s.fake.wait_for_sent(s.ada, 1)
    assert photo["kind"] == "photo" and photo["text"] == "Here's your cat!"
    assert photo["photo"] == PICTURE and photo["filename"] == "image-1.png"
    assert photo["reply_to"] == asked["message_id"]
    (request,) = s.openai.requests_for("images")  # one image call
    assert request.json["prompt"] == "a ginger cat asleep on a keyboard"
    rt = s.runtime("Ada")

    async def stored() -> list:
        memories = await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, chat.id))
        return [m for m in memories if m.entity_id == rt.agent_id]

    for _ in range(100):
        if await stored():
            break
        await asyncio.sleep(0.02)
    (said,) = await stored()
    assert said.content.text == "Here's your cat!" and "files" not in said.content.to_json()
    assert said.content.attachments is not None
    (carried,) = said.content.attachments
    assert carried.content_type == "image/jpeg" and carried.size == len(PICTURE)
    assert carried.id == photo["message"]["photo"][0]["file_id"]
    await asyncio.sleep(0.2)
    assert len(s.ada.sent) == 1  # the picture once, and no separate text


async def test_without_an_image_model_the_character_says_it_cannot_draw(scene) -> None:
    s = scene
    assert s.openai is not None
    await s.start(with_brann=False)  # the fake server is no OpenAI and no image model is named
    s.brain.plans["Ada"].append(drawing("Here's your cat!"))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "draw me a cat")
    (sent,) = await s.fake.wait_for_sent(s.ada, 1)
    assert sent["kind"] == "text" and sent["text"] == "I can't draw pictures here: no image model is set up for me."
    assert s.openai.requests_for("images") == []


async def test_a_picture_too_big_for_a_photo_goes_as_a_document(scene) -> None:
    s = scene
    assert s.openai is not None
    await s.start(DRAWS, with_brann=False)
    big = make_png(2, 2, padding=11 * 1000 * 1000)
    s.openai.script_images(big)
    s.brain.plans["Ada"].append(drawing("A big one."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "draw me a big cat")
    (sent,) = await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert sent["kind"] == "document" and sent["text"] == "A big one." and sent["size"] == len(big)
    assert [method for method, _ in s.ada.requests].count("sendPhoto") == 0  # checked before sending


async def test_a_caption_over_1024_characters_goes_as_text_first_then_the_photo(scene) -> None:
    s = scene
    assert s.openai is not None
    await s.start(DRAWS, with_brann=False)
    s.openai.script_images(PICTURE)
    long = "A cat, described at length. " * 50  # 1400 characters
    s.brain.plans["Ada"].append(drawing(long))
    asked = await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "draw me a cat and tell me all about it")
    text, photo = await s.fake.wait_for_sent(s.ada, 2)
    assert text["kind"] == "text" and text["text"] == long.strip() and text["reply_to"] == asked["message_id"]
    # The photo's caption is what the model says it drew.
    assert photo["kind"] == "photo" and photo["text"] == "drawn: a ginger cat asleep on a keyboard"
    assert photo["reply_to"] is None


async def test_a_caption_of_600_emoji_is_over_1024_units_and_goes_as_text_first(scene) -> None:
    # 600 emoji are 1,200 UTF-16 code units: Telegram counts its 1,024 for captions in those.
    s = scene
    assert s.openai is not None
    await s.start(DRAWS, with_brann=False)
    s.openai.script_images(PICTURE)
    long = "🐱" * 600
    s.brain.plans["Ada"].append(drawing(long))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "draw me a cat, in emoji")
    text, photo = await s.fake.wait_for_sent(s.ada, 2)
    assert text["kind"] == "text" and text["text"] == long
    assert photo["kind"] == "photo" and photo["text"] == "drawn: a ginger cat asleep on a keyboard"


async def test_a_caption_telegram_still_finds_too_long_goes_as_text_first(scene) -> None:
    s = scene
    assert s.openai is not None
    await s.start(DRAWS, with_brann=False)
    s.openai.script_images(PICTURE)
    refusal = "Bad Request: message caption is too long"
    s.fake.fail_next("sendPhoto", status=400, retry_after=None, description=refusal, bot=s.ada)
    s.brain.plans["Ada"].append(drawing("Here's your cat!"))
    asked = await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "draw me a cat")
    text, photo = await s.fake.wait_for_sent(s.ada, 2)
    assert text["kind"] == "text" and text["text"] == "Here's your cat!" and text["reply_to"] == asked["message_id"]
    assert photo["kind"] == "photo" and photo["text"] == "drawn: a ginger cat asleep on a keyboard"


async def in_the_group(s) -> tuple[AgentRuntime, Room]:
    """Ada's runtime and the group as a stored room (after Sam spoke there)."""
    rt = s.runtime("Ada")
    await s.fake.user_says(s.sam, s.group, "anyone around?")
    await until(lambda: any("Decide what Ada does" in p for p in s.brain.prompts))
    room = Room(
        room_id(rt.agent_id, s.group.id),
        source="telegram",
        type=ChannelType.GROUP,
        agent_id=rt.agent_id,
        channel_id=str(s.group.id),
    )
    return rt, room


async def test_a_picture_telegram_refuses_as_a_photo_goes_again_as_a_document(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt, room = await in_the_group(s)
    odd = OutgoingFile.of_bytes(b"not really a png", "odd.png", "image/png")
    await rt.get_service("telegram").send_to_room(room, Reply.of_content({"text": "An odd one.", "files": [odd]}))
    (sent,) = await s.fake.wait_for_sent(s.ada, 1)
    assert sent["kind"] == "document" and sent["filename"] == "odd.png" and sent["text"] == "An odd one."
    uploads = [method for method, _ in s.ada.requests if method in ("sendMessage", "sendPhoto", "sendDocument")]
    assert uploads == ["sendPhoto", "sendDocument"]


async def test_a_file_too_big_for_telegram_is_not_sent_and_the_text_says_so(scene, tmp_path: Path) -> None:
    s = scene
    await s.start(with_brann=False)
    film = tmp_path / "film.mp4"
    with film.open("wb") as handle:
        handle.truncate(60 * 1000 * 1000)  # sparse: nothing is read
    notes = OutgoingFile.of_bytes(b"scene 1: a cat", "notes.txt")
    rt, room = await in_the_group(s)
    content = {"text": "The film and my notes.", "files": [OutgoingFile.of_path(film), notes]}
    await rt.get_service("telegram").send_to_room(room, Reply.of_content(content))
    (sent,) = await s.fake.wait_for_sent(s.ada, 1)
    assert sent["kind"] == "document" and sent["filename"] == "notes.txt" and sent["document"] == b"scene 1: a cat"
    assert sent["text"] == (
        "The film and my notes.\n\n(I couldn't send film.mp4: it is 60 MB, more than the 50 MB Telegram takes.)"
    )
    memories = await rt.store.get_memories(table="messages", room_id=room.id)
    (said,) = [m for m in memories if m.entity_id == rt.agent_id and m.content.text]
    assert said.content.attachments is not None and said.content.attachments[0].title == "notes.txt"


async def test_the_other_characters_in_a_group_hear_a_pictures_caption(scene) -> None:
    s = scene
    assert s.openai is not None
    await s.start(DRAWS)
    s.openai.script_images(PICTURE)
    s.brain.plans["Ada"].append(drawing("A cat for the room, Brann."))
    await s.fake.user_says(s.sam, s.group, "@ada_bot draw us a cat")
    (photo,) = await s.fake.wait_for_sent(s.ada, 1)
    assert photo["kind"] == "photo"
    await until(lambda: any("Brann" in p and "A cat for the room, Brann." in p for p in s.brain.prompts))


async def test_several_pictures_go_as_one_album_with_the_text_as_its_caption(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt, room = await in_the_group(s)
    pictures = [OutgoingFile.of_bytes(make_png(4 + i, 4), f"cat-{i}.png", description=f"cat {i}") for i in range(3)]
    notes = OutgoingFile.of_bytes(b"three cats", "notes.txt")
    await rt.get_service("telegram").send_to_room(
        room, Reply.of_content({"text": "Three *cats*.", "files": [*pictures, notes]})
    )
    sent = await s.fake.wait_for_sent(s.ada, 4)
    assert [m["kind"] for m in sent] == ["photo", "photo", "photo", "document"]
    assert len({m["album"] for m in sent[:3]}) == 1  # one sendMediaGroup
    assert [m["text"] for m in sent] == ["Three cats.", "cat 1", "cat 2", ""]  # the album's caption is the text
    assert [m["filename"] for m in sent[:3]] == ["cat-0.png", "cat-1.png", "cat-2.png"]
    assert sent[0]["photo"] == make_png(4, 4) and sent[3]["document"] == b"three cats"
    uploads = [method for method, _ in s.ada.requests if method.startswith("send") and method != "sendChatAction"]
    assert uploads == ["sendMediaGroup", "sendDocument"]
    memories = await rt.store.get_memories(table="messages", room_id=room.id)
    said = [m for m in memories if m.entity_id == rt.agent_id]
    carried = sorted(a.title or "" for m in said for a in m.content.attachments or ())
    assert carried == ["notes.txt", "photo.jpg", "photo.jpg", "photo.jpg"]  # each message as Telegram shows it


async def test_more_than_ten_pictures_go_as_albums_of_ten_and_one_alone_as_a_photo(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt, room = await in_the_group(s)
    pictures = [OutgoingFile.of_bytes(make_png(4, 4 + i), f"p{i}.png") for i in range(11)]
    await rt.get_service("telegram").send_to_room(room, Reply.of_content({"text": "Eleven.", "files": pictures}))
    sent = await s.fake.wait_for_sent(s.ada, 11)
    assert [m.get("album") is not None for m in sent] == [True] * 10 + [False]
    assert sent[0]["text"] == "Eleven." and [m["filename"] for m in sent] == [f"p{i}.png" for i in range(11)]


async def two_pictures_after_a_refused_album(s, refusal: str, text: str) -> list[dict]:
    """What Ada sends the group for ``text`` with two pictures when Telegram refuses the first
    album with ``refusal``."""
    await s.start(with_brann=False)
    rt, room = await in_the_group(s)
    s.fake.fail_next("sendMediaGroup", status=400, description=refusal, bot=s.ada)
    pictures = [OutgoingFile.of_bytes(make_png(4, 4), f"p{i}.png") for i in range(2)]
    await rt.get_service("telegram").send_to_room(room, Reply.of_content({"text": text, "files": pictures}))
    return await s.fake.wait_for_sent(s.ada, 2)


async def test_an_album_telegram_refuses_goes_one_picture_at_a_time(scene) -> None:
    sent = await two_pictures_after_a_refused_album(scene, "Bad Request: MEDIA_EMPTY", "Two.")
    assert [(m["kind"], m["text"], m.get("album")) for m in sent] == [("photo", "Two.", None), ("photo", "", None)]


async def test_an_album_caption_telegram_cannot_parse_goes_again_as_plain_text_in_one_album(scene) -> None:
    refusal = "Bad Request: can't parse entities: odd"
    sent = await two_pictures_after_a_refused_album(scene, refusal, "Two (fine) ones.")
    assert sent[0]["raw"] == "Two (fine) ones." and sent[0]["parse_mode"] is None
    assert sent[0]["album"] == sent[1]["album"]
