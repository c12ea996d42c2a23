"""End to end on Discord: servers and people, reactions, edits and deletions, attachments,
threads, the listening settings, SEND_MESSAGE, and a reply Discord refuses."""

from __future__ import annotations

import asyncio
import logging

from bot.kernel.record_metadata import Ownership, Role
from bot.kernel.types import ChannelType
from bot.runtime.events import WorldJoined
from platforms.discord._mapping import discord_id

from .scene import CHAT_EXAMPLE, CHAT_STYLE, POST_EXAMPLE, POST_STYLE, Scene, plan, until


async def messages(s: Scene, name: str, channel) -> list[str]:
    rt = s.runtime(name)
    stored = await rt.store.get_memories(table="messages", room_id=discord_id(rt.agent_id, channel.id))
    return [str(m.content.text) for m in reversed(stored)]


async def test_the_server_becomes_a_world_with_rooms_and_roles(scene) -> None:
    s = scene
    dee = s.fake.add_user("dee")
    await s.fake.member_joins(s.guild, dee)
    s.fake.add_role(s.guild, "Mods", permissions=8, members=[dee])  # Administrator
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    world = await rt.store.get_world(discord_id(rt.agent_id, s.guild.id))
    assert world.name == "Writers" and world.server_id == str(s.guild.id)
    assert world.metadata.ownership == Ownership(owner_id=discord_id(rt.agent_id, s.sam.id))
    roles = world.metadata.roles or {}
    assert roles[discord_id(rt.agent_id, s.sam.id)] is Role.OWNER
    assert roles[discord_id(rt.agent_id, dee.id)] is Role.ADMIN
    rooms = {r.name: r.type for r in await rt.store.get_rooms_by_world(world.id)}
    assert rooms["general"] is ChannelType.GROUP and rooms["lounge"] is ChannelType.GROUP


async def test_people_joining_and_leaving(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    newcomer = s.fake.add_user("nia")
    await s.fake.member_joins(s.guild, newcomer)
    rt = s.runtime("Ada")
    entity_id = discord_id(rt.agent_id, newcomer.id)
    async with asyncio.timeout(60):
        while (entity := await rt.store.get_entity(entity_id)) is None:
            await asyncio.sleep(0.01)
    assert entity.names == ["nia"]
    await s.fake.member_leaves(s.guild, newcomer)
    async with asyncio.timeout(60):
        while (await rt.store.get_entity(entity_id)).metadata.status != "INACTIVE":
            await asyncio.sleep(0.01)


async def test_reactions_edits_and_deletions_reach_memory(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("The ending is strong."))
    asked = await s.fake.user_says(s.sam, s.general, "Ada, how's the ending?")
    reply = (await s.fake.wait_for_sent(s.ada, 1))[0]
    await s.fake.user_reacts(s.sam, reply, "👍")
    await s.fake.user_edits(asked, "Ada, how's the new ending?")
    async with asyncio.timeout(60):
        while not {'*reacted 👍 to: "The ending is strong."*', "Ada, how's the new ending?"} <= set(
            await messages(s, "Ada", s.general)
        ):
            await asyncio.sleep(0.01)
    await s.fake.user_deletes(asked)
    async with asyncio.timeout(60):
        while "Ada, how's the new ending?" in await messages(s, "Ada", s.general):
            await asyncio.sleep(0.01)
    assert len(s.ada.sent) == 1  # reactions and edits are remembered, not answered


async def test_attachments_are_read_before_the_answer(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Nice cat, and noted."))
    await s.fake.user_says(
        s.sam,
        s.general,
        "Ada, look at these",
        attachments=[
            ("cat.png", b"\x89PNG\r\n\x1a\nfake", "image/png"),
            ("notes.txt", b"Chapter 3 needs a twist.", "text/plain"),
            ("memo.ogg", b"OggS-voice", "audio/ogg"),
        ],
    )
    await s.fake.wait_for_sent(s.ada, 1)
    rt = s.runtime("Ada")
    stored = (await rt.store.get_memories(table="messages", room_id=discord_id(rt.agent_id, s.general.id)))[-1]
    planning = next(p for p in s.brain.prompts if "Write the next turn of Ada" in p)
    for seen in ("A ginger cat asleep on a keyboard.", "Chapter 3 needs a twist.", "transcript of memo.ogg"):
        assert seen in planning  # the model can talk about what was attached
    by_title = {a.title: a for a in stored.content.attachments or ()}
    assert by_title["cat.png"].description == "A ginger cat asleep on a keyboard."
    assert by_title["notes.txt"].text == "Chapter 3 needs a twist."
    assert by_title["memo.ogg"].text == "transcript of memo.ogg (10 bytes)"


async def test_threads_follow_their_parent_in_channel_ids(scene) -> None:
    s = scene
    thread = s.fake.add_thread(s.lounge, "plot holes", members=[s.ada])
    await s.start({"CHANNEL_IDS": str(s.lounge.id)}, with_brann=False)
    s.brain.plans["Ada"].append(plan("In the thread."))
    await s.fake.user_says(s.sam, thread, "Ada, thoughts?")
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert sent[0].channel is thread
    rt = s.runtime("Ada")
    room = await rt.store.get_room(discord_id(rt.agent_id, thread.id))
    assert room.type is ChannelType.THREAD and room.metadata.parent_channel_id == str(s.lounge.id)


def assert_chat_format(prompt: str) -> None:
    """The character's chat style and example conversations, none of its post format."""
    assert CHAT_STYLE in prompt and CHAT_EXAMPLE in prompt
    assert POST_STYLE not in prompt and POST_EXAMPLE not in prompt and "Post Directions" not in prompt


async def test_threads_and_forum_posts_are_conversations_in_the_chat_format(scene) -> None:
    s = scene
    forum = s.fake.add_channel(s.guild, "ideas", type="forum")
    thread = s.fake.add_thread(s.lounge, "plot holes", members=[s.ada])
    await s.start(with_brann=False)
    post = s.fake.add_thread(forum, "A sequel?", members=[s.ada], content="Should there be a sequel?")
    s.brain.plans["Ada"] += [plan("In the thread."), plan("In the forum post.")]
    await s.fake.user_says(s.sam, thread, "Ada, thoughts?")
    await s.fake.wait_for_sent(s.ada, 1)
    await s.fake.user_says(s.sam, post, "Ada, what do you say?")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    assert [m.channel for m in sent] == [thread, post]
    turns = [p for p in s.brain.prompts if "Write the next turn of Ada" in p]
    assert len(turns) == 2
    for prompt in turns:
        assert_chat_format(prompt)


async def test_listening_settings(scene) -> None:
    s = scene
    await s.start(
        {
            "DISCORD_SHOULD_IGNORE_BOT_MESSAGES": "true",
            "DISCORD_SHOULD_RESPOND_ONLY_TO_MENTIONS": "true",
            "DISCORD_SHOULD_IGNORE_DIRECT_MESSAGES": "true",
        }
    )
    s.brain.plans["Brann"].append(plan("Ada, ahoy!"))
    s.brain.plans["Ada"].append(plan("Only for mentions."))
    await s.fake.user_says(s.sam, s.general, "Brann, greet Ada")  # Brann answers; Ada ignores bots
    await s.fake.wait_for_sent(s.brann, 1)
    await s.fake.user_says(s.sam, s.general, "Ada, named but not mentioned")
    await s.fake.dm(s.sam, s.ada, "a DM")
    await asyncio.sleep(0.3)
    assert s.ada.sent == []
    await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} now?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0].content == "Only for mentions."


async def test_send_message_to_another_channel(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Will do.", "REPLY,SEND_MESSAGE"))
    s.brain.targets = [
        "<response><targetType>room</targetType><target>lounge</target><source>discord</source>"
        "<message>Meeting moved to 3pm.</message></response>"
    ]
    await s.fake.user_says(s.sam, s.general, "Ada, tell #lounge the meeting moved to 3pm")
    sent = await s.fake.wait_for_sent(s.ada, 3)
    assert [(m.channel.name, m.content) for m in sent] == [
        ("general", "Will do."),
        ("lounge", "Meeting moved to 3pm."),
        ("general", "Message sent to #lounge on discord."),
    ]
    assert await messages(s, "Ada", s.lounge) == ["Meeting moved to 3pm."]


async def test_a_reply_discord_refuses_is_logged_with_agent_and_channel(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    s.fake.fail_next(
        "POST", r"/channels/\d+/messages$", status=403, code=50013, message="Missing Permissions", bot=s.ada
    )
    s.brain.plans["Ada"].append(plan("You won't see this."))
    with caplog.at_level(logging.ERROR):
        asked = await s.fake.user_says(s.sam, s.general, "Ada?")
        await until(lambda: "could not send a reply" in caplog.text)
    assert (
        f"Ada: could not send a reply in #general (channel {s.general.id}) to message {asked.id}, \"You won't "
        'see this.": 403 Missing Permissions'
    ) in caplog.text


async def test_world_events_when_connecting_and_when_invited_to_a_new_server(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    seen: list[tuple[str, str]] = []

    async def record(event: WorldJoined) -> None:
        seen.append((event.world.name, event.source))

    rt.on(WorldJoined, record)
    other = s.fake.add_guild("Second Stage", owner=s.cleo, members=[s.ada])
    s.fake.add_channel(other, "backstage")
    await until(lambda: seen)
    assert seen == [("Second Stage", "discord")]
    world = await rt.store.get_world(discord_id(rt.agent_id, other.id))
    assert world.metadata.roles == {discord_id(rt.agent_id, s.cleo.id): Role.OWNER}
