"""Bounds on what a client of the control server can hold: connections, time, log lines.

The health port is open to every local user without a token, so nothing one of them does may use
up the daemon's open files: a connection that has not sent a whole request within the idle time
is closed, and a server keeps at most a fixed number of connections. When one more arrives at the
limit, the connection idle longest (none of its requests being answered) is closed to make room;
only when every connection is busy with a request is the new one refused (503). Holding
connections open therefore cannot keep a health check out.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler

from bot.kernel.errors import ConfigError

__all__ = [
    "MAX_CONNECTIONS",
    "IDLE_TIMEOUT_S",
    "LimitedSite",
    "OneLineRequestErrors",
    "cannot_listen",
    "track_busy",
]

# Named after the public module, as before it was split: log lines read the same.
_log = logging.getLogger("bot.daemon.control")

#: Connections one server (the socket, the port) keeps open at most. Far below the 1,024 open
#: files a process gets by default, and far above what status, reload and a scraper need.
MAX_CONNECTIONS = 64
#: From accepting a connection to the end of a request's head, and between keep-alive requests.
IDLE_TIMEOUT_S = 10.0
#: How long a request's unread body is read and dropped after its answer before closing.
LINGER_S = 2.0
#: A client's malformed request is quoted in a log line up to this many characters.
_QUOTE = 160

_REFUSAL = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def cannot_listen(exc: OSError, serving: str, host: str, port: int, setting: str, *, off: str = "") -> ConfigError:
    """The error for a port that could not be bound: what to change, named by its ``setting``
    prefix (``TROUPE_HEALTH``), and ``off``, how to do without it, when there is a way."""
    where = f"{host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return ConfigError(
            f"cannot serve {serving} on {where}: the port is in use; stop what uses it"
            f"{',' if off else ' or'} choose another {setting}_PORT{f', or {off}' if off else ''}"
        )
    return ConfigError(
        f"cannot serve {serving} on {where}: {exc.strerror or exc}; check {setting}_HOST and {setting}_PORT"
    )


def handler_options(where: str) -> dict[str, Any]:
    """What the AppRunner passes each connection's RequestHandler: its timeouts and its logger."""
    return {
        "keepalive_timeout": IDLE_TIMEOUT_S,
        "lingering_time": LINGER_S,
        "logger": OneLineRequestErrors(logging.getLogger("aiohttp.server"), where),
    }


class OneLineRequestErrors(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's server logger, with a malformed request logged in one WARNING line.

    aiohttp logs each request it cannot parse with its whole traceback (nine lines) at ERROR;
    what a client sends wrong is not the daemon's error. Other exceptions keep their traceback.
    """

    def __init__(self, logger: logging.Logger, where: str) -> None:
        super().__init__(logger, {})
        self.where = where

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        error = exc_info if isinstance(exc_info, BaseException) else sys.exc_info()[1]
        if not isinstance(error, HttpProcessingError):
            super().exception(msg, *args, exc_info=exc_info, **kwargs)
            return
        reason = " ".join(str(error.message).split())
        if len(reason) > _QUOTE:
            reason = reason[: _QUOTE - 1] + "…"
        peer = args[0] if args and args[0] else "a local client"
        _log.warning("malformed HTTP request on the %s from %s (answered %s): %s", self.where, peer, error.code, reason)


def track_busy(busy: set[RequestHandler]) -> Callable[..., Awaitable[web.StreamResponse]]:
    """A middleware that marks the connections whose request is being answered: those are not
    closed to make room."""

    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        connection = request.protocol
        busy.add(connection)
        try:
            return await handler(request)
        finally:
            busy.discard(connection)

    return middleware


class _Refuse(asyncio.Protocol):
    """A connection beyond the limit with every other one busy: answered 503 and closed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(_REFUSAL)
        transport.close()


class LimitedSite(web.BaseSite):
    """Serves a runner on a bound socket or a TCP address, with at most ``limit`` connections."""

    def __init__(
        self,
        runner: web.AppRunner,
        where: str,
        busy: set[RequestHandler],
        *,
        sock: socket.socket | None = None,
        address: tuple[str, int] | None = None,
        limit: int = MAX_CONNECTIONS,
    ) -> None:
        # The default backlog (128), not more: asyncio accepts up to that many connections in one
        # go, each a file, before any of them reaches _accept and makes room.
        super().__init__(runner)
        self.where = where
        self._busy = busy
        self._sock = sock
        self._address = address
        self._limit = limit
        self.evicted = 0
        self.refused = 0

    @property
    def name(self) -> str:
        return self.where

    async def start(self) -> None:
        await super().start()
        loop = asyncio.get_running_loop()
        if self._sock is not None:
            self._server = await loop.create_server(self._accept, sock=self._sock, backlog=self._backlog)
        else:
            assert self._address is not None
            host, port = self._address
            self._server = await loop.create_server(self._accept, host, port, backlog=self._backlog)

    def _accept(self) -> asyncio.BaseProtocol:
        """The protocol for a connection just accepted: aiohttp's, once there is room for it."""
        server = self._runner.server
        assert server is not None
        # A connection closed by force keeps its entry until its task ends; it holds no file.
        open_ = [handler for handler in server.connections if handler.transport is not None]
        if len(open_) >= self._limit:
            idle = [handler for handler in open_ if handler not in self._busy]
            if not idle:
                self.refused += 1
                _log.warning(
                    "the %s has %d connections, all answering requests; refused one more", self.where, len(open_)
                )
                return _Refuse()
            # Those accepted in one batch meet here before any is counted: make room for all.
            # In the order accepted, the first idle ones have waited longest.
            evict = idle[: len(open_) + 1 - self._limit]
            for handler in evict:
                handler.force_close()
            self.evicted += len(evict)
            _log.warning(
                "the %s has %d connections open, the most it keeps; closed the %d idle longest",
                self.where,
                len(open_),
                len(evict),
            )
        return server()
