"""The daemon's control and health endpoints, and the client ``troupe status``/``reload`` use.

::

    server = ControlServer(view, settings)      # view: the daemon, as a DaemonView
    await server.start()                        # Unix socket always; TCP when health_port is set
    ...
    await server.close()

    status, body = await call(settings.control_path, "GET", "/status")

Routes::

    GET  /healthz   200 {"status": "ok", "state": ...}         the loop answered
    GET  /readyz    200 {"ready": true} | 503 {"ready": false, "reasons": [...]}
    GET  /metrics   200 Prometheus text format 0.0.4
    GET  /status    200 the daemon's status (see format_status)
    POST /reload    200 the reload's summary | 409 one is already running | 500 {"error": ...}

The Unix socket is created mode 0600: its file mode is the protection, so it needs no token and
serves everything. The TCP listener (the health port) binds loopback unless
``TROUPE_HEALTH_TOKEN`` is set, and is guarded so that neither another local user nor a web page
open in a browser on this machine can change anything or read more than the daemon's state:

- With a token, every request must carry ``Authorization: Bearer <token>`` (else 401).
- Without one, only reading is allowed: ``POST /reload`` is refused (403), and ``/status``
  answers no more than ``/healthz`` does. ``/readyz`` and ``/metrics`` answer in full (agent
  names, platform states, counters): a local probe and Prometheus need them.
- Whatever the token, a request sent by a web page of another origin is refused (403): one with
  an ``Origin`` that is not the endpoint's own, with ``Sec-Fetch-Site`` other than
  ``same-origin``/``none``, or, on a loopback bind, with a ``Host`` that is not a loopback
  address (a DNS-rebinding page names its own host).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import ipaddress
import logging
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePath
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from .errors import ConfigError
from .lifecycle import AgentState
from .links import LinkState
from .metrics import Metrics
from .settings import DaemonSettings

__all__ = [
    "ControlServer",
    "DaemonNotAnswering",
    "DaemonNotRunning",
    "DaemonView",
    "call",
    "format_reload",
    "format_status",
]

_log = logging.getLogger(__name__)

#: sun_path holds 108 bytes on Linux, one of them the terminating NUL.
_MAX_SOCKET_PATH = 107
_METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: How long close() waits for requests in progress (a reload, say) before cutting them off.
_SHUTDOWN_TIMEOUT_S = 5.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class DaemonView(Protocol):
    """What the control server needs of the daemon."""

    metrics: Metrics

    def status(self) -> dict[str, Any]:
        """JSON-able status; schema in :func:`format_status`."""
        ...

    def readiness(self) -> tuple[bool, list[str]]:
        """(ready, the reasons it is not)."""
        ...

    async def reload(self) -> dict[str, Any]:
        """Run a reload; its JSON-able summary (schema in :func:`format_reload`)."""
        ...


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


class ControlServer:
    """Serves the routes above on the control socket and, when configured, on a TCP port.

    ``start()`` raises :class:`~bot.errors.ConfigError` when it cannot serve as configured
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
        sock = await self._bind_unix_socket()
        try:
            runner = await self._start_runner(self._app(tcp=False))
            await web.SockSite(runner, sock).start()
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
        if not _is_loopback(self.health_host) and self._token is None:
            raise ConfigError(
                f"TROUPE_HEALTH_HOST={self.health_host} would serve /status and /metrics beyond this "
                "machine without authentication; set TROUPE_HEALTH_TOKEN or bind 127.0.0.1"
            )

    async def _start_runner(self, app: web.Application) -> web.AppRunner:
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=_SHUTDOWN_TIMEOUT_S)
        await runner.setup()
        self._runners.append(runner)
        return runner

    async def _start_tcp(self) -> None:
        runner = await self._start_runner(self._app(tcp=True))
        try:
            await web.TCPSite(runner, self.health_host, self.health_port).start()
        except OSError as exc:
            where = f"{self.health_host}:{self.health_port}"
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(
                    f"cannot serve health on {where}: the port is in use; stop what uses it or "
                    "choose another TROUPE_HEALTH_PORT"
                ) from None
            raise ConfigError(
                f"cannot serve health on {where}: {exc.strerror or exc}; check TROUPE_HEALTH_HOST "
                "and TROUPE_HEALTH_PORT"
            ) from None
        ports = [address[1] for address in runner.addresses if isinstance(address, tuple)]
        self.tcp_port = ports[0] if ports else None
        _log.info(
            "health endpoint listening on http://%s:%s%s",
            self.health_host,
            self.tcp_port,
            " (token required)" if self._token else "",
        )

    async def _bind_unix_socket(self) -> socket.socket:
        path = self.path
        if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
            raise ConfigError(
                f"the control socket path is too long for a Unix socket ({len(os.fsencode(path))} "
                f"bytes, at most {_MAX_SOCKET_PATH}): {path}; set TROUPE_CONTROL_SOCKET to a "
                "shorter path"
            )
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create the control socket's directory {path.parent}: "
                f"{exc.strerror or exc}; set TROUPE_CONTROL_SOCKET"
            ) from None
        await self._clear_stale_socket()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # umask makes the file private from the moment it exists (no window before the chmod).
        # 0o077, not 0o177: anything another thread creates meanwhile stays usable by its owner.
        old_umask = os.umask(0o077)
        try:
            sock.bind(os.fspath(path))
            os.chmod(path, 0o600)
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:  # another daemon bound it after our check
                raise ConfigError(self._running_message()) from None
            raise ConfigError(
                f"cannot create the control socket {path}: {exc.strerror or exc}; set TROUPE_CONTROL_SOCKET"
            ) from None
        finally:
            os.umask(old_umask)
        self._socket_inode = os.lstat(path).st_ino
        sock.setblocking(False)
        return sock

    async def _clear_stale_socket(self) -> None:
        """Remove a socket file nobody answers on; refuse if a daemon answers or it is not a socket."""
        path = self.path
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(mode):
            raise ConfigError(f"{path} exists and is not a socket; remove it or set TROUPE_CONTROL_SOCKET")
        try:
            _, writer = await asyncio.wait_for(asyncio.open_unix_connection(os.fspath(path)), timeout=2.0)
        except ConnectionRefusedError:
            _log.info("removing stale control socket %s (nothing answers on it)", path)
            path.unlink(missing_ok=True)
            return
        except (TimeoutError, OSError) as exc:
            # Cannot tell whether a daemon owns it (backlog full, permission denied): do not steal it.
            reason = "it did not accept a connection" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
            raise ConfigError(
                f"cannot tell whether another troupe daemon owns {path} ({reason}); stop it or "
                "set TROUPE_CONTROL_SOCKET"
            ) from None
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        raise ConfigError(self._running_message())

    def _running_message(self) -> str:
        return f"another troupe daemon is running: {self.path} answers; stop it or set TROUPE_CONTROL_SOCKET"

    # -- routes ------------------------------------------------------------------------------

    def _app(self, *, tcp: bool) -> web.Application:
        middlewares: list[Any] = [_json_errors]
        if tcp:
            middlewares += [_same_origin_only(self._accepts_host), _authorise(self._token)]
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
        return not _is_loopback(self.health_host) or _is_loopback(host)

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
        return web.json_response(self.view.status())

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


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Errors as JSON, like every other answer (aiohttp's own are plain text)."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return web.json_response({"error": exc.reason}, status=exc.status, headers=headers)
    except Exception:  # noqa: BLE001 -- a bug in one route must answer 500, not drop the connection
        _log.exception("control request %s %s failed", request.method, request.path)
        return web.json_response({"error": "internal error; see the daemon's log"}, status=500)


#: What a browser sends when the page itself is on this endpoint, or when no page is involved.
_FETCH_SITES_ACCEPTED = ("same-origin", "none")
_UNSAFE_METHODS_HINT = (
    "changing the daemon over HTTP needs TROUPE_HEALTH_TOKEN (sent as Authorization: Bearer "
    "<token>); or run `troupe reload` on this machine"
)


def _refused(reason: str) -> web.Response:
    return web.json_response({"error": f"refused: {reason}"}, status=403)


def _same_origin_only(
    accepts_host: Callable[[str], bool],
) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """Refuse what a web page of another origin makes a browser send (CSRF, DNS rebinding)."""

    @web.middleware
    async def same_origin_only(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            host = request.url.host or ""
        except ValueError:
            host = ""
        if not host or not accepts_host(host):
            return _refused(f"Host {request.host!r} is not this endpoint's address")
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"{request.scheme}://{request.host}":
            return _refused("requests from web pages of another origin are not served")
        fetch_site = request.headers.get("Sec-Fetch-Site")
        if fetch_site is not None and fetch_site not in _FETCH_SITES_ACCEPTED:
            return _refused("requests from web pages of another origin are not served")
        return await handler(request)

    return same_origin_only


def _authorise(token: bytes | None) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """With a token, every request carries it; without one, requests only read."""

    @web.middleware
    async def authorise(request: web.Request, handler: Handler) -> web.StreamResponse:
        if token is None:
            if request.method not in ("GET", "HEAD"):
                return web.json_response({"error": f"refused: {_UNSAFE_METHODS_HINT}"}, status=403)
            return await handler(request)
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token):
            return web.json_response(
                {"error": "unauthorized: send Authorization: Bearer <TROUPE_HEALTH_TOKEN>"},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="troupe"'},
            )
        return await handler(request)

    return authorise


# -- client ----------------------------------------------------------------------------------


class DaemonNotRunning(Exception):
    """The CLI cannot reach a daemon on the control socket; the message is fit to print."""

    def __init__(self, path: Path, message: str | None = None) -> None:
        self.path = path
        super().__init__(
            message
            or f"no troupe daemon is running: nothing listens on {path} (start it with "
            "`troupe start`, or point TROUPE_CONTROL_SOCKET at its socket)"
        )


class DaemonNotAnswering(DaemonNotRunning):
    """Something holds the socket but gave no answer (timeout, permission, dropped connection)."""


async def call(path: Path, method: str, route: str, *, timeout: float = 30.0) -> tuple[int, Any]:
    """One request over the control socket: (HTTP status, the JSON body, or the text if not JSON)."""
    connector = aiohttp.UnixConnector(path=os.fspath(path))
    try:
        async with (
            aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=timeout)) as s,
            s.request(method, f"http://troupe{route}") as response,
        ):
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()
    except aiohttp.ClientConnectorError as exc:
        if isinstance(exc.os_error, (FileNotFoundError, ConnectionRefusedError)):
            raise DaemonNotRunning(path) from None
        if isinstance(exc.os_error, PermissionError):
            raise DaemonNotAnswering(
                path, f"cannot connect to {path}: permission denied (run this as the user the daemon runs as)"
            ) from None
        raise DaemonNotAnswering(path, f"cannot connect to {path}: {exc.os_error.strerror or exc}") from None
    except TimeoutError:
        raise DaemonNotAnswering(path, f"the daemon did not answer within {timeout:g} s ({path})") from None
    except aiohttp.ClientError as exc:
        raise DaemonNotAnswering(path, f"the daemon on {path} did not answer properly: {exc}") from None


# -- human output ---------------------------------------------------------------------------


def _duration(seconds: float) -> str:
    """``45s``, ``1m33s``, ``2h05m``, ``3d04h``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _one_line(text: str) -> str:
    """Multi-line reasons (a CharacterError's "file:\n  path: problem" list) on one line."""
    out = ""
    for line in filter(None, (line.strip() for line in str(text).splitlines())):
        out = f"{out}{' ' if out.endswith(':') else '; ' if out else ''}{line}"
    return out


def _columns(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return [(indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip() for row in rows]


def format_status(status: dict[str, Any]) -> str:
    """``troupe status`` output: a summary line, then agent / platform / state / detail columns.

    ``status`` is what ``GET /status`` returns::

        {"state": "running", "pid": 4242, "uptime_s": 93.5, "version": "0.1.0",
         "agents": [{"name": "Ada", "id": "...", "state": "running", "in_flight": 0,
                     "platforms": {"discord": {"state": "connected", "detail": ""}}}]}

    An agent that is not running shows its state next to its name; one without platforms
    (failed, say) gets a single row with ``-`` for the platform.
    """
    agents = status.get("agents") or []
    rows: list[list[str]] = []
    up = total = in_flight = 0
    for agent in agents:
        name, state = str(agent.get("name", "?")), str(agent.get("state", "?"))
        in_flight += int(agent.get("in_flight") or 0)
        platforms: dict[str, Any] = agent.get("platforms") or {}
        if not platforms:
            rows.append([name, "-", state, _one_line(agent.get("detail", ""))])
            continue
        label = name if state == AgentState.RUNNING else f"{name} ({state})"
        for platform, connection in platforms.items():
            total += 1
            up += connection.get("state") == LinkState.CONNECTED
            rows.append([label, platform, str(connection.get("state", "?")), _one_line(connection.get("detail", ""))])
    summary = [_plural(len(agents), "agent"), f"{up} of {_plural(total, 'platform connection')} up"]
    if in_flight:
        summary.append(f"{_plural(in_flight, 'message')} in flight")
    header = (
        f"troupe {status.get('state', '?')} (pid {status.get('pid', '?')}, "
        f"up {_duration(float(status.get('uptime_s') or 0))}): {', '.join(summary)}"
    )
    return "\n".join([header, *_columns(rows)])


def format_reload(summary: dict[str, Any]) -> str:
    """``troupe reload`` output: what changed on one line, then one line per problem.

    ``summary`` is what ``POST /reload`` returns::

        {"started": ["Cleo"], "stopped": ["Brann"], "restarted": ["Ada"], "unchanged": ["Iris"],
         "kept": [{"name": "Dora", "file": "/etc/troupe/characters/dora.json", "reason": "..."}],
         "failed": [{"name": "Eve", "reason": "..."}]}

    ``kept``: the file changed but no longer validates, so the agent runs on with the version it
    had. ``failed``: the agent could not be started.
    """
    parts = [
        f"{verb} {', '.join(map(str, summary[verb]))}"
        for verb in ("started", "stopped", "restarted")
        if summary.get(verb)
    ]
    unchanged = len(summary.get("unchanged") or [])
    if unchanged:
        parts.append(f"{unchanged} unchanged")
    lines = [f"reloaded: {'; '.join(parts) if parts else 'no characters'}"]
    for kept in summary.get("kept") or []:
        name, file = kept.get("name"), kept.get("file")
        what = PurePath(file).name if file else name or "a character file"
        who = f"{name} keeps running" if name else "the agent keeps running"
        lines.append(
            f"  {what} no longer validates ({_one_line(kept.get('reason', ''))}); {who} with the previous version"
        )
    for failed in summary.get("failed") or []:
        lines.append(
            f"  {failed.get('name') or failed.get('file') or '?'} failed to start: "
            f"{_one_line(failed.get('reason', ''))}"
        )
    return "\n".join(lines)
