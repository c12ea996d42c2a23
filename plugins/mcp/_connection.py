"""One MCP server, kept connected: started (or dialled), initialised, its tools listed, and
restarted with back-off when it dies.

The transport and the session are entered and left in one task (:meth:`ServerConnection._run`),
as the SDK's cancel scopes require; calls come from any task. A server that cannot start or
connect is one warning naming it and why (then quiet retries, doubling up to a minute); it is
``UP`` again, with its tools, as soon as it answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from enum import StrEnum
from types import TracebackType
from typing import Any, Self

import anyio
import httpx2
import mcp.types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client._transport import TransportStreams
from mcp.client.session import IncomingMessage
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared._stream_protocols import ReadStream
from mcp.shared.message import SessionMessage

from bot.sdk import ExponentialBackoff, scrub_secret

from ._config import ServerConfig, Transport
from ._stderr import ErrorOutput

__all__ = ["MAX_TOOLS", "ServerConnection", "ServerDown", "ServerState"]

_log = logging.getLogger(__name__)

#: Most tools kept from one server; a server listing more is cut, with a warning.
MAX_TOOLS = 128
#: Most pages of ``tools/list`` read (a server paging forever is cut).
_MAX_PAGES = 50
#: How long a session must have been up for its end to count as a new outage (the back-off
#: starts again, and a warning says it); a server that dies sooner is crash-looping.
_STABLE_S = 30.0
#: Longest a stopping session may take to shut its server down.
_CLOSE_TIMEOUT_S = 10.0


class ServerState(StrEnum):
    STARTING = "starting"
    UP = "up"
    DOWN = "down"
    """It could not start or connect, or it died; retrying with back-off."""
    STOPPED = "stopped"


class ServerDown(Exception):
    """A call reached a server that is not up (the message says why)."""


class _NotStarted(Exception):
    """The server did not start in its time (the message says so)."""


class _Watched:
    """The transport's read stream, telling when it ends: the server died or hung up."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> object:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class ServerConnection:
    """One server's session for the whole daemon (the pool shares it between characters)."""

    def __init__(self, config: ServerConfig, *, backoff: ExponentialBackoff | None = None) -> None:
        self.config = config
        self.state = ServerState.STARTING
        #: Why it is down (for the warning, ``troupe status`` and a failed call's text).
        self.reason = ""
        #: Its tools (at most MAX_TOOLS), as it last listed them; empty while down.
        self.tools: tuple[types.Tool, ...] = ()
        #: Counts each new list (the toolboxes rebuild their specs when it moves).
        self.version = 0
        self._backoff = backoff if backoff is not None else ExponentialBackoff(1.0, 60.0)
        self._session: ClientSession | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._ended = False  # the session's stream ended (the server died or hung up)
        self._relist = False  # the server said its tools changed
        self._broken = False  # a call failed in the transport: dial again
        self._warned = False  # one warning per outage
        self._up_at: float | None = None  # when the session last came up (the loop's clock)
        self._up = asyncio.Event()
        self._tried = asyncio.Event()  # it came up, or failed, at least once
        self._task: asyncio.Task[None] | None = None
        #: What a stdio server last wrote to its stderr (since it last started).
        self._errors = ErrorOutput(config.name, self.clean)

    def __repr__(self) -> str:
        return f"<ServerConnection {self.config.name} {self.state.value}>"

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"mcp server {self.name}")

    async def wait_up(self) -> None:
        """Until the server is up (tests, and callers that can wait)."""
        await self._up.wait()

    async def tried(self) -> None:
        """Until the server has come up, or failed to, once (or is stopped)."""
        await self._tried.wait()

    async def close(self) -> None:
        """Stop the session (and a stdio server's process); idempotent."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), _CLOSE_TIMEOUT_S)
            except TimeoutError:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self.state = ServerState.STOPPED
        self.tools = ()
        self.version += 1
        self._tried.set()

    async def call(self, tool: str, arguments: Mapping[str, Any], *, timeout: float) -> types.CallToolResult:
        """Call ``tool``.

        Raises:
            ServerDown: the server is not up.
            TimeoutError: no answer within ``timeout`` seconds.
            mcp.MCPError: the server's error (a closed connection is one too).
            pydantic.ValidationError: the answer is not a tool's result.
            Exception: the transport failed (the connection is dialled again), or the SDK refused
                the answer (RuntimeError: structured content that fails the output schema).
        """
        session = self._session
        if session is None or self.state is not ServerState.UP:
            raise ServerDown(self.reason or f"it is {self.state.value}")
        try:
            async with asyncio.timeout(timeout):
                return await session.call_tool(tool, dict(arguments))
        except Exception as exc:
            # A broken transport is dialled again; a bad answer (garbage, structured content that
            # fails the tool's output schema) leaves the session as it is.
            if _broken_transport(exc):
                self._broken = True
                self._wake.set()
            raise

    # -- the session's task -------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopping:
            self._up_at = None
            try:
                await self._session_once()
            except Exception as exc:  # any failure to start, connect or list: retry
                self._down(_describe(exc))
            else:
                if not self._stopping:
                    self._down("the server closed the connection" if self._ended else "the connection failed")
            if self._stopping:
                break
            delay = self._backoff.delay()
            _log.debug("mcp server %s: retrying in %.1f s", self.name, delay)
            try:
                async with asyncio.timeout(delay):
                    while not self._stopping:
                        self._wake.clear()
                        await self._wake.wait()
            except TimeoutError:
                pass
        self.state = ServerState.STOPPED

    def _down(self, reason: str) -> None:
        if self._up_at is not None and asyncio.get_running_loop().time() - self._up_at >= _STABLE_S:
            # It was up a good while: a new outage (a warning again, retries from the start).
            # One that dies soon after it starts keeps backing off, and warns once.
            self._warned = False
            self._backoff.reset()
        said = self._errors.tail()  # why a stdio server would not start, or died: its last words
        self.state = ServerState.DOWN
        self.reason = self.clean(f"{reason}; stderr: {said}" if said else reason)
        self.tools = ()
        self.version += 1
        self._up.clear()
        self._tried.set()
        if not self._warned:
            self._warned = True
            _log.warning(
                "mcp server %s (%s) is down: %s; its tools are missing until it answers (retrying)",
                self.name,
                self.config.where,
                self.reason,
            )

    async def _session_once(self) -> None:
        self._ended = self._broken = self._relist = False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.timeout  # to start: connect, initialise, list
        async with AsyncExitStack() as stack:
            # The transport and the session are entered outside anyio's time limit: their task
            # groups must be left in the order they were entered, after the limit's scope. An
            # SSE transport waits in its entry for the server's endpoint event, so asyncio's
            # limit covers that wait (it cancels the task, which unwinds the entry, and leaves
            # nothing behind once the entry returned).
            try:
                async with asyncio.timeout_at(deadline if self.config.transport is Transport.SSE else None):
                    read, write = await stack.enter_async_context(self._transport(stack))
                session = await stack.enter_async_context(
                    ClientSession(_Watched(read, self._on_end), write, message_handler=self._on_message)
                )
                with anyio.fail_after(max(deadline - loop.time(), 0.0)):
                    await session.initialize()
                    tools = await self._list(session)
            except TimeoutError:
                raise _NotStarted(f"it did not start within {self.config.timeout:g} s") from None
            self._session = session
            self._set_tools(tools)
            self.state = ServerState.UP
            self.reason = ""
            self._up_at = asyncio.get_running_loop().time()
            self._up.set()
            self._tried.set()
            _log.info("mcp server %s (%s) is up: %d tools", self.name, self.config.where, len(self.tools))
            try:
                while True:
                    self._wake.clear()
                    if self._stopping or self._ended or self._broken:
                        return
                    if self._relist:
                        self._relist = False
                        with anyio.fail_after(self.config.timeout):
                            self._set_tools(await self._list(session))
                        continue
                    await self._wake.wait()
            finally:
                self._session = None

    def clean(self, text: str) -> str:
        """``text`` fit to show: the URL as :attr:`ServerConfig.where` shows it, the server's
        secrets scrubbed (an HTTP error may quote the URL, a server its key)."""
        if self.config.url:
            text = text.replace(self.config.url, self.config.where)
        for secret in self.config.secrets:
            text = scrub_secret(text, secret)
        return text

    def _transport(self, stack: AsyncExitStack) -> AbstractAsyncContextManager[TransportStreams]:
        config = self.config
        if config.transport is Transport.STDIO:
            # Only the server's own environment (the SDK adds PATH, HOME, USER and the like),
            # never the daemon's: its secrets stay in the daemon.
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=dict(config.env), cwd=config.cwd
            )
            return _stdio(params, self._errors)
        if config.transport is Transport.SSE:
            return sse_client(config.url, headers=dict(config.headers), timeout=config.timeout)
        client = create_mcp_http_client(headers=dict(config.headers))
        return _with_client(stack, client, config.url)

    async def _list(self, session: ClientSession) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or len(tools) > MAX_TOOLS:
                break
        return tools

    def _set_tools(self, tools: list[types.Tool]) -> None:
        if len(tools) > MAX_TOOLS:
            _log.warning(
                'mcp server %s lists more than %d tools; only the first %d are offered (name the ones wanted in its "tools")',
                self.name,
                MAX_TOOLS,
                MAX_TOOLS,
            )
        self.tools = tuple(tools[:MAX_TOOLS])
        self.version += 1

    def _on_end(self) -> None:
        self._ended = True
        self._wake.set()

    async def _on_message(self, message: IncomingMessage) -> None:
        # Runs in the session's receive loop: list again from the session's task, not here (a
        # request from here would wait on the loop that is waiting on it).
        if isinstance(message, types.ToolListChangedNotification):
            self._relist = True
            self._wake.set()
        elif isinstance(message, Exception):
            _log.debug("mcp server %s: %s", self.name, _describe(message))


@asynccontextmanager
async def _stdio(params: StdioServerParameters, errors: ErrorOutput) -> AsyncIterator[TransportStreams]:
    """The stdio transport, the server's stderr going to ``errors`` (whose pipe is left after the
    process stopped, to read the last of it)."""
    async with errors.pipe() as errlog, stdio_client(params, errlog=errlog) as streams:
        errors.spawned()
        yield streams


def _with_client(
    stack: AsyncExitStack, client: httpx2.AsyncClient, url: str
) -> AbstractAsyncContextManager[TransportStreams]:
    """Streamable HTTP over ``client`` (which carries the headers), closed with the session."""
    stack.push_async_callback(client.aclose)
    return streamable_http_client(url, http_client=client)


def _broken_transport(exc: Exception) -> bool:
    """``exc`` from a call says the connection is broken (not that one answer was bad)."""
    if isinstance(exc, MCPError):
        return exc.code == types.CONNECTION_CLOSED
    if isinstance(exc, TimeoutError):  # an OSError, but only this call's time ran out
        return False
    return isinstance(exc, OSError | httpx2.HTTPError | anyio.BrokenResourceError | anyio.ClosedResourceError)


def _describe(exc: BaseException) -> str:
    """Why a server failed, in a line (an ExceptionGroup's first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, _NotStarted):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    if isinstance(exc, FileNotFoundError):
        return f"no such command: {exc.filename}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__
