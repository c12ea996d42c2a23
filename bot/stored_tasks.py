"""Stored tasks: what plugins queue in the store (reminders, retention, follow-ups) and the
runtime's task workers execute when their time comes."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["run_due_tasks", "task_loop"]

_log = logging.getLogger(__name__)

_TASK_TICK_S = 1.0


async def run_due_tasks(runtime: AgentRuntime) -> int:
    """Execute every queued task whose time has come; returns how many ran.

    One-shot tasks (tag ``queue``) are deleted after they succeed and retried on the next
    tick if they fail. ``repeat`` tasks run every ``metadata.updateInterval`` ms.
    """
    ran = 0
    for task in await runtime.store.get_tasks(tags=["queue"]):
        worker = runtime.task_workers.get(task.name)
        if worker is None or task.id is None:
            continue
        now = runtime.clock()
        repeat = "repeat" in task.tags
        if repeat:
            interval = int(task.metadata.get("updateInterval") or 0)
            last = task.metadata.get("updatedAt")
            if last is not None and now - int(last) < interval:
                continue
        if worker.validate is not None and not await worker.validate(runtime, task):
            continue
        try:
            await worker.execute(runtime, dict(task.metadata.get("options") or {}), task)
        except Exception:
            _log.exception("%s: task %s failed; will retry", runtime.character.name, task.name)
            continue
        ran += 1
        if repeat:
            await runtime.store.update_task(task.id, {"metadata": {**task.metadata, "updatedAt": now}})
        else:
            await runtime.store.delete_task(task.id)
    return ran


async def task_loop(runtime: AgentRuntime) -> None:
    """Run due tasks every ``TASK_TICK_S`` until cancelled; a failing check is logged."""
    tick = runtime.get_number("TASK_TICK_S", _TASK_TICK_S)
    while True:
        try:
            await run_due_tasks(runtime)
        except Exception:
            _log.exception("%s: task check failed", runtime.character.name)
        await asyncio.sleep(tick)
