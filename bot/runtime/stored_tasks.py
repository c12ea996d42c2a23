"""Stored tasks: what plugins queue in the store (reminders, retention, follow-ups) and the
runtime's task workers execute when their time comes."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from bot.kernel.background import next_round

if TYPE_CHECKING:
    from bot.kernel.types import Task
    from bot.runtime.agent import AgentRuntime

__all__ = ["run_due_tasks", "task_loop"]

_log = logging.getLogger(__name__)

_TASK_TICK_S = 1.0
_RETRY_BASE_MS = 30_000  # a failed one-shot task's first wait; each further failure doubles it
_RETRY_CAP_MS = 900_000


async def run_due_tasks(runtime: AgentRuntime) -> int:
    """Execute every queued task whose time has come; returns how many ran.

    One-shot tasks (tag ``queue``) are deleted after they succeed. ``repeat`` tasks run every
    ``metadata.updateInterval`` ms. A failure is not retried on the next tick (every second,
    forever, while a service is down): a repeating task waits for its next turn, a one-shot task
    for a back-off kept in its metadata (``failures``, ``retryAt``), from 30 s doubling to 15 min.
    """
    ran = 0
    for task in await runtime.store.get_tasks(tags=["queue"]):
        worker = runtime.task_workers.get(task.name)
        if worker is None or task.id is None:
            continue
        now = runtime.clock()
        repeat = "repeat" in task.tags
        if repeat:
            interval = task.metadata.update_interval or 0
            last = task.metadata.updated_at
            if last is not None and now - last < interval:
                continue
        elif now < (task.metadata.retry_at or 0):
            continue
        if worker.validate is not None and not await worker.validate(runtime, task):
            continue
        try:
            await worker.execute(
                runtime, dict(options) if isinstance(options := task.metadata.options, Mapping) else {}, task
            )
        except Exception:
            await _failed(runtime, task, now, repeat)
            continue
        ran += 1
        if repeat:
            await runtime.store.update_task(task.id, {"metadata": replace(task.metadata, updated_at=now)})
        else:
            await runtime.store.delete_task(task.id)
    return ran


async def _failed(runtime: AgentRuntime, task: Task, now: int, repeat: bool) -> None:
    """Log a failed run of ``task`` and record when to try it again (see :func:`run_due_tasks`)."""
    assert task.id is not None
    if repeat:
        wait_ms = task.metadata.update_interval or 0
        metadata = replace(task.metadata, updated_at=now)
    else:
        failures = (task.metadata.failures or 0) + 1
        wait_ms = min(_RETRY_CAP_MS, _RETRY_BASE_MS * 2 ** min(failures - 1, 32))
        metadata = replace(task.metadata, failures=failures, retry_at=now + wait_ms)
    _log.exception("%s: task %s failed; will retry in %d s", runtime.character.name, task.name, wait_ms // 1000)
    await runtime.store.update_task(task.id, {"metadata": metadata})


async def task_loop(runtime: AgentRuntime) -> None:
    """Run due tasks every ``TASK_TICK_S`` until cancelled; a failing check is logged."""
    tick = runtime.get_number("TASK_TICK_S", _TASK_TICK_S)
    while True:
        try:
            await run_due_tasks(runtime)
        except Exception:
            _log.exception("%s: task check failed", runtime.character.name)
        await next_round(tick)
