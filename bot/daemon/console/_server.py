"""The console's HTTP server: the daemon's aiohttp, with the health port's guards and limits."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from urllib.parse import quote

import jinja2
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from bot.config.settings import DaemonSettings
from bot.daemon.console._audit import AUDIT_FILE, AuditLog
from bot.daemon.console._context import CONSOLE, Console
from bot.daemon.console._guards import check_csrf, require_login
from bot.daemon.console._history import MetricHistory
from bot.daemon.console._log_ring import LogRing
from bot.daemon.console._routes import NAV, add_routes
from bot.daemon.console._sessions import Sessions
from bot.daemon.console._token import ConsoleToken, load_token
from bot.daemon.console._view import ConsoleView
from bot.daemon.control._guards import is_loopback, same_origin_only
from bot.daemon.control._limits import LimitedSite, cannot_listen, handler_options, track_busy
from bot.kernel.background import BackgroundTasks

__all__ = ["ConsoleServer"]

_log = logging.getLogger("bot.daemon.console")

_WHERE = "console"
#: How long close() waits for requests in progress before cutting them off.
_SHUTDOWN_TIMEOUT_S = 5.0
_TEMPLATES = Path(__file__).parent / "templates"


class ConsoleServer:
    """Serves the console on ``TROUPE_CONSOLE_HOST:TROUPE_CONSOLE_PORT``.

    ``start()`` raises :class:`~bot.kernel.errors.ConfigError` when it cannot (the port is taken,
    the token file cannot be made). ``close()`` may be called more than once.
    """

    def __init__(self, view: ConsoleView, settings: DaemonSettings) -> None:
        self.view = view
        self.settings = settings
        self.host = settings.console_host
        self.port: int | None = None
        self.console: Console | None = None
        self._runner: web.AppRunner | None = None
        self._background = BackgroundTasks("troupe:console")

    @property
    def url(self) -> str:
        """Where the console answers (once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def token(self) -> str:
        """The login token (once started): for the daemon's redaction, never for a log."""
        assert self.console is not None, "the console is not started"
        return self.console.token.value

    def login_link(self) -> str:
        """The link that logs in at once: it holds the token, so it is shown, never logged."""
        assert self.console is not None, "the console is not started"
        return f"{self.url}login?token={quote(self.token, safe='')}"

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the console is already started")
        token = await asyncio.to_thread(load_token, self.settings)
        self._background = BackgroundTasks("troupe:console")
        self.console = Console(
            view=self.view,
            settings=self.settings,
            token=token,
            sessions=Sessions(),
            audit=AuditLog(self.settings.data_dir / AUDIT_FILE),
            templates=jinja2.Environment(
                loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
            ),
            history=MetricHistory(self.view.metrics),
            logs=LogRing(self.view.redactor),
            nav=list(NAV),
        )
        # For the console's lifetime: its log lines and a sample of the metrics every minute.
        self.console.logs.install()
        self.console.history.sample()
        self._background.start(self.console.history.run(), "metric history")
        busy: set[RequestHandler] = set()
        runner = web.AppRunner(
            self._app(self.console, busy),
            access_log=None,
            shutdown_timeout=_SHUTDOWN_TIMEOUT_S,
            **handler_options(_WHERE),
        )
        await runner.setup()
        self._runner = runner
        try:
            await LimitedSite(runner, _WHERE, busy, address=(self.host, self.settings.console_port)).start()
        except OSError as exc:
            await self.close()
            off = "set TROUPE_CONSOLE_PORT=0 to turn the console off"
            port = self.settings.console_port
            raise cannot_listen(exc, "the console", self.host, port, "TROUPE_CONSOLE", off=off) from None
        ports = [address[1] for address in runner.addresses if isinstance(address, tuple)]
        self.port = ports[0] if ports else self.settings.console_port
        self._announce(token)

    async def close(self) -> None:
        if self.console is not None:
            self.console.logs.close()  # first: the live log streams end, and do not hold the shutdown
        await self._background.close()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    def _announce(self, token: ConsoleToken) -> None:
        if not is_loopback(self.host):
            _log.warning(
                "the console listens on %s, beyond this machine (TROUPE_CONSOLE_HOST): serve it behind "
                "HTTPS (see docs/console.md)",
                self.host,
            )
        _log.info("console at %s (login token in %s)", self.url, token.source)
        if sys.stderr.isatty():
            # As Jupyter does: the link with the token, once, on the terminal only (never in a log).
            print(f"\n    Open the troupe console: {self.login_link()}\n", file=sys.stderr, flush=True)

    def _app(self, console: Console, busy: set[RequestHandler]) -> web.Application:
        app = web.Application(
            middlewares=[track_busy(busy), same_origin_only(self._accepts_host), require_login, check_csrf],
            client_max_size=1024 * 1024,
        )
        app[CONSOLE] = console
        add_routes(app)
        return app

    def _accepts_host(self, host: str) -> bool:
        """On a loopback bind only loopback names (a DNS-rebinding page sends its own name); a bind
        beyond loopback may be reached under any of the machine's names, or a proxy's."""
        return not is_loopback(self.host) or is_loopback(host)
