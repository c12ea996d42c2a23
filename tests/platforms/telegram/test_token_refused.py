"""A bot token revoked while the daemon runs (every call answers 401): its own state, said once,
asked about again slowly, and polling again once Telegram takes it; the other character carries
on meanwhile."""

from __future__ import annotations

import logging

import pytest

from bot.kernel.links import LinkState

from ...refusals import assert_back, assert_refused, assert_said_once, started, state
from .scene import Scene, plan, until


async def test_a_token_revoked_while_running_is_refused_until_it_works_again(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    s = scene
    with caplog.at_level(logging.INFO):
        daemon, links = await started(s)
        await s.fake.wait_polling(s.brann)

        s.fake.revoke(s.brann)
        await until(lambda: state(links, "telegram") is LinkState.REFUSED, timeout=10)
        assert_refused(daemon, "Brann", "telegram", "401 Unauthorized")
        # Asked again (getMe, each time refused) without leaving the state.
        await s.fake.wait_for(lambda: s.brann.refused >= 3, timeout=10, description="Telegram asked again")
        assert state(links, "telegram") is LinkState.REFUSED

        s.brain.plans["Ada"].append(plan("Still here."))
        await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "hello?")
        assert (await s.fake.wait_for_sent(s.ada, 1))[0]["text"] == "Still here."
        assert_said_once(caplog, "Brann", "TELEGRAM_BOT_TOKEN", "token-brann")

        s.fake.restore(s.brann)
        await until(lambda: state(links, "telegram") is LinkState.CONNECTED, timeout=10)
        assert_back(daemon, "Brann", "telegram")
        s.brain.plans["Brann"].append(plan("Back."))
        # (the fake keeps one private chat per person: Sam's is with Ada)
        await s.fake.user_says(s.cleo, s.fake.private(s.cleo, s.brann), "are you back?")
        assert (await s.fake.wait_for_sent(s.brann, 1, timeout=10))[0]["text"] == "Back."
    assert "Telegram takes Brann's bot token again" in caplog.text
