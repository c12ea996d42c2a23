"""End to end on Telegram, what may go wrong on the way out or in: long flood control, text a
platform cannot encode. Nothing is lost silently, nothing crashes."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.kernel.errors import SendError
from bot.kernel.outgoing import Reply
from bot.kernel.types import ChannelType, Room
from platforms.telegram._mapping import room_id

from .scene import plan, until


async def test_flood_control_several_times_in_a_row_is_waited_out_within_the_deadline(scene) -> None:
    s = scene
    await s.start({"TELEGRAM_SEND_DEADLINE_S": "10"}, with_brann=False)
    s.fake.fail_next("sendMessage", status=429, retry_after=1, bot=s.ada, times=4)  # more tries than were counted
    s.brain.plans["Ada"].append(plan("Eventually."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "hello?")
    assert (await s.fake.wait_for_sent(s.ada, 1, timeout=60))[0]["text"] == "Eventually."


async def test_a_flood_wait_past_the_deadline_logs_the_lost_reply_with_its_chat_and_message(scene, caplog) -> None:
    s = scene
    await s.start({"TELEGRAM_SEND_DEADLINE_S": "2"}, with_brann=False)
    s.fake.fail_next("sendMessage", status=429, retry_after=5, bot=s.ada)
    s.brain.plans["Ada"].append(plan("This reply will never arrive at all, sadly."))
    chat = s.fake.private(s.sam, s.ada)
    with caplog.at_level(logging.ERROR):
        asked = await s.fake.user_says(s.sam, chat, "hello?")
        await until(lambda: "could not send a reply" in caplog.text, timeout=60)
    line = next(r.getMessage() for r in caplog.records if "could not send a reply" in r.getMessage())
    assert f"chat {chat.id}" in line and f"to message {asked['message_id']}" in line
    assert '"This reply will never arrive at…"' in line and "flood control" in line and "2 s" in line
    assert s.ada.sent == []
    rt = s.runtime("Ada")
    stored = await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, chat.id))
    assert [m.entity_id for m in stored] != [] and rt.agent_id not in [m.entity_id for m in stored]  # nothing sent


async def test_a_reply_with_a_lone_surrogate_arrives_with_a_replacement_character(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Broken \ud800 but here."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "hello?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0]["text"] == "Broken \ufffd but here."
    assert [method for method, _ in s.ada.requests].count("sendMessage") == 1  # not retried as a network error


async def test_a_message_with_a_lone_surrogate_is_answered_and_stored_repaired(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Got it."))
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_says(s.sam, chat, "odd \udc00 text")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0]["text"] == "Got it."
    rt = s.runtime("Ada")
    stored = await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, chat.id))
    assert "odd \ufffd text" in [m.content.text for m in stored]
    assert any("odd \ufffd text" in p for p in s.brain.prompts)


async def test_a_start_answer_that_cannot_be_sent_is_logged_as_lost_not_as_a_crash(scene, caplog) -> None:
    s = scene
    await s.start({"TELEGRAM_SEND_DEADLINE_S": "1"}, with_brann=False)
    s.fake.fail_next("sendMessage", status=429, retry_after=5, bot=s.ada)
    chat = s.fake.private(s.sam, s.ada)
    with caplog.at_level(logging.ERROR):
        asked = await s.fake.user_says(s.sam, chat, "/start")
        await until(lambda: "could not send a reply" in caplog.text, timeout=60)
    assert f'(chat {chat.id}) to message {asked["message_id"]}, "Hi, I\'m Ada. Ada is a…"' in caplog.text
    assert "failed to handle a Telegram update" not in caplog.text and s.ada.sent == []


async def test_a_long_reply_stopped_part_way_keeps_what_went_out_and_logs_the_rest_lost(scene, caplog) -> None:
    s = scene
    await s.start({"TELEGRAM_SEND_DEADLINE_S": "1"}, with_brann=False)
    s.fake.fail_next("sendMessage", status=429, retry_after=5, bot=s.ada, after=1)  # the second part meets it
    long = "\n".join(f"Point {i}: keep going." for i in range(230))
    s.brain.plans["Ada"].append(plan(long))
    chat = s.fake.private(s.sam, s.ada)
    with caplog.at_level(logging.ERROR):
        await s.fake.user_says(s.sam, chat, "give me everything")
        await until(lambda: "could not send a reply" in caplog.text, timeout=60)
    assert "only 1 of 2 parts went out: Telegram's flood control asked to wait 5 s" in caplog.text
    assert len(s.ada.sent) == 1
    rt = s.runtime("Ada")
    room = room_id(rt.agent_id, chat.id)

    async def remembered() -> list[str]:
        return [
            m.content.text
            for m in await rt.store.get_memories(table="messages", room_id=room)
            if m.entity_id == rt.agent_id and m.content.text
        ]

    async with asyncio.timeout(60):
        while await remembered() != [s.ada.sent[0]["text"]]:
            await asyncio.sleep(0.02)


async def test_a_message_sent_unasked_and_stopped_part_way_is_an_error_that_keeps_what_went_out(scene) -> None:
    s = scene
    await s.start({"TELEGRAM_SEND_DEADLINE_S": "1"}, with_brann=False)
    await s.fake.user_says(s.sam, s.group, "hello all")  # the group becomes known; Ada lets it be
    await until(lambda: any("Decide what Ada does" in p for p in s.brain.prompts))
    rt = s.runtime("Ada")
    room = Room(
        room_id(rt.agent_id, s.group.id),
        source="telegram",
        type=ChannelType.GROUP,
        agent_id=rt.agent_id,
        channel_id=str(s.group.id),
    )
    s.fake.fail_next("sendMessage", status=429, retry_after=5, bot=s.ada, after=1)
    long = "\n".join(f"Point {i}: keep going." for i in range(230))
    with pytest.raises(SendError, match="only the beginning of the message went out; Telegram did not take the rest"):
        await rt.get_service("telegram").send_to_room(room, Reply(text=long))
    stored = await rt.store.get_memories(table="messages", room_id=room.id)
    said = [m.content.text for m in stored if m.entity_id == rt.agent_id and m.content.text]
    assert said == [s.ada.sent[0]["text"]]
    assert len(s.ada.sent) == 1


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


async def test_a_reply_of_3000_emoji_arrives_whole_in_several_messages(scene) -> None:
    # 3,000 emoji are 6,000 UTF-16 code units: Telegram's 4,096 is counted in those.
    s = scene
    await s.start(with_brann=False)
    reply = "😀" * 3000
    s.brain.plans["Ada"].append(plan(reply))
    asked = await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "emoji, please")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    await until(lambda: "".join(m["text"] for m in s.ada.sent) == reply, timeout=10)
    assert all(utf16_units(m["raw"]) <= 4096 for m in s.ada.sent)
    assert sent[0]["reply_to"] == asked["message_id"]
    assert "\ufffd" not in "".join(m["text"] for m in s.ada.sent)  # no surrogate pair cut in half


async def test_a_part_telegram_still_finds_too_long_goes_as_smaller_parts(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    s.fake.fail_next(
        "sendMessage", status=400, retry_after=None, description="Bad Request: message is too long", bot=s.ada
    )
    reply = "Every word of this reply arrives, in smaller parts. " * 20
    s.brain.plans["Ada"].append(plan(reply))
    with caplog.at_level(logging.WARNING):
        await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "tell me everything")
        await until(lambda: " ".join(m["text"] for m in s.ada.sent).split() == reply.split(), timeout=10)
    assert len(s.ada.sent) >= 2
    assert "too long" in caplog.text and "smaller parts" in caplog.text
