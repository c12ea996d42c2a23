"""A TCP proxy in front of the test PostgreSQL, to cut a daemon's link to its database.

Each daemon (or each ``PostgresDatabase`` of a test) connects through a proxy of its own, so a
test can, for it alone:

- :meth:`TcpProxy.cut` every open link (a partition, or the server restarting): the client's
  statements in flight fail, and it connects again;
- :attr:`Mode.BLACKHOLE`: accept and hold links but forward nothing, either way, until the
  mode is back to forwarding (a partition that drops packets: the client waits for its
  timeouts; what TCP would retransmit arrives once the partition heals, if the client still
  waits for it);
- :attr:`Mode.REFUSE`, :attr:`TcpProxy.limit` or :attr:`TcpProxy.budget`: close new links at
  once, those beyond a number open ("too many clients"), or all after the first few (a
  failover: the first connection in, the rest refused).

The target is PostgreSQL's unix socket (as pgserver runs it) or a host and port; only the
connections made through :meth:`url` pass the proxy.
"""

from __future__ import annotations

import asyncio
import enum
from pathlib import Path
from typing import Self
from urllib.parse import parse_qsl, urlencode, urlsplit

__all__ = ["Mode", "TcpProxy"]

_CHUNK = 65536


class Mode(enum.Enum):
    FORWARD = "forward"
    BLACKHOLE = "blackhole"  # accept, hold, forward nothing until forwarding again
    REFUSE = "refuse"  # close every new link at once


class _Link:
    """One client connection and, unless blackholed, its connection to the server."""

    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.client = client
        self.server: asyncio.StreamWriter | None = None
        self.tasks: list[asyncio.Task[None]] = []

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in (self.client, self.server):
            if writer is not None:
                writer.transport.abort()  # a reset, as a cut link or a killed server gives


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to PostgreSQL at ``postgres_url``; ``async with`` starts and closes it."""

    def __init__(self, postgres_url: str) -> None:
        self._target_url = postgres_url
        parts = urlsplit(postgres_url)
        query = dict(parse_qsl(parts.query))
        socket_dir = query.get("host") or ""
        if socket_dir.startswith("/"):
            port = int(query.get("port") or parts.port or 5432)
            self._socket: Path | None = Path(socket_dir) / f".s.PGSQL.{port}"
            self._address: tuple[str, int] | None = None
        else:
            self._socket = None
            self._address = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._mode = Mode.FORWARD
        self._flowing = asyncio.Event()
        self._flowing.set()
        #: Links beyond this many open are closed at once (None: no limit).
        self.limit: int | None = None
        #: New links still to accept; past that every one is refused (None: no budget). 1: the
        #: server answers the first connection and refuses the rest (a failover).
        self.budget: int | None = None
        #: Links accepted, and refused, since the start.
        self.accepted = 0
        self.refused = 0
        #: Chunks held back by a blackhole since the start (delivered once forwarding again).
        self.held = 0
        self._links: set[_Link] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self.cut()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def url(self, postgres_url: str | None = None) -> str:
        """``postgres_url`` (default: the one proxied) pointing at this proxy."""
        parts = urlsplit(postgres_url or self._target_url)
        query = {k: v for k, v in parse_qsl(parts.query) if k not in ("host", "port")}
        netloc = parts.netloc.rpartition("@")
        userinfo = netloc[0] + "@" if netloc[1] else ""
        return parts._replace(netloc=f"{userinfo}127.0.0.1:{self.port}", query=urlencode(query)).geturl()

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        self._mode = mode
        if mode is Mode.BLACKHOLE:
            self._flowing.clear()
        else:
            self._flowing.set()

    @property
    def open_links(self) -> int:
        return len(self._links)

    def cut(self) -> int:
        """Close every open link at once (both ends); how many there were."""
        links, self._links = self._links, set()
        for link in links:
            link.close()
        return len(links)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        spent = self.budget is not None and self.budget <= 0
        if self.mode is Mode.REFUSE or spent or (self.limit is not None and len(self._links) >= self.limit):
            self.refused += 1
            writer.transport.abort()
            return
        if self.budget is not None:
            self.budget -= 1
        self.accepted += 1
        link = _Link(writer)
        self._links.add(link)
        link.tasks.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await self._flowing.wait()  # blackholed: the client waits, as for a SYN-ACK that never comes
            if self._socket is not None:
                up_reader, up_writer = await asyncio.open_unix_connection(self._socket)
            else:
                assert self._address is not None
                up_reader, up_writer = await asyncio.open_connection(*self._address)
        except OSError:
            self._links.discard(link)
            writer.transport.abort()
            return
        if link not in self._links:  # cut meanwhile
            up_writer.transport.abort()
            return
        link.server = up_writer
        link.tasks = [
            asyncio.create_task(self._pump(reader, up_writer, link)),
            asyncio.create_task(self._pump(up_reader, writer, link)),
        ]

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link: _Link) -> None:
        try:
            while data := await reader.read(_CHUNK):
                if not self._flowing.is_set():
                    self.held += 1
                    await self._flowing.wait()  # blackholed: held, delivered once the partition heals
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if link in self._links:
                self._links.discard(link)
                link.close()
