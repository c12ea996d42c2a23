"""The command menu: the commands a character's bot answers are shown in Telegram's menu
(setMyCommands at start), from the same list the handlers are built from."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from platforms.telegram import _handlers

from .scene import until


async def test_the_menu_lists_the_commands_the_bot_answers(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await until(lambda: s.ada.commands is not None)
    assert [c["command"] for c in s.ada.commands] == ["start", "help", "summarize"]
    assert s.ada.commands[1]["description"] == "How to talk to Ada"
    assert "up to 500" in s.ada.commands[2]["description"]
    # Each of them is answered (and /summarise too, which the menu leaves out).
    for command in ("/start", "/help", "/summarize", "/summarise"):
        await s.fake.user_says(s.sam, s.group, command)
    sent = await s.fake.wait_for_sent(s.ada, 4)
    assert sorted(m["text"].split()[0] for m in sent) == ["Hi,", "I'm", "Nothing", "Nothing"]  # handled concurrently


async def test_a_menu_telegram_refuses_is_logged_once_and_the_commands_still_work(scene, caplog) -> None:
    s = scene
    s.fake.fail_next("setMyCommands", status=500, bot=s.ada, times=5)
    with caplog.at_level(logging.WARNING):
        await s.start(with_brann=False)
        await until(lambda: any(m == "setMyCommands" for m, _ in s.ada.requests))
        await s.fake.user_says(s.sam, s.group, "/help")
        [answer] = await s.fake.wait_for_sent(s.ada, 1)
    assert answer["text"].startswith("I'm Ada.")
    warnings = [r.getMessage() for r in caplog.records if "command menu" in r.getMessage()]
    assert warnings == ["Ada: could not set the Telegram command menu: Internal Server Error"]
    assert s.ada.commands is None and [m for m, _ in s.ada.requests].count("setMyCommands") == 1


async def test_a_menu_telegram_does_not_answer_in_time_is_logged_as_timed_out(monkeypatch, caplog) -> None:
    monkeypatch.setattr(_handlers, "_MENU_TIMEOUT_S", 0.05)
    runtime = SimpleNamespace(get_service=lambda key: None, character=SimpleNamespace(name="Ada"))
    handlers = _handlers.UpdateHandlers(SimpleNamespace(runtime=runtime, name="Ada"))  # type: ignore[arg-type]

    class SlowBot:
        async def set_my_commands(self, commands: list) -> bool:
            await asyncio.sleep(5)
            return True

    with caplog.at_level(logging.WARNING):
        await handlers.publish_commands(SlowBot())  # type: ignore[arg-type]
    assert [r.getMessage() for r in caplog.records] == ["Ada: could not set the Telegram command menu: timed out"]
