"""Connecting one agent to one platform, and trying again while the platform cannot be reached.

``connect`` raising :class:`~bot.kernel.errors.ConfigError` means it cannot work until someone changes
the configuration: that connection is given up (its link FAILED). Anything else (the platform is
down, the network is not up yet) is retried in the runtime's background with back-off until it
connects (its link RETRYING meanwhile), while everything else runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bot.daemon.platform_plans import PlatformPlan
from bot.kernel.backoff import ExponentialBackoff
from bot.kernel.errors import ConfigError, reason_for
from bot.kernel.links import LinkState
from bot.runtime.agent import AgentRuntime
from bot.runtime.events import PlatformConnected

__all__ = ["Connect", "connect_or_retry"]

# The daemon's connection lines: they read as they did when this was part of bot/daemon/daemon.py.
_log = logging.getLogger("bot.daemon.daemon")

Connect = Callable[[AgentRuntime], Awaitable[None]]


async def connect_or_retry(
    runtime: AgentRuntime, plan: PlatformPlan, connect: Connect, backoff: ExponentialBackoff
) -> None:
    """Connect ``runtime`` to ``plan``'s platform now; if the platform cannot be reached, keep
    trying in the runtime's background after each of ``backoff``'s delays."""
    runtime.links.set(plan.platform, LinkState.CONNECTING)
    delay = await _attempt(runtime, plan, connect, backoff)
    if delay is not None:
        runtime.create_task(_retry(runtime, plan, connect, backoff, delay), f"{plan.platform}:connect")


async def _retry(
    runtime: AgentRuntime, plan: PlatformPlan, connect: Connect, backoff: ExponentialBackoff, delay: float
) -> None:
    """Try ``connect`` again after each delay until it works or the configuration is at fault."""
    wait: float | None = delay
    while wait is not None:
        await asyncio.sleep(wait)
        wait = await _attempt(runtime, plan, connect, backoff)


async def _attempt(
    runtime: AgentRuntime, plan: PlatformPlan, connect: Connect, backoff: ExponentialBackoff
) -> float | None:
    """One try at connecting; the delay before the next, or None when there is none to make
    (connected, or the configuration is at fault)."""
    first = backoff.attempts == 0
    before = runtime.links.get(plan.platform)
    try:
        await connect(runtime)
    except ConfigError as exc:
        reason = exc.reason_for(plan.agent)
        _log.error("%s: could not connect to %s: %s", plan.agent, plan.platform, reason)
        runtime.links.set(plan.platform, LinkState.FAILED, reason)
        return None
    except Exception as exc:
        delay = backoff.delay()
        reason = _describe(exc, plan.agent)
        _log.warning(
            "%s: %s %s (%s); trying again in %.0f s",
            plan.agent,
            "could not reach" if first else "still cannot reach",
            plan.platform,
            reason,
            delay,
        )
        runtime.links.set(plan.platform, LinkState.RETRYING, reason)
        return delay
    if not first:
        _log.info("%s: connected to %s after %d attempts", plan.agent, plan.platform, backoff.attempts + 1)
    # Up, unless the adapter said how it is itself while connecting (ready, or still waiting).
    if runtime.links.get(plan.platform) is before:
        runtime.links.set(plan.platform, LinkState.CONNECTED)
    await runtime.emit(PlatformConnected(source=plan.platform))
    return None


def _describe(error: BaseException, agent: str) -> str:
    """A short account of an unexpected connection failure: its message, or at least its type."""
    text = reason_for(error, agent).strip()
    return f"{error.__class__.__name__}: {text}" if text else error.__class__.__name__
