"""The daemon: every character, one database, one event loop.

Start-up: open the control socket (and the health port, if configured), open the database,
then launch every character concurrently: start its :class:`~bot.runtime.agent.AgentRuntime` and
connect it to the platforms its file asks for. One that fails is logged and left out; the others
run. A platform package joins in by exposing ``async def connect(runtime) -> None``: it starts
its client as the runtime's background tasks and registers ``runtime.on_close`` to disconnect.
Nothing else lists platforms.

``connect`` raising :class:`~bot.kernel.errors.ConfigError` means it cannot work until someone changes
the configuration: that connection is given up. Anything else (the platform is down, the network
is not up yet) is retried in the background with back-off until it connects, while everything
else runs (:mod:`bot.daemon.connecting`).

Once every agent has started, systemd hears READY=1 (see :mod:`bot.daemon.systemd`) and a status line
that follows every change. SIGHUP (or ``troupe reload``) re-reads the character files: new ones
start, removed ones stop, changed ones restart, the rest keep running (told AGENT_RELOADED, so
their knowledge files are read again), and a file that no longer validates (or cannot be read)
leaves its agent running as it was while the rest of the reload goes ahead. SIGTERM/SIGINT stop the intake, let the replies being written finish
(``TROUPE_STOP_TIMEOUT_S``), close every agent and the database, and exit 0; a second signal
exits at once. When nothing can run the daemon exits with status 78 and says what to configure.

With the console on (``TROUPE_CONSOLE_PORT`` not 0) every character also runs on the web platform,
the console's Chat page, so a character with a model key and no platform token runs; the last
start-up line then says where to talk to it and how to go live. When nothing is configured yet
(no character can run, and every problem is only a setting not set: the model key) the daemon
serves only the console, whose setup page writes what is missing to ``.env`` and reloads.

With a database several daemons share (``TROUPE_DATABASE_URL``), the daemon serves only the
characters (and Discord shards) whose leases it holds, and keeps taking its share as daemons come
and go: :mod:`bot.cluster.placement` decides, :mod:`bot.cluster.host` starts and stops its agents.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import os
import secrets
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from bot import installed_version
from bot.cluster.host import ClusterHost, join_when_able
from bot.cluster.placement import Placement
from bot.config import plugins as plugin_registry
from bot.config.character import LoadResult
from bot.config.settings import DaemonSettings
from bot.config.shards import Shards, shard_count
from bot.daemon.chat import runtime_plugins
from bot.daemon.connecting import connect_or_retry
from bot.daemon.console import ConsoleServer
from bot.daemon.control import ControlServer, DaemonStatus, ReloadSummary
from bot.daemon.hosted import HostedAgent, fingerprint, platform_links, status_line
from bot.daemon.open_files import raise_open_file_limit
from bot.daemon.platform_plans import PlatformPlan, plans_for, preflight, report_gaps, setup_needs
from bot.daemon.reloading import plan_reload, read_characters, record_failures, summary_line
from bot.daemon.signals import install_signal_handlers, remove_signal_handlers
from bot.daemon.store_watch import DATABASE_RETRY_CAP_S, StoreWatch, open_store
from bot.daemon.systemd import Notifier
from bot.daemon.webhooks import WebhookServer, webhook_routes
from bot.kernel import redact
from bot.kernel.background import BackgroundTasks
from bot.kernel.backoff import ExponentialBackoff
from bot.kernel.errors import (
    EXIT_CONFIG,
    EXIT_TEMPFAIL,
    ConfigError,
    ReloadError,
    ReloadFailed,
    StoreLocked,
    reason_for,
)
from bot.kernel.lifecycle import AgentState, DaemonState
from bot.kernel.links import Link, LinkState
from bot.kernel.logs import agent_context
from bot.kernel.metrics import Metrics
from bot.kernel.types import now_ms
from bot.runtime.agent import AgentRuntime, Fence
from bot.runtime.events import AgentReloaded, ServiceError
from bot.runtime.shared import Shared
from bot.store import Store, StoreBackend, application_name, backend_for

__all__ = ["Daemon", "PlatformPlan", "fingerprint"]

#: The links' states that are a service's error (SERVICE_ERROR).
_LINK_FAILURES = frozenset({LinkState.RETRYING, LinkState.FAILED, LinkState.REFUSED})

_log = logging.getLogger(__name__)

_CLOSE_TIMEOUT_S = 10.0
_EXIT_FORCED = 1  # a second signal: stopped without finishing


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
        #: The database's health, wherever the operator looks (readiness, status, systemd, metrics).
        self.store_watch = StoreWatch(self.metrics, self._show_status)
        self.shared = Shared()  # this daemon's secrets, Telegram relay, bot tokens in use
        self.shared.data_dir = settings.data_dir
        self.state = DaemonState.STARTING
        self._agents: dict[str, HostedAgent] = {}  # by agent id, in start order
        self._db: StoreBackend | None = None
        self._stopped = asyncio.Event()
        self._started_at = time.monotonic()
        self._reload_lock = asyncio.Lock()
        self._reload_again = False
        self._background = BackgroundTasks("troupe")  # the daemon's own: they outlive any agent
        #: Where platforms push updates (TELEGRAM_WEBHOOK_URL), for every character of the troupe.
        self.webhooks = WebhookServer(settings)
        #: With a database shared by several daemons: serves the characters whose leases it holds.
        self.cluster: ClusterHost | None = None
        self.daemon_id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self._started_ms = now_ms()
        #: Nothing is configured yet (no model key): the daemon serves only the console, whose
        #: setup page asks for these (for each, any one of the settings would do), then reloads.
        self.setup_needs: tuple[tuple[str, ...], ...] = ()

    # -- what runs ------------------------------------------------------------------------

    @property
    def runtimes(self) -> list[AgentRuntime]:
        """The runtimes of the agents that are up, in start order."""
        return [a.runtime for a in self._agents.values() if a.runtime is not None and a.state is AgentState.RUNNING]

    def _plans_for(self, result: LoadResult) -> list[PlatformPlan]:
        return plans_for(result, self.environ, console=self.console_on)

    @property
    def console_on(self) -> bool:
        """The console is served (``TROUPE_CONSOLE_PORT`` not 0): every character also runs on
        the web platform, its Chat page."""
        return bool(self.settings.console_port)

    def plan(self) -> list[PlatformPlan]:
        """Every (character, platform) pair the character files ask for, with missing settings."""
        return [p for result in self.characters for p in self._plans_for(result)]

    # -- what the control socket and systemd see ------------------------------------------

    def status(self) -> DaemonStatus:
        """Everything ``troupe status`` shows (JSON-able)."""
        return {
            "state": self.state,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self._started_at, 1),
            "version": installed_version(),
            "agents": [a.status() for a in sorted(self._agents.values(), key=lambda a: a.name.casefold())],
            "store": self.store_watch.status(),
        }

    def readiness(self) -> tuple[bool, list[str]]:
        """Ready when running and every agent's every platform is connected."""
        reasons = [] if self.state is DaemonState.RUNNING else [f"the daemon is {self.state}"]
        reasons += self.store_watch.not_ready()
        for agent in self._agents.values():
            reasons += agent.not_ready()
        return not reasons, reasons

    def _link_changed(self, runtime: AgentRuntime, platform: str, link: Link, old: Link | None) -> None:
        agent = runtime.character.name
        if link.state in _LINK_FAILURES:  # SERVICE_ERROR for plugins, once per change
            retrying = link.state is not LinkState.FAILED
            error = ServiceError(service=platform, error=link.detail or link.state.value, retrying=retrying)
            telling = runtime.emit(error)
            try:
                runtime.create_task(telling, f"{platform}:service-error")
            except RuntimeError:  # the runtime is closing: nobody to tell
                telling.close()
        self.metrics.platform_connected.labels(agent=agent, platform=platform).set(link.state is LinkState.CONNECTED)
        self.metrics.token_refused.labels(agent=agent, platform=platform).set(link.state is LinkState.REFUSED)
        if link.state is LinkState.RETRYING and (old is None or old.state is not LinkState.RETRYING):
            self.metrics.reconnects.labels(agent=agent, platform=platform).inc()
        self._show_status()

    def _show_status(self) -> None:
        """systemd's status line, after a change (while running: starting and stopping say their own)."""
        if self.state is DaemonState.RUNNING:
            self.notifier.status(self._status_line())

    def _status_line(self) -> str:
        return self.store_watch.line(status_line(self._agents.values()))

    # -- running --------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to shut down (safe from a signal handler)."""
        self._stopped.set()

    async def run(self) -> int:
        """Run until stopped; returns the exit status."""
        with redact.filtering(self.shared.secrets):  # this daemon's secrets, for as long as it runs
            return await self._run()

    async def _run(self) -> int:
        # Checked before the database is opened: configuration that cannot work creates nothing.
        checks = [preflight(r, self.environ, console=self.console_on) for r in self.characters]
        # Nothing configured yet, with the console on (and one daemon): it asks for what is missing.
        alone = self.settings.database_url is None
        self.setup_needs = setup_needs(checks) if self.console_on and alone else ()
        if not self.setup_needs and report_gaps(self.characters, checks) is not None:
            return EXIT_CONFIG

        raise_open_file_limit()  # before anything opens a file: systemd's default soft limit is 1,024
        control = ControlServer(self, self.settings)
        try:
            await control.start()
        except ConfigError as exc:
            _log.error("%s", exc)
            return EXIT_CONFIG
        console = ConsoleServer(self, self.settings) if self.settings.console_port else None
        try:
            if console is not None:
                await console.start()
                self.shared.secrets.add(console.token)  # the console's token never reaches a log
                self.shared.console_url = console.url  # the log line of an unanswered message links to it
        except ConfigError as exc:
            _log.error("%s", exc)
            await control.close()
            return EXIT_CONFIG
        installed = install_signal_handlers(
            {
                signal.SIGTERM: self._on_stop_signal,
                signal.SIGINT: self._on_stop_signal,
                signal.SIGHUP: self.request_reload,
            }
        )
        self._background.start(self.notifier.keep_alive(), "watchdog")
        try:
            try:
                self._db = await self._open_database()
            except StoreLocked as exc:  # still locked after TROUPE_STORE_WAIT_S: systemd tries again
                _log.error("%s", exc)
                return EXIT_TEMPFAIL
            if self._db is None:
                return 0  # stopped while waiting for it
            self.store_watch.watch(self._db.health)
            try:
                return await self._serve(console)
            finally:
                await self._close_all()
                await self.webhooks.close()  # before the database: a request in progress ends first
                await self._db.close()
                self._db = None
        finally:
            await self._background.close()  # the watchdog, when the database was never opened
            remove_signal_handlers(installed)
            if console is not None:
                await console.close()
            await control.close()
            self.notifier.close()

    async def _open_database(self) -> StoreBackend | None:
        """The database, open (waiting for it: :func:`~bot.daemon.store_watch.open_store`); None if the
        daemon was stopped first."""
        location, name = self.settings.store_location, application_name(self.daemon_id)
        return await open_store(lambda: backend_for(location, name=name), self.notifier, self._stopped, self.settings)

    async def _join(self, cluster: ClusterHost) -> bool:
        """Take this daemon's first share of the troupe, waiting out a database that fails it;
        False if the daemon was stopped first."""
        return await join_when_able(cluster, self._background, self.notifier, self._stopped, DATABASE_RETRY_CAP_S)

    async def _serve(self, console: ConsoleServer | None = None) -> int:
        # The troupe's other daemons, if any, hear this one's news (the Telegram relay) on the bus.
        bus = self.shared.bus = self._database().bus(self.daemon_id)
        if bus.spans_daemons:
            self._background.start(bus.run(), "bus")
        try:
            await self._serve_webhooks()
        except ConfigError as exc:
            _log.error("%s", exc)
            return EXIT_CONFIG
        if self.settings.database_url is not None:
            # Several daemons may share this troupe: serve the characters whose leases this one
            # holds, and keep taking its share as daemons come and go.
            self.cluster = ClusterHost(self, self._database(), self.daemon_id, self.settings, self._started_ms)
            if not await self._join(self.cluster):
                return 0  # stopped while waiting for the database
        elif not self.setup_needs:
            await asyncio.gather(*(self.launch(r) for r in self.characters))
            links = list(platform_links(self._agents.values()))
            if not any(link.state is not LinkState.FAILED for link in links):
                _log.error("no agent could connect to a platform; see the errors above")
                return EXIT_CONFIG
        self.state = DaemonState.RUNNING
        status = self._status_line()
        _log.info("troupe running: %s", status)
        if console is not None and self.setup_needs:
            _log.warning(
                "nothing is configured yet, so no character runs: open the console at %ssetup to set %s "
                "(or set it in .env and restart)",
                console.url,
                " and ".join(" or ".join(group) for group in self.setup_needs),
            )
        elif console is not None:
            self._point_to_console(console)
        self.notifier.ready(status)
        await self._stopped.wait()
        self.state = DaemonState.STOPPING
        in_flight = sum(rt.in_flight for rt in self.runtimes)
        waiting = f"; waiting for {in_flight} {'reply' if in_flight == 1 else 'replies'} in flight" if in_flight else ""
        _log.info("stopping%s", waiting)
        self.notifier.stopping(f"stopping{waiting}")
        await self._drain_all()
        if self.cluster is not None:
            await self._background.close()  # no placement round after this point
            await self.cluster.leave()
        return 0

    async def _serve_webhooks(self) -> None:
        """Serve the webhooks of every character of the troupe, served here or not (a reverse
        proxy may send to any daemon); on a reload, those of the files read again."""
        await self.webhooks.update(webhook_routes(self.characters, self.environ, self))

    def store_for(self, agent_id: str) -> Store:
        """One character's store (``WebhookHost``: a webhook keeps what it is given there)."""
        return self._database().for_agent(agent_id)

    def _point_to_console(self, console: ConsoleServer) -> None:
        """The start-up's last line when some characters run only in the console: where to talk
        to them, and how to take them live."""
        provided = {name for name, meta in plugin_registry.available().items() if meta.with_console}
        web_only = [
            agent.name
            for agent in self._agents.values()
            if agent.runtime is not None and {name for name, _ in agent.runtime.links.items()} <= provided
        ]
        if web_only:
            _log.info(
                "%s %s only in the console: talk to %s at %schat; to go live on Discord or Telegram, "
                "give %s a bot token (see docs/discord.md and docs/telegram.md)",
                ", ".join(web_only),
                "runs" if len(web_only) == 1 else "run",
                "it" if len(web_only) == 1 else "them",
                console.url,
                "it" if len(web_only) == 1 else "each",
            )

    # -- placement (several daemons, one troupe: bot/cluster/host.py) -------------------------

    @property
    def placement(self) -> Placement | None:
        """Which units of the troupe this daemon serves; None without a shared database."""
        return None if self.cluster is None else self.cluster.placement

    @property
    def agents(self) -> Mapping[str, HostedAgent]:
        """The agents this daemon runs (or tried to), by agent id, in start order (``Agents``)."""
        return self._agents

    async def checkpoint(self) -> bool:
        """Empty the database's write-ahead log after a forget (``ConsoleView``): True when it was
        emptied, False when a reader held it (a later checkpoint finishes the job)."""
        if self._db is None:
            return False
        return await self._db.checkpoint()

    @property
    def redactor(self) -> redact.Redactor:
        """The secrets no log line shows (``ConsoleView``: the console's log page scrubs them too)."""
        return self.shared.secrets

    async def troupe(self) -> Mapping[str, object] | None:
        """The whole troupe, read from the shared database now (``DaemonView``); None on SQLite."""
        if self.cluster is None or self._db is None:  # the database is closed: the daemon is stopping
            return None
        return await self.cluster.troupe()

    async def _connect_sharded(self, connect: Callable[..., Awaitable[None]], runtime: AgentRuntime) -> None:
        """Connect a platform that shards (Discord) with the shards of the character's bot this
        daemon serves — all of them without placement —, or unsharded when it has one
        (DISCORD_SHARD_COUNT, bot/config/shards.py; a bad value is a ConfigError)."""
        count = shard_count(runtime.character, self.environ)
        if count == 1:
            shards = None
        elif self.cluster is None:
            shards = Shards.all(count)
        else:
            shards = self.cluster.shards_held(runtime.character.agent_id, count)
        await connect(runtime, shards=shards)

    # -- one agent ------------------------------------------------------------------------

    async def launch(self, result: LoadResult, *, fence: Fence | None = None, home: bool = True) -> HostedAgent:
        """Start one character's agent and connect it to its platforms (sending only while
        ``fence`` allows, when given); away from its ``home`` only to the platforms that shard."""
        character = result.raise_for_problems()
        agent = HostedAgent(result, fingerprint(result))
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
            runtime.fence = fence
            runtime.home = home
            runtime.links.on_change = lambda platform, link, old: self._link_changed(runtime, platform, link, old)
            try:
                await runtime.start()
            except Exception as exc:
                _log.error("%s did not start: %s", character.name, exc)
                agent.state, agent.error = AgentState.FAILED, reason_for(exc, character.name)
                return agent
            agent.runtime = runtime
            agent.state = AgentState.RUNNING
            self.metrics.agents.set(len(self.runtimes))
            known = plugin_registry.available()
            plans = self._plans_for(result)
            agent.skipped = "; ".join(p.gap for p in plans if not p.ready)
            ready = [p for p in plans if p.ready and (home or known[p.platform].shardable)]
            await asyncio.gather(*(self._connect(agent, runtime, plan) for plan in ready))
        return agent

    def _database(self) -> StoreBackend:
        assert self._db is not None, "the database is open only while the daemon runs"
        return self._db

    async def _connect(self, agent: HostedAgent, runtime: AgentRuntime, plan: PlatformPlan) -> None:
        known = plugin_registry.available()
        module = importlib.import_module(f"platforms.{known[plan.platform].name}")
        connect = getattr(module, "connect", None)
        if connect is None:
            _log.error("%s: the %s platform is not available in this build yet", plan.agent, plan.platform)
            runtime.links.set(plan.platform, LinkState.FAILED, "not available in this build")
            return
        if known[plan.platform].shardable:
            connect = functools.partial(self._connect_sharded, connect)
        backoff = ExponentialBackoff(self.settings.reconnect_base_s, self.settings.reconnect_cap_s)
        await connect_or_retry(runtime, plan, connect, backoff)

    async def retire(self, agent_id: str) -> None:
        """Stop a running agent and forget it (``Agents``)."""
        await self._retire(self._agents.pop(agent_id))

    async def _retire(self, agent: HostedAgent) -> None:
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

    async def reload(self) -> ReloadSummary:
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
        _log.info("reloaded: %s", summary_line(summary))
        return summary

    async def _apply_reload(self) -> ReloadSummary:
        results, self.environ = await asyncio.to_thread(read_characters, self.sources or [])  # file reads
        loaded = results
        if self.cluster is not None:
            # This daemon applies the change to the characters it serves; the others' daemons do
            # theirs, and new characters are taken by whichever daemon's share has room.
            self.cluster.set_characters(r for r in results if r.ok)
            results = [r for r in results if r.ok and r.character and r.character.agent_id in self._agents]
        plan = plan_reload(self._agents, results)
        for agent, result in plan.unchanged:
            agent.result = result  # same agent; the file may have moved
            if agent.runtime is not None:  # what it reads from disk (knowledge files) may have changed
                with agent_context(agent.name):
                    await agent.runtime.emit(AgentReloaded(runtime=agent.runtime))
        # Stop first: a restarted agent's new self needs the bot tokens its old self holds.
        await asyncio.gather(*(self._retire(a) for a in plan.stopping))
        for agent in plan.stopping:
            self._agents.pop(agent.character.agent_id, None)
        launch = self.launch if self.cluster is None else self.cluster.launch  # placed: fenced
        launched = await asyncio.gather(*(launch(r) for r in plan.starting))
        record_failures(plan.summary, launched)
        if self.cluster is not None:
            self.characters = [r for r in loaded if r.ok]
            await self.cluster.compare_files()
        else:
            self.characters = [a.result for a in self._agents.values()]
        try:
            await self._serve_webhooks()
        except ConfigError as exc:  # the port was bound before: only a new webhook could fail so
            _log.error("%s", exc)
        if self.setup_needs:  # set up through the console: is anything still missing?
            ok = [r for r in loaded if r.ok]
            self.setup_needs = setup_needs([preflight(r, self.environ, console=True) for r in ok])
        return plan.summary

    # -- signals --------------------------------------------------------------------------

    def _on_stop_signal(self) -> None:
        if self._stopped.is_set():
            _log.warning("second stop signal: exiting now, without waiting for replies in flight")
            logging.shutdown()
            os._exit(_EXIT_FORCED)
        self.stop()
