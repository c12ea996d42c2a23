"""A Telegram character's life in chats, end to end: removed from a group (WORLD_LEFT, the relay
stops), added back (WORLD_JOINED), channel posts (ignored unless TELEGRAM_CHANNEL_POSTS) and
stickers (heard as their emoji) — the daemon and python-telegram-bot against the fake Bot API."""

from __future__ import annotations

import asyncio
from typing import TypeVar

import pytest

from bot.kernel.errors import SendError
from bot.kernel.outgoing import Reply
from bot.runtime.events import Event, WorldJoined, WorldLeft
from platforms.telegram._mapping import room_id, world_id

from .scene import Scene, plan, until


async def texts_in(s: Scene, name: str, chat_id: int) -> list[str]:
    rt = s.runtime(name)
    memories = await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, chat_id))
    return [str(m.content.text) for m in memories]


async def until_heard(s: Scene, name: str, chat_id: int, text: str) -> None:
    async with asyncio.timeout(60):
        while text not in await texts_in(s, name, chat_id):
            await asyncio.sleep(0.02)


E = TypeVar("E", bound=Event)


def recorder(s: Scene, name: str, event: type[E]) -> list[E]:
    seen: list[E] = []

    async def record(happened: E) -> None:
        seen.append(happened)

    s.runtime(name).on(event, record)
    return seen


async def test_a_character_removed_from_a_group_leaves_it_and_hears_nothing_more_relayed_there(scene) -> None:
    s = scene
    await s.start()
    rt = s.runtime("Brann")
    left, joined = recorder(s, "Brann", WorldLeft), recorder(s, "Brann", WorldJoined)
    s.brain.plans["Ada"] += [plan("The tide turns at six."), plan("Low tide now."), plan("High tide again.")]
    await s.fake.user_says(s.sam, s.group, "@ada_bot when does the tide turn?")
    await s.fake.wait_for_sent(s.ada, 1)
    await until_heard(s, "Brann", s.group.id, "The tide turns at six.")  # relayed to Brann

    await s.fake.bot_removed(s.group, s.brann, by=s.sam)
    await until(lambda: left)
    assert left[0].world_id == world_id(rt.agent_id, s.group.id)
    assert left[0].world is not None
    assert (left[0].status, left[0].source, left[0].world.name) == ("kicked", "telegram", "Writers' Room")
    room = await rt.store.get_room(room_id(rt.agent_id, s.group.id))
    assert room is not None and room.metadata.left_as == "kicked" and (room.metadata.left_at or 0) > 0
    with pytest.raises(SendError, match="I'm no longer in Writers' Room on Telegram"):
        await rt.get_service("telegram").send_to_room(room, Reply(text="hello?"))

    # Ada still talks there; Brann, gone, is handed none of it.
    await s.fake.user_says(s.sam, s.group, "@ada_bot and now?")
    await s.fake.wait_for_sent(s.ada, 2)
    await asyncio.sleep(0.5)
    assert "Low tide now." not in await texts_in(s, "Brann", s.group.id)
    assert not s.brann.sent

    # Added back: WORLD_JOINED, the room no longer marked, and the relay hands it Ada's words again.
    before = len(joined)  # the first was when Brann first heard of the group
    await s.fake.bot_added(s.group, s.brann, by=s.sam, old="kicked")
    await until(lambda: len(joined) > before)
    assert joined[-1].world.id == world_id(rt.agent_id, s.group.id) and joined[-1].source == "telegram"
    assert [e.names[0] for e in joined[-1].entities] == ["Sam"]  # who added it
    room = await rt.store.get_room(room_id(rt.agent_id, s.group.id))
    assert room is not None and room.metadata.left_at is None
    await s.fake.user_says(s.sam, s.group, "@ada_bot and later?")
    await until_heard(s, "Brann", s.group.id, "High tide again.")

    # Removed and added again, with Telegram's "Sam added Brann" and a message from the group
    # handled alongside: whichever writes the group first, WORLD_JOINED comes.
    await s.fake.bot_removed(s.group, s.brann, by=s.sam)
    await until(lambda: len(left) == 2)
    before = len(joined)
    await s.fake.bot_added(s.group, s.brann, by=s.sam, old="kicked", announce=True)
    await s.fake.user_says(s.sam, s.group, "welcome back, Brann")
    await until(lambda: len(joined) > before)


async def test_a_channel_post_is_ignored_by_default(scene) -> None:
    s = scene
    news = s.fake.add_channel("Harbour News", members=[s.sam, s.ada])
    await s.start(with_brann=False)
    await s.fake.wait_polling(s.ada)
    await s.fake.channel_posts(news, "Ada, the harbour opens at dawn.")
    await asyncio.sleep(0.5)
    assert s.ada.sent == [] and await texts_in(s, "Ada", news.id) == []
    assert "channel_post" not in (s.ada.allowed_updates or [])  # not even fetched


async def test_a_channel_post_is_answered_in_the_channel_when_telegram_channel_posts_is_on(scene) -> None:
    s = scene
    news = s.fake.add_channel("Harbour News", members=[s.sam, s.ada])
    await s.start({"TELEGRAM_CHANNEL_POSTS": "true"}, with_brann=False)
    s.brain.plans["Ada"].append(plan("Good news for the fleet."))
    await s.fake.wait_polling(s.ada)
    post = await s.fake.channel_posts(news, "Ada, the harbour opens at dawn.")
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert (sent[0]["chat_id"], sent[0]["text"], sent[0]["reply_to"]) == (
        news.id,
        "Good news for the fleet.",
        post["message_id"],
    )
    rt = s.runtime("Ada")
    stored = next(
        m
        for m in await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, news.id))
        if m.content.text == "Ada, the harbour opens at dawn."
    )
    assert stored.metadata.entity_name == "Harbour News" and stored.content.channel_type == "FEED"


@pytest.mark.parametrize("brann_posts", ["false", "true"])
async def test_what_another_character_says_in_a_channel_is_relayed_only_to_one_with_channel_posts(
    scene, brann_posts: str
) -> None:
    s = scene
    news = s.fake.add_channel("Harbour News", members=[s.sam, s.ada, s.brann])
    await s.start({"TELEGRAM_CHANNEL_POSTS": "true"}, brann_settings={"TELEGRAM_CHANNEL_POSTS": brann_posts})
    s.brain.plans["Ada"].append(plan("Good news for the fleet."))
    await s.fake.wait_polling(s.ada)
    await s.fake.channel_posts(news, "Ada, the harbour opens at dawn.")
    await s.fake.wait_for_sent(s.ada, 1)
    if brann_posts == "true":
        await until_heard(s, "Brann", news.id, "Good news for the fleet.")
        return
    await asyncio.sleep(0.5)
    assert await texts_in(s, "Brann", news.id) == []


@pytest.mark.parametrize("form", ["static", "animated", "video"])
async def test_a_sticker_reaches_the_model_as_its_emoji(scene, form: str) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Glad you like it!"))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), sticker=("😀", form))
    await s.fake.wait_for_sent(s.ada, 1)
    prompt = next(p for p in s.brain.prompts if "Write the next turn of Ada" in p)
    assert "[sticker 😀]" in prompt


async def test_a_sticker_without_an_emoji_is_still_heard(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), sticker=(None, "static"))
    await until_heard(s, "Ada", s.sam.id, "[sticker]")
