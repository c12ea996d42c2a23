"""What the operator sees of a bot token refused while the daemon runs, for the tests of both
platforms (``tests/platforms/*/test_token_refused.py``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from bot.daemon.daemon import Daemon
from bot.daemon.hosted import status_line
from bot.kernel.links import Links, LinkState

__all__ = ["assert_back", "assert_refused", "assert_said_once", "started", "state"]

RETRY_S = "0.4"  # TROUPE_TOKEN_RETRY_S for Brann: asked again within a second


async def started(scene: Any) -> tuple[Daemon, Links]:
    """Either platform's scene started, Brann asking again quickly; the daemon (once ready) and
    Brann's links."""
    await scene.start(brann_settings={"TROUPE_TOKEN_RETRY_S": RETRY_S})
    daemon: Daemon = scene.daemon
    async with asyncio.timeout(10):
        while not daemon.readiness()[0]:
            await asyncio.sleep(0.01)
    return daemon, scene.runtime("Brann").links


def state(links: Links, platform: str) -> LinkState | None:
    link = links.get(platform)
    return None if link is None else link.state


def _refused_metric(agent: str, platform: str, value: int) -> str:
    return f'troupe_platform_token_refused{{agent="{agent}",platform="{platform}"}} {value}'


def assert_refused(daemon: Daemon, agent: str, platform: str, how: str) -> None:
    """Readiness, the systemd status line, ``troupe status`` and the metric all say so."""
    label = platform.capitalize()
    assert daemon.readiness() == (False, [f"{agent} on {platform}: refused ({label} refused the bot token ({how}))"])
    assert status_line(daemon.agents.values()).endswith(f"; bot token refused: {agent} on {platform}")
    shown = {a["name"]: a["platforms"][platform]["state"] for a in daemon.status()["agents"]}
    assert shown[agent] == "refused" and sorted(shown.values()).count("connected") == len(shown) - 1
    assert _refused_metric(agent, platform, 1) in daemon.metrics.render()


def assert_said_once(caplog: pytest.LogCaptureFixture, agent: str, setting: str, token: str) -> None:
    """One ERROR line, saying what to do, and no other warning; never the token."""
    said = [r for r in caplog.records if f"refused {agent}'s bot token" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.ERROR
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == said  # nothing else about it
    assert f"set a new {setting} and run `troupe reload`" in said[0].getMessage()
    assert token not in caplog.text


def assert_back(daemon: Daemon, agent: str, platform: str) -> None:
    assert daemon.readiness() == (True, [])
    assert _refused_metric(agent, platform, 0) in daemon.metrics.render()
