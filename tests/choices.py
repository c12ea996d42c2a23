"""A task waiting for a person's choice, as a plugin leaves one, for the tests of choice buttons."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from bot.kernel.record_metadata import TaskMetadata
from bot.kernel.types import Task
from bot.runtime.agent import AgentRuntime
from bot.runtime.choices import AWAITING_CHOICE
from bot.runtime.components import TaskWorker

__all__ = ["waiting_choice"]


async def waiting_choice(
    rt: AgentRuntime,
    *,
    room_id: str,
    entity_id: str,
    name: str = "PICK_COLOUR",
    description: str = "colour of the banner",
    options: list[Any] | None = None,
    hold: asyncio.Event | None = None,
) -> tuple[Task, list[dict[str, Any]]]:
    """A stored task ``name`` in ``room_id`` waiting on ``entity_id`` (options red and blue
    unless given), and the list its worker records each run's options in; ``hold``: each run
    waits for it before ending."""
    ran: list[dict[str, Any]] = []

    async def execute(runtime: AgentRuntime, chosen: dict[str, Any], task: Task) -> None:
        ran.append(chosen)
        if hold is not None:
            await hold.wait()

    rt.register_task_worker(TaskWorker(name, execute))  # as a plugin would
    task = Task(
        name=name,
        id=str(uuid.uuid4()),
        description=description,
        room_id=room_id,
        entity_id=entity_id,
        tags=[AWAITING_CHOICE],
        metadata=TaskMetadata.from_json({"options": options if options is not None else ["red", "blue"]}),
    )
    await rt.store.create_task(task)
    return task, ran
