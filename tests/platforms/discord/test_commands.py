"""The slash commands a character's bot answers are registered with Discord at start (the
counterpart of Telegram's command menu); a refusal is logged and is not fatal."""

from __future__ import annotations

import logging

from .scene import until


async def test_the_slash_commands_are_registered_at_start(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    assert [c["name"] for c in s.ada.commands[None]] == ["troupe", "summarize", "chat", "ask"]


async def test_the_commands_are_registered_once_per_run_not_at_every_ready(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await s.fake.invalidate_session(s.ada)  # not resumable: discord.py identifies again, a second READY
    await until(lambda: len(s.ada.identifies) == 2)
    await s.fake.user_says(s.sam, s.general, "hello @Ada")  # the new session is serving
    assert await s.fake.wait_for_sent(s.ada, 1)
    assert [scope for scope, _ in s.ada.command_registrations] == [None]


async def test_a_refused_registration_is_logged_and_the_character_still_answers(scene, caplog) -> None:
    s = scene
    s.fake.fail_next("PUT", r"/applications/\d+/commands$", status=400, code=50035, message="Invalid Form Body")
    with caplog.at_level(logging.WARNING):
        await s.start(with_brann=False)
    assert None not in s.ada.commands
    assert any("Ada: could not register the slash commands" in r.getMessage() for r in caplog.records)
    await s.fake.user_says(s.sam, s.general, "hello @Ada")
    assert await s.fake.wait_for_sent(s.ada, 1)
