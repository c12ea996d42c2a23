"""Read sharing for one unit of work (one message): identical reads run one query.

While handling one message the gate, a dozen providers and several action validators each read
the same room, world and room state; every read is a trip to the reader thread. Inside
``Database.shared_reads()`` such reads (``Database.fetchall_shared``) with the same SQL and
parameters share one query, including reads still in flight. Any write transaction of the
Database drops everything shared so far, so a read never returns rows older than the last write
made through troupe. Callers get rows, which are immutable, and build their own objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["SharedReads", "active", "scope"]

Key = tuple[str, tuple[Any, ...]]

#: The sharing scope of the running task (tasks started inside a scope inherit it).
_active: ContextVar[SharedReads | None] = ContextVar("troupe_shared_reads", default=None)


class SharedReads:
    """Reads shared since ``generation`` (the owner's count of finished write transactions)."""

    __slots__ = ("owner", "_generation", "_reads", "closed")

    def __init__(self, owner: object, generation: int) -> None:
        self.owner = owner
        self._generation = generation
        self._reads: dict[Key, asyncio.Future[list[Any]]] = {}
        self.closed = False

    async def fetchall(
        self, sql: str, params: Sequence[Any], generation: int, fetch: Callable[[], Awaitable[list[Any]]]
    ) -> list[Any]:
        """The rows of ``sql`` with ``params``: from a read started since the last write, else ``fetch()``."""
        if generation != self._generation:  # a write ended: nothing read before it may be reused
            self._reads.clear()
            self._generation = generation
        key = (sql, tuple(params))
        read = self._reads.get(key)
        if read is not None and read.done():
            if not read.cancelled() and read.exception() is None:
                return list(read.result())  # the common case: already read in this scope
            read = None  # failed: read again
        if read is None:
            # A task, so that a caller cancelled while waiting does not cancel the others' read.
            read = asyncio.ensure_future(fetch())
            self._reads[key] = read
        return list(await asyncio.shield(read))

    def close(self) -> None:
        """End the scope: a task started inside it and still running reads on its own from now on."""
        self.closed = True
        self._reads.clear()


def active(owner: object) -> SharedReads | None:
    """The running task's open scope for ``owner`` (a Database), or None."""
    scope = _active.get()
    if scope is None or scope.closed or scope.owner is not owner:
        return None
    return scope


@contextmanager
def scope(owner: object, generation: int) -> Iterator[None]:
    """Share reads of ``owner`` in the running task (and tasks it starts) until the block ends."""
    if active(owner) is not None:  # nested: join the outer scope
        yield
        return
    shared = SharedReads(owner, generation)
    token = _active.set(shared)
    try:
        yield
    finally:
        shared.close()
        _active.reset(token)
