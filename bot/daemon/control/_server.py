"""The control server: the routes on the control socket and, when configured, the health port."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Middleware
from aiohttp.web_protocol import RequestHandler

from bot.config.settings import DaemonSettings
from bot.daemon.control._guards import authorise, is_loopback, json_errors, same_origin_only
from bot.daemon.control._limits import LimitedSite, cannot_listen, handler_options, track_busy
from bot.daemon.control._socket import bind_unix_socket
from bot.kernel.errors import ConfigError
from bot.kernel.metrics import Metrics

__all__ = ["ControlServer", "DaemonView"]

# Named after the public module, as before it was split: log lines read the same.
_log = logging.getLogger("bot.daemon.control")

_METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_SOCKET = "control socket"
_PORT = "health port"
#: How long close() waits for requests in progress (a reload, say) before cutting them off.
_SHUTDOWN_TIMEOUT_S = 5.0


class DaemonView(Protocol):
    """What the control server needs of the daemon."""

    metrics: Metrics

    def status(self) -> Mapping[str, object]:
        """JSON-able status (a :class:`DaemonStatus`); schema in :func:`format_status`."""
        ...

    def readiness(self) -> tuple[bool, list[str]]:
        """(ready, the reasons it is not)."""
        ...

    async def troupe(self) -> Mapping[str, object] | None:
        """The whole troupe when several daemons share the database (a :class:`TroupeStatus`),
        read now; None for a daemon on its own."""
        ...

    async def reload(self) -> Mapping[str, object]:
        """Run a reload; its JSON-able summary (a :class:`ReloadSummary`; see :func:`format_reload`)."""
        ...


class ControlServer:
    """Serves the routes above on the control socket and, when configured, on a TCP port.

    ``start()`` raises :class:`~bot.kernel.errors.ConfigError` when it cannot serve as configured
    (another daemon owns the socket, the port is taken, a public bind without a token) and
    leaves nothing bound behind. ``close()`` may be called more than once.
    """

    def __init__(self, view: DaemonView, settings: DaemonSettings) -> None:
        self.view = view
        self.path = Path(settings.control_path)
        self.health_port = settings.health_port
        self.health_host = settings.health_host
        token = settings.health_token.get_secret_value() if settings.health_token is not None else ""
        # A blank token would let "Authorization: Bearer " through; it counts as unset.
        self._token: bytes | None = token.strip().encode() or None
        self.tcp_port: int | None = None
        self._runners: list[web.AppRunner] = []
        self._socket_inode: int | None = None
        self._reloading = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind the control socket, then the TCP port if configured, and start answering."""
        if self._runners:
            raise RuntimeError("the control server is already started")
        self._check_tcp_settings()  # before binding anything, so a bad setting leaves no socket behind
        sock, self._socket_inode = await bind_unix_socket(self.path)
        try:
            busy: set[RequestHandler] = set()
            runner = await self._start_runner(self._app(busy, tcp=False), _SOCKET)
            await LimitedSite(runner, _SOCKET, busy, sock=sock).start()
            _log.info("control socket listening on %s", self.path)
            if self.health_port is not None:
                await self._start_tcp()
        except BaseException:
            await self.close()
            sock.close()  # after close(): once served, the server must let go of it first
            raise

    async def close(self) -> None:
        """Stop answering and remove the socket file (only if it is still ours)."""
        runners, self._runners = self._runners, []
        for runner in reversed(runners):
            await runner.cleanup()
        self.tcp_port = None
        if self._socket_inode is not None:
            with contextlib.suppress(OSError):
                if os.lstat(self.path).st_ino == self._socket_inode:
                    self.path.unlink()
            self._socket_inode = None

    def _check_tcp_settings(self) -> None:
        if self.health_port is None:
            return
        if not is_loopback(self.health_host) and self._token is None:
            raise ConfigError(
                f"TROUPE_HEALTH_HOST={self.health_host} would serve /status and /metrics beyond this "
                "machine without authentication; set TROUPE_HEALTH_TOKEN or bind 127.0.0.1"
            )

    async def _start_runner(self, app: web.Application, where: str) -> web.AppRunner:
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=_SHUTDOWN_TIMEOUT_S, **handler_options(where))
        await runner.setup()
        self._runners.append(runner)
        return runner

    async def _start_tcp(self) -> None:
        assert self.health_port is not None
        busy: set[RequestHandler] = set()
        runner = await self._start_runner(self._app(busy, tcp=True), _PORT)
        try:
            await LimitedSite(runner, _PORT, busy, address=(self.health_host, self.health_port)).start()
        except OSError as exc:
            raise cannot_listen(exc, "health", self.health_host, self.health_port, "TROUPE_HEALTH") from None
        ports = [address[1] for address in runner.addresses if isinstance(address, tuple)]
        self.tcp_port = ports[0] if ports else None
        _log.info(
            "health endpoint listening on http://%s:%s%s",
            self.health_host,
            self.tcp_port,
            " (token required)" if self._token else "",
        )

    # -- routes ------------------------------------------------------------------------------

    def _app(self, busy: set[RequestHandler], *, tcp: bool) -> web.Application:
        middlewares: list[Middleware] = [track_busy(busy), json_errors]
        if tcp:
            middlewares += [same_origin_only(self._accepts_host), authorise(self._token)]
        # Whoever may use the Unix socket (its owner) or sends the token sees everything.
        authorised = not tcp or self._token is not None
        app = web.Application(middlewares=middlewares)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/status", self._status if authorised else self._healthz)
        app.router.add_post("/reload", self._reload)
        return app

    def _accepts_host(self, host: str) -> bool:
        """Whether ``host`` (the Host header's name, without the port) names this endpoint.

        On a loopback bind only loopback names do: a DNS-rebinding page sends its own name. A
        bind beyond loopback always has a token, which no page can get, and the machine may be
        reached under any of its names, so any name does.
        """
        return not is_loopback(self.health_host) or is_loopback(host)

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "state": self.view.status().get("state")})

    async def _readyz(self, request: web.Request) -> web.Response:
        ready, reasons = self.view.readiness()
        if ready:
            return web.json_response({"ready": True})
        return web.json_response({"ready": False, "reasons": list(reasons)}, status=503)

    async def _metrics(self, request: web.Request) -> web.Response:
        # content_type= cannot carry the version parameter; set the header whole.
        return web.Response(text=self.view.metrics.render(), headers={"Content-Type": _METRICS_TYPE})

    async def _status(self, request: web.Request) -> web.Response:
        status = dict(self.view.status())
        troupe = await self.view.troupe()
        if troupe is not None:
            status["troupe"] = troupe
        return web.json_response(status)

    async def _reload(self, request: web.Request) -> web.Response:
        if self._reloading:
            return web.json_response(
                {"error": "a reload is already running; try again when it has finished"}, status=409
            )
        self._reloading = True
        try:
            summary = await self.view.reload()
        except Exception as exc:  # noqa: BLE001 -- whatever went wrong, the caller gets a 500 saying what
            _log.exception("reload requested over the control socket failed")
            return web.json_response({"error": str(exc) or type(exc).__name__}, status=500)
        finally:
            self._reloading = False
        return web.json_response(summary)
