"""How updates are dispatched (python-telegram-bot's handlers): each kind reaches what deals with
it, and every update leaves the inbox once dealt with — unless its handling failed, when it stays
to be handled at the next start."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from bot.runtime.events import EntityLeft
from platforms.telegram._mapping import entity_id

from .scene import plan, until


async def inbox_empties(rt: Any) -> None:
    async with asyncio.timeout(60):
        while await rt.store.inbox_pending("telegram"):
            await asyncio.sleep(0.02)


async def test_updates_nothing_answers_leave_the_inbox_and_a_member_leaving_is_an_event(scene) -> None:
    s = scene
    elsewhere = s.fake.add_group("Elsewhere", members=[s.sam, s.ada])
    await s.start({"TELEGRAM_ALLOWED_CHATS": f'["{s.group.id}"]'}, with_brann=False)
    rt = s.runtime("Ada")
    left: list[str] = []

    async def record(event: EntityLeft) -> None:
        left.append(event.entity_id)

    rt.on(EntityLeft, record)
    await s.fake.user_says(s.sam, elsewhere, "/start")  # a chat Ada stays out of: not even commands
    await s.fake.member_status_changes(s.group, s.ada, "left", "member", by=s.sam, kind="my_chat_member")
    await s.fake.member_status_changes(s.group, s.cleo, "member", "left")
    await until(lambda: left)
    await until(lambda: not s.ada.updates and s.ada.polls >= 3)
    await inbox_empties(rt)
    assert left == [entity_id(rt.agent_id, s.cleo.id)]
    assert s.ada.sent == []


async def test_a_command_for_another_bot_is_an_ordinary_message(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Brann is busy; I can help."))
    await s.fake.user_says(s.sam, s.group, "/help@brann_bot Ada?")  # named: she answers, but not with /help
    sent = await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert [m["text"] for m in sent] == ["Brann is busy; I can help."]


async def test_an_update_whose_handling_failed_stays_in_the_inbox_for_the_next_start(
    scene, caplog, monkeypatch
) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(type(rt.store), "get_world", broken)  # the first thing a message in a new chat needs
    with caplog.at_level(logging.ERROR):
        await s.fake.user_says(s.sam, s.group, "@ada_bot are you there?")
        await until(lambda: "Ada: failed to handle a Telegram update" in caplog.text)
    failed = s.ada.delivered[-1]["update_id"]
    await until(lambda: not s.ada.updates and s.ada.polls >= 3)  # Telegram has forgotten it
    pending = await rt.store.inbox_pending("telegram")
    assert [event_id for event_id, _, _ in pending] == [str(failed)]
    assert json.loads(pending[0][1]) == s.ada.delivered[-1]  # kept as Telegram sent it
    monkeypatch.undo()
    assert s.daemon is not None and s.task is not None
    s.daemon.stop()
    await asyncio.wait_for(s.task, 60)
    s.brain.plans["Ada"].append(plan("Here now."))
    await s.start(with_brann=False)  # the same database: the inbox is handled again
    sent = await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert [(m["chat_id"], m["text"]) for m in sent] == [(s.group.id, "Here now.")]
    await inbox_empties(s.runtime("Ada"))
