"""A bot token reset while the daemon runs (Discord closes the gateway with 4004 and answers REST
401): its own state, said once, asked about again slowly, and connected anew once Discord takes
it again; the other character carries on meanwhile."""

from __future__ import annotations

import logging

import pytest

from bot.kernel.links import LinkState

from ...refusals import assert_back, assert_refused, assert_said_once, started, state
from .scene import Scene, plan, until


async def test_a_token_reset_while_running_is_refused_until_discord_takes_it_again(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    s = scene
    with caplog.at_level(logging.INFO):
        daemon, links = await started(s)

        await s.fake.revoke(s.brann)
        await until(lambda: state(links, "discord") is LinkState.REFUSED, timeout=10)
        assert_refused(daemon, "Brann", "discord", "gateway closed with 4004")

        def logins() -> int:
            return len([r for r in s.brann.requests if r.path == "/users/@me"])

        # Asked again (each time refused) without leaving the state.
        asked = logins()
        await until(lambda: logins() >= asked + 2, timeout=10)
        assert state(links, "discord") is LinkState.REFUSED

        s.brain.plans["Ada"].append(plan("Still here."))
        await s.fake.dm(s.sam, s.ada, "hello?")
        assert (await s.fake.wait_for_sent(s.ada, 1))[0].content == "Still here."
        assert_said_once(caplog, "Brann", "DISCORD_API_TOKEN", "token-brann")

        s.fake.restore(s.brann)
        await until(lambda: state(links, "discord") is LinkState.CONNECTED, timeout=15)
        assert_back(daemon, "Brann", "discord")
        s.brain.plans["Brann"].append(plan("Back."))
        await s.fake.dm(s.sam, s.brann, "are you back?")
        assert (await s.fake.wait_for_sent(s.brann, 1, timeout=10))[0].content == "Back."
    assert "Discord takes Brann's bot token again" in caplog.text
