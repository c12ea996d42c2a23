"""Background tasks, owned: named, tracked until they end, cancelled when their owner closes.

Every long-lived task troupe starts goes through a :class:`BackgroundTasks`: the daemon has
one (its watchdog, reloads), each :class:`~bot.runtime.agent.AgentRuntime` has one
(``runtime.create_task``: platform clients, reconnects, workers), and a part with a shorter
life than its agent (a Discord voice connection) has its own. Short concurrency inside one
coroutine (``asyncio.gather``, a ``wait`` with a timeout) needs none of this.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine, Iterator
from typing import Any

from bot.kernel.logs import current_agent

__all__ = ["BackgroundTasks", "next_round"]

_log = logging.getLogger(__name__)

_RECANCEL_S = 5.0  # a task still running this long after it was cancelled is cancelled again


class BackgroundTasks:
    """The background tasks of one owner.

    Args:
        prefix: the start of every task's name; ``troupe:<agent>`` for an agent, so that a
            task is named ``troupe:<agent>:<platform>:<job>``.
        agent: the agent the tasks work for: they (and the tasks they start) log as it.

    Lifecycle: :meth:`start` any number of tasks, then :meth:`close` once or more; a task that
    raises is logged here, once, with its name (asyncio's "exception was never retrieved" does
    not repeat it), and never stops the others.

    Note:
        :meth:`close` does not wait for a task to finish its work: it cancels it. Drain first
        where work in progress matters.
    """

    def __init__(self, prefix: str, *, agent: str | None = None) -> None:
        self.prefix = prefix
        self.agent = agent
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._tasks)} running"
        return f"<BackgroundTasks {self.prefix} ({state})>"

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(list(self._tasks))

    @property
    def closed(self) -> bool:
        return self._closing is not None

    def start(self, coro: Coroutine[Any, Any, Any], job: str) -> asyncio.Task[Any]:
        """Run ``coro`` as a task named ``<prefix>:<job>``, tracked until it ends.

        Raises:
            RuntimeError: the owner is closed (the coroutine is closed unstarted).
        """
        name = f"{self.prefix}:{job}"
        if self.closed:
            coro.close()  # never started: no "was never awaited" warning
            raise RuntimeError(f"cannot start {name}: its owner is closed")
        context = contextvars.copy_context()
        if self.agent is not None:
            context.run(current_agent.set, self.agent)
        task = asyncio.create_task(coro, name=name, context=context)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()  # retrieved: asyncio does not log it again
        if error is not None:
            if self.agent is not None:
                _log.error(
                    "%s: task %s failed", self.agent, task.get_name(), exc_info=error, extra={"agent": self.agent}
                )
            else:
                _log.error("task %s failed", task.get_name(), exc_info=error)

    async def close(self) -> None:
        """Cancel every task and wait until they have ended; safe to call again (later calls
        wait for the first). Starting a task afterwards raises RuntimeError."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._cancel_all())
        await asyncio.shield(self._closing)

    async def _cancel_all(self) -> None:
        tasks = list(self._tasks)  # no task joins from now on: start() refuses
        pending = set(tasks)
        while pending:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=_RECANCEL_S)
            for task in pending:
                # Its cancellation was lost: Python 3.11's asyncio.wait_for (psycopg's pool waits
                # with it) returns a result that was ready as it was cancelled, and the task goes on.
                _log.warning(
                    "task %s did not end %g s after it was cancelled; cancelling it again", task.get_name(), _RECANCEL_S
                )
        await asyncio.gather(*tasks, return_exceptions=True)  # every one done: outcomes retrieved


async def next_round(seconds: float) -> None:
    """The pause between two rounds of a task's loop, ending the loop if the task was cancelled
    during the round but the CancelledError was lost on the way (Python 3.11's
    asyncio.wait_for, which psycopg's pool waits with, returns a result that was ready as the
    cancellation came): without this the loop would go round until cancelled again."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
    await asyncio.sleep(seconds)
