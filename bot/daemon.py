"""The daemon: every character, one database, one event loop.

Start-up: open the database, start one :class:`~bot.runtime.AgentRuntime` per character
(concurrently; one that fails is logged and left out, the others run), then connect each agent
to the platforms its character asks for. A platform package joins in by exposing
``async def connect(runtime) -> None``: it starts its client as the runtime's background tasks
and registers ``runtime.on_close`` to disconnect. Nothing else lists platforms.

``connect`` raising :class:`~bot.errors.ConfigError` means it cannot work until someone changes
the configuration: that connection is given up. Anything else (the platform is down, the network
is not up yet) is retried in the background with back-off until it connects, while everything
else runs.

The daemon runs until :meth:`Daemon.stop` (SIGTERM/SIGINT), then closes agents in reverse order
and the database last. When nothing can run it exits with status 78 and says what to configure.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from . import plugins as plugin_registry
from . import redact
from .backoff import ExponentialBackoff
from .character import Character, LoadResult
from .chat import runtime_plugins
from .errors import EXIT_CONFIG, ConfigError
from .runtime import AgentRuntime
from .secrets import is_reference
from .settings import DaemonSettings, character_setting
from .store import Database

__all__ = ["Daemon", "PlatformPlan"]

_log = logging.getLogger(__name__)

_STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class PlatformPlan:
    """One character on one platform, and what it still lacks."""

    agent: str
    platform: str
    missing: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return not self.missing


def _without_name(error: BaseException, agent: str) -> str:
    """The error's message without a leading ``<agent>: `` (the log line names the agent already)."""
    text = str(error)
    return text[len(agent) + 2 :] if text.startswith(f"{agent}: ") else text


def _describe(error: BaseException, agent: str) -> str:
    """A short account of an unexpected connection failure: its message, or at least its type."""
    text = _without_name(error, agent).strip()
    return f"{error.__class__.__name__}: {text}" if text else error.__class__.__name__


def _describe_missing(character: Character, key: str) -> str:
    """``KEY``, or ``KEY (env:NAME? resolves to nothing)`` when the file points it at a reference."""
    written = character.secrets.get(key) or character.settings_secrets.get(key)
    return f"{key} ({written} resolves to nothing)" if written and is_reference(written) else key


class Daemon:
    """Runs a set of loaded characters until stopped."""

    def __init__(self, settings: DaemonSettings, characters: Sequence[LoadResult], environ: Mapping[str, str]) -> None:
        self.settings = settings
        self.characters = [r for r in characters if r.ok]
        self.environ = environ
        self.runtimes: list[AgentRuntime] = []
        self._stopped = asyncio.Event()

    def plan(self) -> list[PlatformPlan]:
        """Every (character, platform) pair the character files ask for, with missing settings."""
        known = plugin_registry.available()
        plans: list[PlatformPlan] = []
        for result in self.characters:
            character = result.raise_for_problems()
            for name in result.platforms:
                meta = known[name]
                if meta.interactive:
                    continue
                missing = tuple(
                    _describe_missing(character, k) for k in meta.requires if not character_setting(character, k, self.environ)
                )
                plans.append(PlatformPlan(character.name, name, missing))
        return plans

    def stop(self) -> None:
        """Ask :meth:`run` to shut down (safe from a signal handler)."""
        self._stopped.set()

    async def run(self) -> int:
        """Run until stopped; returns the exit status."""
        redact.install()
        plans = self.plan()
        for plan in plans:
            if not plan.ready:
                _log.warning("%s: %s skipped, %s not set", plan.agent, plan.platform, " and ".join(plan.missing))
        ready = [p for p in plans if p.ready]
        if not ready:
            _log.error(
                "no platform configured: no character has a platform it can run on. Add "
                '"@elizaos/plugin-discord" or "@elizaos/plugin-telegram" to a character\'s plugins and '
                "give it DISCORD_API_TOKEN or TELEGRAM_BOT_TOKEN (in its settings.secrets, or the environment)"
            )
            async with Database(self.settings.database) as db:  # record the characters all the same
                for result in self.characters:
                    record = result.raise_for_problems().to_record()
                    await db.for_agent(record.id).upsert_agent(record)
            return EXIT_CONFIG

        async with Database(self.settings.database) as db:
            await self._start_agents(db)
            connected, retrying = await self._connect_platforms(ready)
            try:
                if not connected and not retrying:
                    _log.error("no agent could connect to a platform; see the errors above")
                    return EXIT_CONFIG
                self._install_signal_handlers()
                _log.info("troupe running: %d agents on %d platform connections%s", len(self.runtimes), connected,
                          f" ({retrying} more still connecting)" if retrying else "")
                await self._stopped.wait()
                _log.info("stopping")
                return 0
            finally:
                await self._close_agents()

    async def _start_agents(self, db: Database) -> None:
        async def start(result: LoadResult) -> AgentRuntime | None:
            character = result.raise_for_problems()
            runtime = AgentRuntime(character, db.for_agent(character.agent_id), environ=self.environ,
                                   plugins=runtime_plugins(result), model_preset=result.model_preset)
            try:
                await runtime.start()
            except Exception as exc:
                _log.error("%s did not start: %s", character.name, exc)
                return None
            return runtime

        started = await asyncio.gather(*(start(r) for r in self.characters))
        self.runtimes = [r for r in started if r is not None]

    async def _connect_platforms(self, ready: Sequence[PlatformPlan]) -> tuple[int, int]:
        """Connect every (agent, platform) pair concurrently.

        Returns how many connected and how many are being retried in the background (their
        platform could not be reached); the rest failed for good and were logged.
        """
        by_name = {rt.character.name: rt for rt in self.runtimes}
        known = plugin_registry.available()

        async def connect_one(plan: PlatformPlan) -> bool | None:
            runtime = by_name.get(plan.agent)
            if runtime is None:
                return False
            module = importlib.import_module(f"platforms.{known[plan.platform].name}")
            connect = getattr(module, "connect", None)
            if connect is None:
                _log.error("%s: the %s platform is not available in this build yet", plan.agent, plan.platform)
                return False
            try:
                await connect(runtime)
            except ConfigError as exc:
                _log.error("%s: could not connect to %s: %s", plan.agent, plan.platform, _without_name(exc, plan.agent))
                return False
            except Exception as exc:
                backoff = ExponentialBackoff(self.settings.reconnect_base_s, self.settings.reconnect_cap_s)
                delay = backoff.delay()
                _log.warning("%s: could not reach %s (%s); trying again in %.0f s", plan.agent, plan.platform,
                             _describe(exc, plan.agent), delay)
                runtime.create_task(self._keep_connecting(runtime, plan, connect, backoff, delay),
                                    f"{plan.platform}:connect")
                return None
            return True

        results = await asyncio.gather(*(connect_one(plan) for plan in ready))
        return sum(r is True for r in results), sum(r is None for r in results)

    @staticmethod
    async def _keep_connecting(runtime: AgentRuntime, plan: PlatformPlan, connect: Callable[[AgentRuntime], Awaitable[None]],
                               backoff: ExponentialBackoff, delay: float) -> None:
        """Try ``connect`` again after each delay until it works or the configuration is at fault."""
        while True:
            await asyncio.sleep(delay)
            try:
                await connect(runtime)
            except ConfigError as exc:
                _log.error("%s: could not connect to %s: %s", plan.agent, plan.platform, _without_name(exc, plan.agent))
                return
            except Exception as exc:
                delay = backoff.delay()
                _log.warning("%s: still cannot reach %s (%s); trying again in %.0f s", plan.agent, plan.platform,
                             _describe(exc, plan.agent), delay)
                continue
            _log.info("%s: connected to %s after %d attempts", plan.agent, plan.platform, backoff.attempts + 1)
            return

    async def _close_agents(self) -> None:
        for runtime in reversed(self.runtimes):
            try:
                await asyncio.wait_for(runtime.close(), _STOP_TIMEOUT_S)
            except Exception:
                _log.exception("%s did not close cleanly", runtime.character.name)
        self.runtimes = []

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self.stop)
            except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
                pass
