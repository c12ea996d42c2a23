"""A full disk (or a database locked by another process) loses no Telegram message: an update
is confirmed to Telegram only once it is kept, so Telegram keeps the rest while the store cannot
write; once it writes again, every message is stored and handled once, and each chat's last
message is answered."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from bot.store import StoreState
from platforms.telegram._mapping import message_id, room_id

from ...store_faults import DISK_FULL, LOCKED, StoreFault
from .scene import plan, until


@pytest.mark.parametrize(("error", "state"), [(DISK_FULL, StoreState.DISK_FULL), (LOCKED, StoreState.LOCKED)])
async def test_while_the_store_cannot_write_telegram_keeps_the_updates_and_each_is_handled_once_after(
    scene, monkeypatch, caplog, error: str, state: StoreState
) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    fault = StoreFault(monkeypatch, error)
    chats = {user.first_name: s.fake.private(user, s.ada) for user in (s.sam, s.cleo)}
    said: dict[str, list[int]] = {name: [] for name in chats}
    caplog.set_level(logging.INFO)

    fault.failing = True
    for n in range(4):
        for user in (s.sam, s.cleo):
            sent = await s.fake.user_says(user, chats[user.first_name], f"message {n} from {user.first_name}")
            said[user.first_name].append(sent["message_id"])
    await until(lambda: fault.refused >= 3, timeout=10)
    # Not one update confirmed: the first is held, and Telegram keeps the other seven.
    assert len(s.ada.updates) == 8
    assert s.ada.sent == []
    assert rt.store.health.state is state

    fault.failing = False
    await until(lambda: {m["chat_id"] for m in s.ada.sent} == {c.id for c in chats.values()}, timeout=15)
    await until(lambda: not s.ada.updates, timeout=10)  # all confirmed now
    async with asyncio.timeout(10):
        while await rt.store.inbox_pending("telegram"):
            await asyncio.sleep(0.02)
    for name, chat in chats.items():
        for n in said[name]:
            assert await rt.store.get_memory(message_id(rt.agent_id, chat.id, n)) is not None, (name, n)
        answered = [m["reply_to"] for m in s.ada.sent if m["chat_id"] == chat.id]
        assert said[name][-1] in answered, (name, answered)  # the last one is answered
        assert len(answered) == len(set(answered))  # and none twice
    assert rt.store.health.writable
    store_lines = [r for r in caplog.records if r.name == "bot.store" and r.levelno >= logging.INFO]
    assert [(r.levelno, "cannot be written" in r.getMessage()) for r in store_lines] == [
        (logging.ERROR, True),
        (logging.INFO, False),
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name != "bot.store"]


async def test_a_reply_ready_while_the_disk_fills_waits_for_it_then_goes_out_once_and_is_kept(
    scene, monkeypatch
) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    fault = StoreFault(monkeypatch, DISK_FULL)
    assert s.openai is not None

    def answer(body: dict[str, Any]) -> str:
        reply = s.brain.answer(body)
        if "Write the next turn of Ada" in s.brain.prompts[-1]:
            fault.failing = True  # the disk fills while she thinks: her reply cannot be recorded
        return reply

    s.openai.script_chat(answer)
    s.brain.plans["Ada"].append(plan("Here I am."))
    chat = s.fake.private(s.sam, s.ada)
    asked = await s.fake.user_says(s.sam, chat, "Ada, are you there?")
    await until(lambda: fault.refused >= 3, timeout=10)
    assert s.ada.sent == []  # not sent before it is recorded as going out
    fault.failing = False
    sent = await s.fake.wait_for_sent(s.ada, 1, timeout=15)
    assert [(m["text"], m["reply_to"]) for m in sent] == [("Here I am.", asked["message_id"])]
    memory_id = message_id(rt.agent_id, chat.id, asked["message_id"])
    async with asyncio.timeout(10):
        while (claim := await rt.store.get_message_handling(memory_id)) is None or claim.outcome != "replied":
            await asyncio.sleep(0.02)
    said = await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, chat.id))
    assert [m.content.text for m in reversed(said)] == ["Ada, are you there?", "Here I am."]  # her reply is kept
    assert len(s.ada.sent) == 1


async def test_an_update_kept_just_before_the_disk_filled_is_handled_once_it_writes_again(
    scene, monkeypatch, caplog
) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    fault = StoreFault(monkeypatch, DISK_FULL)
    keep = type(rt.store).inbox_put
    filled: list[str] = []

    async def kept_then_full(store: Any, source: str, event_id: str, payload: str) -> None:
        await keep(store, source, event_id, payload)
        if not filled:
            filled.append(event_id)
            fault.failing = True  # in the inbox; then the disk fills before the chat is written

    monkeypatch.setattr(type(rt.store), "inbox_put", kept_then_full)
    s.brain.plans["Ada"].append(plan("Still here."))
    chat = s.fake.private(s.sam, s.ada)  # a chat never seen: the handler writes it first
    asked = await s.fake.user_says(s.sam, chat, "Ada?")
    await until(lambda: filled and fault.refused >= 3, timeout=10)
    assert await rt.store.inbox_pending("telegram")  # kept, not dealt with
    fault.failing = False
    sent = await s.fake.wait_for_sent(s.ada, 1, timeout=15)
    assert [(m["text"], m["reply_to"]) for m in sent] == [("Still here.", asked["message_id"])]
    async with asyncio.timeout(10):
        while await rt.store.inbox_pending("telegram"):
            await asyncio.sleep(0.02)
    assert len(s.ada.sent) == 1
    assert "failed to handle a Telegram update" not in caplog.text


async def test_stopping_while_the_disk_is_full_loses_nothing_telegram_keeps_it_for_the_next_start(
    scene, monkeypatch
) -> None:
    s = scene
    await s.start(with_brann=False)
    fault = StoreFault(monkeypatch, DISK_FULL)
    chat = s.fake.private(s.sam, s.ada)
    fault.failing = True
    asked = [await s.fake.user_says(s.sam, chat, f"Ada, {n}?") for n in range(3)]
    await until(lambda: fault.refused >= 3, timeout=10)
    assert s.daemon is not None and s.task is not None
    s.daemon.stop()  # the held update's wait is cancelled; nothing was confirmed
    assert await asyncio.wait_for(s.task, 15) == 0
    assert [u["message"]["message_id"] for u in s.ada.updates] == [m["message_id"] for m in asked]
    fault.failing = False
    s.brain.plans["Ada"] += [plan("One."), plan("Two."), plan("Three.")]
    await s.start(with_brann=False)  # the same database
    await s.fake.wait_for_sent(s.ada, 3, timeout=15)
    await until(lambda: not s.ada.updates, timeout=10)
    answered = [m["reply_to"] for m in s.ada.sent]
    assert sorted(answered) == [m["message_id"] for m in asked]  # each named her: each answered, once
