"""What every fake service here shares: an aiohttp app on 127.0.0.1 at a free port, started once,
closed any number of times, usable as ``async with``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Callable
from typing import Any, Self, TypeVar

from aiohttp import web

__all__ = ["LocalServer", "QueuedWebSocket"]

T = TypeVar("T")


class LocalServer:
    """Subclasses build their app in :meth:`_make_app` and end what they hold open in :meth:`_closing`.

    ``_closed`` is set as soon as :meth:`close` begins, so a delayed or held response can wait on
    it and end early. A subclass calls :meth:`_changed` whenever it records something a test may
    be waiting for with :meth:`wait_for`.
    """

    def __init__(self) -> None:
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._closed = asyncio.Event()
        self._change = asyncio.Event()

    def _make_app(self) -> web.Application:
        raise NotImplementedError

    def _ssl_context(self) -> ssl.SSLContext | None:
        return None

    async def start(self) -> None:
        """Listen on a free port. Raises RuntimeError if already started."""
        if self._runner is not None or self._closed.is_set():
            raise RuntimeError(f"{type(self).__name__} can be started once")
        # A short shutdown timeout and cancelled handlers: close() must not wait for a response
        # the test stopped caring about, and a client going away is seen as a cancelled handler.
        runner = web.AppRunner(self._make_app(), access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=self._ssl_context()).start()
        self._runner, self._port = runner, runner.addresses[0][1]

    async def close(self) -> None:
        """End what is held open, stop listening. Idempotent."""
        self._closed.set()
        await self._closing()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _closing(self) -> None:
        """Hook: end open connections and held responses before the listener stops."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return self._port

    def _changed(self) -> None:
        event, self._change = self._change, asyncio.Event()
        event.set()

    async def wait_for(self, check: Callable[[], T], timeout: float = 30.0, description: str = "condition") -> T:
        """Wait until ``check()`` returns something truthy (re-checked on every recorded change)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            result = check()
            if result:
                return result
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {timeout}s waiting for {description}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._change.wait(), remaining)


class QueuedWebSocket:
    """One server-side websocket: frames go out in order through a queue a writer task drains,
    so a handler can ``send`` without awaiting, and ``close`` goes out after what was queued.
    Subclasses change how a frame becomes text or bytes in :meth:`_encode`."""

    def __init__(self, ws: web.WebSocketResponse, request: web.Request) -> None:
        self.ws = ws
        self.request = request
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.alive = True
        self.server_close_code: int | None = None
        self.writer = asyncio.create_task(self._write())

    def send(self, frame: Any) -> None:
        if self.alive:
            self.queue.put_nowait(frame)

    def close(self, code: int, reason: str = "") -> None:
        """Send the queued frames, then a close frame with ``code``."""
        if self.alive:
            self.server_close_code = code
            self.queue.put_nowait(("close", code, reason))
            self.alive = False

    async def flush(self, timeout: float = 5.0) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.queue.join(), timeout)

    def _encode(self, frame: Any) -> str | bytes:
        return frame if isinstance(frame, bytes) else json.dumps(frame, separators=(",", ":"))

    async def _write(self) -> None:
        broken = False
        while True:
            item = await self.queue.get()
            try:
                if item is None:
                    return
                if broken:
                    continue
                if isinstance(item, tuple):
                    _, code, reason = item
                    await self.ws.close(code=code, message=reason.encode())
                    broken = True
                    continue
                data = self._encode(item)
                if isinstance(data, bytes):
                    await self.ws.send_bytes(data)
                else:
                    await self.ws.send_str(data)
            except (ConnectionError, RuntimeError):
                broken = True
                self.alive = False
            finally:
                self.queue.task_done()

    async def stop(self) -> None:
        self.alive = False
        self.queue.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(self.writer), 1.0)
        except (TimeoutError, asyncio.CancelledError):
            self.writer.cancel()
