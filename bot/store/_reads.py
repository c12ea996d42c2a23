"""Read batches: the reads asked for while the reader's thread is busy go to it together.

Every read was a trip of its own to the reader connection's thread: a queue put, a thread
wake-up, the GIL taken back from the busy loop, and a self-pipe write to wake the loop again
with the rows. While handling a message the gate, a dozen providers and the evaluators ask for
their reads within microseconds of each other, and with twenty characters at work reads queued
for tens of milliseconds behind each other. Now one trip carries every read queued since the
last one left (up to ``READ_LIMIT``); each still returns its own rows or raises its own error.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from contextvars import Context
from dataclasses import dataclass
from typing import Any, TypeVar

import aiosqlite

from bot.kernel.errors import StoreError
from bot.store._connect import Connection, run_on_thread, sqlean

__all__ = ["READ_LIMIT", "ReadBatches"]

T = TypeVar("T")

#: Most reads in one trip: a long batch would keep the first reader waiting for the last.
READ_LIMIT = 32


@dataclass(slots=True)
class _Read:
    work: Callable[[Connection], object]
    done: asyncio.Future[Any]  # Any: each caller's own result type


@dataclass(slots=True)
class _Failed:
    error: Exception


class ReadBatches:
    """The reads waiting for one connection's thread, and the task carrying them there."""

    def __init__(
        self, conn: aiosqlite.Connection, name: str, failed: Callable[[BaseException], None] | None = None
    ) -> None:
        self._conn = conn
        self._name = name
        self._failed = failed  # told of each read's driver error (the store's health)
        self._queue: collections.deque[_Read] = collections.deque()
        self._carrier: asyncio.Task[None] | None = None

    async def run(self, work: Callable[[Connection], T]) -> T:
        """``work(conn)``, plain read-only queries, on the thread with the reads queued beside it.

        Driver errors come out as StoreError. A caller cancelled while it waits gets nothing;
        its read may still run (it changes nothing).
        """
        loop = asyncio.get_running_loop()
        read = _Read(work, loop.create_future())
        self._queue.append(read)
        if self._carrier is None:
            # A fresh context: the carrier serves every caller, so it logs as none of them. Not a
            # BackgroundTasks task: it ends when the queue is empty, and idle() waits for it, not cancels it.
            self._carrier = loop.create_task(self._carry(), name=f"troupe:reads:{self._name}", context=Context())
        result: T = await read.done
        return result

    async def idle(self) -> None:
        """Return once every read queued so far has its answer: for closing the connection."""
        while self._carrier is not None:
            await asyncio.wait([self._carrier])

    async def _carry(self) -> None:
        batch: list[_Read] = []
        try:
            # Started from a caller, so it runs on the loop's next turn: reads asked for in the
            # meantime (by the other tasks ready now) go in the first trip too.
            while self._queue:
                batch = []
                while self._queue and len(batch) < READ_LIMIT:
                    read = self._queue.popleft()
                    if not read.done.done():  # its caller was cancelled before the trip
                        batch.append(read)
                if batch:
                    outcomes = await run_on_thread(self._conn, _run_all, [read.work for read in batch])
                    for read, outcome in zip(batch, outcomes, strict=True):
                        if isinstance(outcome, _Failed) and self._failed is not None:
                            self._failed(outcome.error)
                        _settle(read.done, outcome)
                    batch = []
        except BaseException as exc:
            # The connection closed under the reads, or the loop is ending: nobody is left waiting.
            for read in (*batch, *self._queue):
                if read.done.done():
                    continue
                if isinstance(exc, Exception):
                    read.done.set_exception(StoreError(f"database read failed: {exc}"))
                else:
                    read.done.cancel()
            self._queue.clear()
            if not isinstance(exc, Exception):
                raise
        finally:
            self._carrier = None


def _run_all(conn: Connection, works: list[Callable[[Connection], object]]) -> list[object]:
    """On the connection's thread: each work's result, or its exception, in order."""
    outcomes: list[object] = []
    for work in works:
        try:
            outcomes.append(work(conn))
        except Exception as exc:  # the caller's to handle; the other reads go on
            outcomes.append(_Failed(exc))
    return outcomes


def _settle(done: asyncio.Future[Any], outcome: object) -> None:
    if done.done():
        return
    if not isinstance(outcome, _Failed):
        done.set_result(outcome)
    elif isinstance(outcome.error, sqlean.Error):
        error = StoreError(f"database read failed: {outcome.error}")
        error.__cause__ = outcome.error
        done.set_exception(error)
    else:
        done.set_exception(outcome.error)
