"""The slash commands a character's bot answers are registered with Discord at start (the
counterpart of Telegram's command menu); a refusal is logged and is not fatal."""

from __future__ import annotations

import logging


async def test_the_slash_commands_are_registered_at_start(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    assert [c["name"] for c in s.ada.commands[None]] == ["troupe", "summarize", "chat", "ask"]


async def test_a_refused_registration_is_logged_and_the_character_still_answers(scene, caplog) -> None:
    s = scene
    s.fake.fail_next("PUT", r"/applications/\d+/commands$", status=400, code=50035, message="Invalid Form Body")
    with caplog.at_level(logging.WARNING):
        await s.start(with_brann=False)
    assert None not in s.ada.commands
    assert any("Ada: could not register the slash commands" in r.getMessage() for r in caplog.records)
    await s.fake.user_says(s.sam, s.general, "hello @Ada")
    assert await s.fake.wait_for_sent(s.ada, 1)
