"""Time limits that a wait for a busy server's turn does not use up.

A model server that serves one request at a time (llama.cpp, Ollama on a CPU) queues the
characters' requests; a request may wait minutes for its turn behind the others. That wait is
nobody's fault, and counting it against a model call's limit (``MODEL_TIMEOUT_S``) or a
message's (``RUN_TIMEOUT_S``) would fail lines that were only waiting in line. So::

    async with time_limit(120):          # like asyncio.timeout(120) ...
        with not_counted():              # ... but this wait is left out of it
            await my_turn.wait()
        await post(...)                  # the request itself counts

Limits are found through a context variable: a wait inside ``not_counted`` pauses every
``time_limit`` around it in the same task (and in tasks started inside it), then resumes each
with the time it had left.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["not_counted", "time_left", "time_limit"]


@dataclass(slots=True)
class _Limit:
    timeout: asyncio.Timeout
    open: bool = True
    """False once its ``async with`` has ended: a task started inside may outlive it."""
    waits: int = 0
    """Waits under way that pause it (several tasks inside may wait at once)."""
    left: float = 0.0
    """Seconds it had left when the first of them began."""


_limits: ContextVar[tuple[_Limit, ...]] = ContextVar("time_limits", default=())


@contextlib.asynccontextmanager
async def time_limit(seconds: float | None) -> AsyncIterator[asyncio.Timeout]:
    """As ``asyncio.timeout(seconds)`` (``None``: no limit), raising :class:`TimeoutError` when
    it runs out; time spent in :func:`not_counted` inside it is not counted."""
    async with asyncio.timeout(seconds) as timeout:
        limit = _Limit(timeout)
        token = _limits.set((*_limits.get(), limit))
        try:
            yield timeout
        finally:
            limit.open = False
            _limits.reset(token)


@contextlib.contextmanager
def not_counted() -> Iterator[None]:
    """Pause every :func:`time_limit` around this point while inside; each then has as long
    left as it had on entry."""
    loop = asyncio.get_running_loop()
    paused: list[_Limit] = []
    for limit in _limits.get():
        when = limit.timeout.when()
        if not limit.open or limit.timeout.expired():
            continue
        if limit.waits == 0:
            if when is None:  # no limit at all: nothing to pause
                continue
            limit.left = when - loop.time()
            limit.timeout.reschedule(None)
        limit.waits += 1
        paused.append(limit)
    try:
        yield
    finally:
        for limit in paused:
            limit.waits -= 1
            if limit.waits == 0 and limit.open and not limit.timeout.expired():
                limit.timeout.reschedule(loop.time() + limit.left)


def time_left() -> float | None:
    """Seconds until the first of the :func:`time_limit`\\ s around this point runs out; ``None``
    when there is none, or every one is paused."""
    now = asyncio.get_running_loop().time()
    found = [
        when - now
        for limit in _limits.get()
        if limit.open and (when := limit.timeout.when()) is not None and not limit.timeout.expired()
    ]
    return min(found, default=None)
