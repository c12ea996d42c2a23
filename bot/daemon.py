"""The daemon: every character, one database, one event loop.

Start-up: open the control socket (and the health port, if configured), open the database,
then launch every character concurrently: start its :class:`~bot.runtime.AgentRuntime` and
connect it to the platforms its file asks for. One that fails is logged and left out; the others
run. A platform package joins in by exposing ``async def connect(runtime) -> None``: it starts
its client as the runtime's background tasks and registers ``runtime.on_close`` to disconnect.
Nothing else lists platforms.

``connect`` raising :class:`~bot.errors.ConfigError` means it cannot work until someone changes
the configuration: that connection is given up. Anything else (the platform is down, the network
is not up yet) is retried in the background with back-off until it connects, while everything
else runs.

Once every agent has started, systemd hears READY=1 (see :mod:`bot.systemd`) and a status line
that follows every change. SIGHUP (or ``troupe reload``) re-reads the character files: new ones
start, removed ones stop, changed ones restart, the rest keep running (told AGENT_RELOADED, so
their knowledge files are read again), and a file that no longer validates (or cannot be read)
leaves its agent running as it was while the rest of the reload goes ahead. SIGTERM/SIGINT stop the intake, let the replies being written finish
(``TROUPE_STOP_TIMEOUT_S``), close every agent and the database, and exit 0; a second signal
exits at once. When nothing can run the daemon exits with status 78 and says what to configure.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import installed_version, redact
from . import plugins as plugin_registry
from .background import BackgroundTasks
from .backoff import ExponentialBackoff
from .character import Character, LoadResult, load_characters, scan_character_files
from .chat import runtime_plugins
from .control import ControlServer
from .errors import EXIT_CONFIG, ConfigError, ReloadError, ReloadFailed, reason_for
from .events import EventType
from .files import file_key
from .lifecycle import AgentState, DaemonState
from .links import Link, LinkState
from .logs import agent_context
from .metrics import Metrics
from .runtime import AgentRuntime
from .secrets import is_reference
from .settings import DaemonSettings, character_setting, load_environ
from .shared import Shared
from .store import StoreBackend, backend_for
from .systemd import Notifier

__all__ = ["Daemon", "PlatformPlan"]

_log = logging.getLogger(__name__)

Connect = Callable[[AgentRuntime], Awaitable[None]]

_CLOSE_TIMEOUT_S = 10.0
_EXIT_FORCED = 1  # a second signal: stopped without finishing


@dataclass(frozen=True, slots=True)
class PlatformPlan:
    """One character on one platform, and what it still lacks."""

    agent: str
    platform: str
    missing: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return not self.missing


@dataclass(eq=False)
class _Agent:
    """One character file's agent, as the daemon runs it."""

    result: LoadResult
    fingerprint: str
    runtime: AgentRuntime | None = None
    state: AgentState = AgentState.STARTING
    error: str = ""

    @property
    def character(self) -> Character:
        return self.result.raise_for_problems()

    @property
    def name(self) -> str:
        return self.character.name


def _describe(error: BaseException, agent: str) -> str:
    """A short account of an unexpected connection failure: its message, or at least its type."""
    text = reason_for(error, agent).strip()
    return f"{error.__class__.__name__}: {text}" if text else error.__class__.__name__


def _describe_missing(character: Character, key: str) -> str:
    """``KEY``, or ``KEY (env:NAME? resolves to nothing)`` when the file points it at a reference."""
    written = character.secrets.get(key) or character.settings_secrets.get(key)
    return f"{key} ({written} resolves to nothing)" if written and is_reference(written) else key


def fingerprint(result: LoadResult) -> str:
    """What makes two loads of a character the same agent: its whole definition with secrets
    resolved (a rotated token in a credential file is a change). Kept in memory only."""
    character = result.raise_for_problems()
    secrets = {k: s.get_secret_value() for k in character.secret_keys() if (s := character.secret(k)) is not None}
    body = json.dumps(
        [character.model_dump(mode="json"), secrets, result.plugins, result.model_preset], sort_keys=True, default=str
    )
    return hashlib.sha256(body.encode()).hexdigest()


class Daemon:
    """Runs a set of loaded characters until stopped.

    Args:
        settings: the daemon's own settings.
        characters: the loaded character files (those with problems are left out).
        environ: the environment characters fall back to.
        sources: the command-line arguments the characters came from (files, folders); a reload
            reads them again. Without them there is nothing to reload from.
        notifier: systemd's notify socket (default: from the environment; off outside systemd).
    """

    def __init__(
        self,
        settings: DaemonSettings,
        characters: Sequence[LoadResult],
        environ: Mapping[str, str],
        *,
        sources: Sequence[str] | None = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.settings = settings
        self.characters = [r for r in characters if r.ok]
        self.environ = environ
        self.sources = list(sources) if sources is not None else None
        self.notifier = notifier if notifier is not None else Notifier()
        self.metrics = Metrics()
        self.shared = Shared()  # this daemon's secrets, Telegram relay, bot tokens in use
        self.state = DaemonState.STARTING
        self._agents: dict[str, _Agent] = {}  # by agent id, in start order
        self._db: StoreBackend | None = None
        self._stopped = asyncio.Event()
        self._started_at = time.monotonic()
        self._reload_lock = asyncio.Lock()
        self._reload_again = False
        self._background = BackgroundTasks("troupe")  # the daemon's own: they outlive any agent

    # -- what runs ------------------------------------------------------------------------

    @property
    def runtimes(self) -> list[AgentRuntime]:
        """The runtimes of the agents that are up, in start order."""
        return [a.runtime for a in self._agents.values() if a.runtime is not None and a.state is AgentState.RUNNING]

    def _plans_for(self, result: LoadResult) -> list[PlatformPlan]:
        known = plugin_registry.available()
        character = result.raise_for_problems()
        plans: list[PlatformPlan] = []
        for name in result.platforms:
            meta = known[name]
            if meta.interactive:
                continue
            missing = tuple(
                _describe_missing(character, k)
                for k in meta.requires
                if not character_setting(character, k, self.environ)
            )
            plans.append(PlatformPlan(character.name, name, missing))
        return plans

    def plan(self) -> list[PlatformPlan]:
        """Every (character, platform) pair the character files ask for, with missing settings."""
        return [p for result in self.characters for p in self._plans_for(result)]

    # -- what the control socket and systemd see ------------------------------------------

    def status(self) -> dict[str, Any]:
        """Everything ``troupe status`` shows (JSON-able)."""
        agents = []
        for agent in sorted(self._agents.values(), key=lambda a: a.name.casefold()):
            runtime = agent.runtime
            platforms = {
                name: {"state": link.state.value, "detail": link.detail}
                for name, link in (runtime.links.items() if runtime is not None else ())
            }
            agents.append(
                {
                    "name": agent.name,
                    "id": agent.character.agent_id,
                    "state": agent.state,
                    "error": agent.error,
                    "in_flight": runtime.in_flight if runtime is not None else 0,
                    "platforms": platforms,
                }
            )
        return {
            "state": self.state,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self._started_at, 1),
            "version": installed_version(),
            "agents": agents,
        }

    def readiness(self) -> tuple[bool, list[str]]:
        """Ready when running and every agent's every platform is connected."""
        reasons = [] if self.state is DaemonState.RUNNING else [f"the daemon is {self.state}"]
        for agent in self._agents.values():
            if agent.state is not AgentState.RUNNING or agent.runtime is None:
                reasons.append(f"{agent.name} is {agent.state}" + (f": {agent.error}" if agent.error else ""))
                continue
            for name, link in agent.runtime.links.items():
                if link.state is not LinkState.CONNECTED:
                    reasons.append(
                        f"{agent.name} on {name}: {link.state.value}" + (f" ({link.detail})" if link.detail else "")
                    )
        return not reasons, reasons

    def _links(self) -> Iterator[Link]:
        """Every running agent's platform links."""
        for agent in self._agents.values():
            if agent.runtime is not None:
                yield from (link for _, link in agent.runtime.links.items())

    def _status_line(self) -> str:
        running = sum(a.state is AgentState.RUNNING for a in self._agents.values())
        links = list(self._links())
        up = sum(link.state is LinkState.CONNECTED for link in links)
        failed = len(self._agents) - running
        extra = f", {failed} not running" if failed else ""
        return (
            f"{running} agent{'s' if running != 1 else ''} running{extra}; {up} of {len(links)} platform connections up"
        )

    def _link_changed(self, agent: str, platform: str, link: Link, old: Link | None) -> None:
        self.metrics.platform_connected.labels(agent=agent, platform=platform).set(link.state is LinkState.CONNECTED)
        if link.state is LinkState.RETRYING and (old is None or old.state is not LinkState.RETRYING):
            self.metrics.reconnects.labels(agent=agent, platform=platform).inc()
        if self.state is DaemonState.RUNNING:
            self.notifier.status(self._status_line())

    # -- running --------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to shut down (safe from a signal handler)."""
        self._stopped.set()

    async def run(self) -> int:
        """Run until stopped; returns the exit status."""
        with redact.filtering(self.shared.secrets):  # this daemon's secrets, for as long as it runs
            return await self._run()

    async def _run(self) -> int:
        plans = self.plan()
        for result in self.characters:
            if result.missing_plugins:
                character = result.raise_for_problems()
                with agent_context(character.name):
                    job = "" if any(p.agent == character.name for p in plans) else "; it runs on no platform"
                    _log.warning(
                        "%s starts without %s, which troupe does not have%s",
                        character.name,
                        ", ".join(result.missing_plugins),
                        job,
                    )
        for plan in plans:
            if not plan.ready:
                with agent_context(plan.agent):
                    _log.warning("%s: %s skipped, %s not set", plan.agent, plan.platform, " and ".join(plan.missing))
        if not any(p.ready for p in plans):
            _log.error(
                "no platform configured: no character has a platform it can run on. Add "
                '"@elizaos/plugin-discord" or "@elizaos/plugin-telegram" to a character\'s plugins and '
                "give it DISCORD_API_TOKEN or TELEGRAM_BOT_TOKEN (in its settings.secrets, or the environment)"
            )
            async with backend_for(self.settings.database) as db:  # record the characters all the same
                for result in self.characters:
                    record = result.raise_for_problems().to_record()
                    await db.for_agent(record.id).upsert_agent(record)
            return EXIT_CONFIG

        control = ControlServer(self, self.settings)
        try:
            await control.start()
        except ConfigError as exc:
            _log.error("%s", exc)
            return EXIT_CONFIG
        installed = self._install_signal_handlers()
        try:
            async with backend_for(self.settings.database) as db:
                self._db = db
                try:
                    return await self._serve()
                finally:
                    await self._close_all()
                    self._db = None
        finally:
            loop = asyncio.get_running_loop()
            for sig in installed:
                loop.remove_signal_handler(sig)
            await control.close()
            self.notifier.close()

    async def _serve(self) -> int:
        await asyncio.gather(*(self._launch(r) for r in self.characters))
        links = list(self._links())
        if not any(link.state is not LinkState.FAILED for link in links):
            _log.error("no agent could connect to a platform; see the errors above")
            return EXIT_CONFIG
        self.state = DaemonState.RUNNING
        self._background.start(self.notifier.keep_alive(), "watchdog")
        status = self._status_line()
        _log.info("troupe running: %s", status)
        self.notifier.ready(status)
        await self._stopped.wait()
        self.state = DaemonState.STOPPING
        in_flight = sum(rt.in_flight for rt in self.runtimes)
        waiting = f"; waiting for {in_flight} {'reply' if in_flight == 1 else 'replies'} in flight" if in_flight else ""
        _log.info("stopping%s", waiting)
        self.notifier.stopping(f"stopping{waiting}")
        await self._drain_all()
        return 0

    # -- one agent ------------------------------------------------------------------------

    async def _launch(self, result: LoadResult) -> _Agent:
        """Start one character's agent and connect it to its platforms."""
        character = result.raise_for_problems()
        agent = _Agent(result, fingerprint(result))
        self._agents[character.agent_id] = agent
        with agent_context(character.name):
            runtime = AgentRuntime(
                character,
                self._database().for_agent(character.agent_id),
                environ=self.environ,
                plugins=runtime_plugins(result),
                model_preset=result.model_preset,
                metrics=self.metrics,
                shared=self.shared,
            )
            runtime.links.on_change = lambda platform, link, old: self._link_changed(
                character.name, platform, link, old
            )
            try:
                await runtime.start()
            except Exception as exc:
                _log.error("%s did not start: %s", character.name, exc)
                agent.state, agent.error = AgentState.FAILED, reason_for(exc, character.name)
                return agent
            agent.runtime = runtime
            agent.state = AgentState.RUNNING
            self.metrics.agents.set(len(self.runtimes))
            ready = [p for p in self._plans_for(result) if p.ready]
            await asyncio.gather(*(self._connect(agent, runtime, plan) for plan in ready))
        return agent

    def _database(self) -> StoreBackend:
        assert self._db is not None, "the database is open only while the daemon runs"
        return self._db

    async def _connect(self, agent: _Agent, runtime: AgentRuntime, plan: PlatformPlan) -> None:
        known = plugin_registry.available()
        module = importlib.import_module(f"platforms.{known[plan.platform].name}")
        connect = getattr(module, "connect", None)
        if connect is None:
            _log.error("%s: the %s platform is not available in this build yet", plan.agent, plan.platform)
            runtime.links.set(plan.platform, LinkState.FAILED, "not available in this build")
            return
        runtime.links.set(plan.platform, LinkState.CONNECTING)
        backoff = ExponentialBackoff(self.settings.reconnect_base_s, self.settings.reconnect_cap_s)
        delay = await _attempt(runtime, plan, connect, backoff)
        if delay is not None:
            runtime.create_task(
                self._keep_connecting(runtime, plan, connect, backoff, delay), f"{plan.platform}:connect"
            )

    @staticmethod
    async def _keep_connecting(
        runtime: AgentRuntime, plan: PlatformPlan, connect: Connect, backoff: ExponentialBackoff, delay: float
    ) -> None:
        """Try ``connect`` again after each delay until it works or the configuration is at fault."""
        wait: float | None = delay
        while wait is not None:
            await asyncio.sleep(wait)
            wait = await _attempt(runtime, plan, connect, backoff)

    async def _retire(self, agent: _Agent) -> None:
        """Stop one agent: finish its replies in flight (bounded), then close it."""
        runtime = agent.runtime
        agent.state = AgentState.STOPPING
        if runtime is not None:
            with agent_context(agent.name):
                if not await runtime.drain(self.settings.stop_timeout_s):
                    _log.warning(
                        "%s: gave up waiting for %d replies after %.0f s",
                        agent.name,
                        runtime.in_flight,
                        self.settings.stop_timeout_s,
                    )
                await self._close(runtime)
            self.metrics.forget_agent(agent.name)
        agent.state, agent.runtime = AgentState.STOPPED, None
        self.metrics.agents.set(len(self.runtimes))

    @staticmethod
    async def _close(runtime: AgentRuntime) -> None:
        try:
            await asyncio.wait_for(runtime.close(), _CLOSE_TIMEOUT_S)
        except Exception:
            _log.exception("%s did not close cleanly", runtime.character.name)

    async def _drain_all(self) -> None:
        runtimes = self.runtimes

        async def drain(runtime: AgentRuntime) -> bool:
            with agent_context(runtime.character.name):
                return await runtime.drain(self.settings.stop_timeout_s)

        finished = await asyncio.gather(*(drain(rt) for rt in runtimes))
        late = sum(rt.in_flight for rt, done in zip(runtimes, finished, strict=True) if not done)
        if late:
            _log.warning("gave up waiting for %d replies after %.0f s", late, self.settings.stop_timeout_s)

    async def _close_all(self) -> None:
        await self._background.close()
        for agent in reversed(list(self._agents.values())):
            if agent.runtime is not None:
                with agent_context(agent.name):
                    await self._close(agent.runtime)
                agent.runtime, agent.state = None, AgentState.STOPPED
        self._agents.clear()

    # -- reload ---------------------------------------------------------------------------

    def request_reload(self) -> None:
        """Reload in the background (SIGHUP); a request during a reload runs one more after it."""
        if self._reload_lock.locked():
            self._reload_again = True
            return
        if self._background.closed:  # a SIGHUP while shutting down
            _log.warning("reload skipped: the daemon is %s", self.state)
            return
        self._background.start(self._reload_logged(), "reload")

    async def _reload_logged(self) -> None:
        try:
            await self.reload()
        except ReloadFailed:
            pass  # logged already, where it failed
        except ReloadError as exc:
            _log.warning("reload skipped: %s", exc)

    async def reload(self) -> dict[str, Any]:
        """Read the character files again and apply the difference; returns what was done.

        Raises:
            ReloadError: a reload is already running, the daemon is not running, or it was
                started without character files to read again (both are RuntimeErrors).
            ReloadFailed: the reload failed (logged); every agent keeps running as it was.
        """
        if self._reload_lock.locked():
            raise ReloadError("a reload is already running")
        if self.state is not DaemonState.RUNNING or self._db is None:
            raise ReloadError(f"the daemon is {self.state}; nothing to reload")
        if self.sources is None:
            raise ReloadError("this daemon was not started from character files; nothing to reload")
        async with self._reload_lock:
            self.state = DaemonState.RELOADING
            self.notifier.reloading("reloading characters")
            _log.info("reloading characters from %s", ", ".join(self.sources))
            try:
                summary = await self._apply_reload()
            except ConfigError as exc:  # .env cannot be read: nothing changes
                self.metrics.reloads.labels(outcome="error").inc()
                _log.error("reload failed, every agent keeps running as it was: %s", exc)
                raise ReloadFailed(f"reload failed: {exc}") from exc
            except Exception as exc:
                self.metrics.reloads.labels(outcome="error").inc()
                _log.exception("reload failed")
                raise ReloadFailed(f"reload failed: {exc.__class__.__name__}: {exc}") from exc
            finally:
                self.state = DaemonState.RUNNING
                self.notifier.ready(self._status_line())
                if self._reload_again and not self._background.closed:  # files changed again meanwhile
                    self._reload_again = False
                    self._background.start(self._reload_logged(), "reload")
        self.metrics.reloads.labels(outcome="ok").inc()
        _log.info("reloaded: %s", _summary_line(summary))
        return summary

    async def _apply_reload(self) -> dict[str, Any]:
        sources = self.sources or []

        def read() -> tuple[list[LoadResult], dict[str, str]]:  # file reads: off the loop
            environ = load_environ()
            found = scan_character_files(sources)
            for entry, reason in found.skipped:
                _log.info("%s: skipped, %s", entry, reason)
            return load_characters(found.paths, environ=environ), environ

        results, environ = await asyncio.to_thread(read)
        self.environ = environ
        by_source = {file_key(a.result.source): a for a in self._agents.values()}
        summary: dict[str, Any] = {
            "started": [],
            "stopped": [],
            "restarted": [],
            "unchanged": [],
            "kept": [],
            "failed": [],
        }
        kept: set[str] = set()
        for result in results:
            if result.ok:
                continue
            reason = "; ".join(str(p) for p in result.problems) or "it could not be read"
            old = by_source.get(file_key(result.source))
            if old is not None and old.state is not AgentState.STOPPED:
                kept.add(old.character.agent_id)
                summary["kept"].append({"name": old.name, "file": str(result.source), "reason": reason})
                with agent_context(old.name):
                    _log.warning("%s no longer validates (%s); keeps running as it was", result.source, reason)
            else:
                summary["failed"].append({"name": result.source.stem, "file": str(result.source), "reason": reason})
                _log.error("%s does not validate (%s); not started", result.source, reason)

        wanted = {r.raise_for_problems().agent_id: r for r in results if r.ok}
        stopping, starting = [], []
        for agent_id, agent in list(self._agents.items()):
            if agent_id in kept:
                continue
            new = wanted.get(agent_id)
            if new is None:
                stopping.append(agent)
                summary["stopped"].append(agent.name)
            elif fingerprint(new) != agent.fingerprint or agent.state is AgentState.FAILED:
                stopping.append(agent)
                starting.append(new)
                summary["restarted"].append(new.raise_for_problems().name)
            else:
                agent.result = new  # same agent; the file may have moved
                summary["unchanged"].append(agent.name)
                if agent.runtime is not None:  # what it reads from disk (knowledge files) may have changed
                    with agent_context(agent.name):
                        await agent.runtime.emit(EventType.AGENT_RELOADED, {})
        for agent_id, result in wanted.items():
            if agent_id not in self._agents:
                starting.append(result)
                summary["started"].append(result.raise_for_problems().name)

        # Stop first: a restarted agent's new self needs the bot tokens its old self holds.
        await asyncio.gather(*(self._retire(a) for a in stopping))
        for agent in stopping:
            self._agents.pop(agent.character.agent_id, None)
        launched = await asyncio.gather(*(self._launch(r) for r in starting))
        for agent in launched:
            if agent.state is AgentState.FAILED:
                summary["failed"].append({"name": agent.name, "file": str(agent.result.source), "reason": agent.error})
                for key in ("started", "restarted"):
                    if agent.name in summary[key]:
                        summary[key].remove(agent.name)
        self.characters = [a.result for a in self._agents.values()]
        return summary

    # -- signals --------------------------------------------------------------------------

    def _install_signal_handlers(self) -> list[signal.Signals]:
        loop = asyncio.get_running_loop()
        handlers = {
            signal.SIGTERM: self._on_stop_signal,
            signal.SIGINT: self._on_stop_signal,
            signal.SIGHUP: self.request_reload,
        }
        installed = []
        for sig, handler in handlers.items():
            try:
                loop.add_signal_handler(sig, handler)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
                continue
            installed.append(sig)
        return installed

    def _on_stop_signal(self) -> None:
        if self._stopped.is_set():
            _log.warning("second stop signal: exiting now, without waiting for replies in flight")
            logging.shutdown()
            os._exit(_EXIT_FORCED)
        self.stop()


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
    await runtime.emit(EventType.PLATFORM_CONNECTED, {"source": plan.platform})
    return None


def _summary_line(summary: Mapping[str, Any]) -> str:
    parts = [f"{key} {', '.join(summary[key])}" for key in ("started", "stopped", "restarted") if summary[key]]
    parts.append(f"{len(summary['unchanged'])} unchanged")
    parts += [f"{k['name']} kept ({k['file']} does not validate)" for k in summary["kept"]]
    parts += [f"{f['name']} failed" for f in summary["failed"]]
    return "; ".join(parts)
