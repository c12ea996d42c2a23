"""The line in front of one model server: at most so many requests at once, the rest in order.

A server on a CPU (llama.cpp, llama-cpp-python, Ollama on a small machine) answers one request
at a time. Sent together, requests only queue inside the server, their timeouts running while
they wait; one that gives up leaves the server generating for nobody. So the daemon's
characters take turns here instead, and each request's time starts when it is sent. The wait
is left out of the runtime's time limits (:func:`bot.kernel.time_limits.not_counted`).
"""

from __future__ import annotations

import asyncio
from collections import deque

from bot.sdk import GaugeChild, not_counted

__all__ = ["ServerQueue"]


class ServerQueue:
    """Turns at one server, first come first served; ``limit`` 0 lets every request through."""

    def __init__(self, limit: int = 0) -> None:
        self._limit = limit
        self.running = 0
        """Requests that have their turn."""
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def limit(self) -> int:
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        """A new limit applies from now on: a higher one lets waiting requests go at once."""
        self._limit = value
        self._admit()

    @property
    def waiting(self) -> int:
        """Requests waiting for their turn."""
        return sum(1 for f in self._waiting if not f.done())

    @property
    def busy(self) -> bool:
        """Whether a request would have to wait now."""
        return self._limit > 0 and (self.running >= self._limit or self.waiting > 0)

    async def acquire(self, waiting: GaugeChild | None = None) -> None:
        """Until this request's turn has come (counted in ``waiting`` meanwhile); :meth:`release`
        when it is done."""
        if not self.busy:
            self.running += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        if waiting is not None:
            waiting.inc()
        try:
            with not_counted():
                await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # given the turn just as it was cancelled: pass it on
            else:
                waiter.cancel()
            raise
        finally:
            if waiting is not None:
                waiting.dec()

    def release(self) -> None:
        """End a turn :meth:`acquire` gave: the next request in line has its own."""
        self.running -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiting and (self._limit <= 0 or self.running < self._limit):
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled one has left the line
                self.running += 1
                waiter.set_result(None)
