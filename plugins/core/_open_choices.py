"""The choices still open in a room, as CHOOSE_OPTION and the CHOICE provider read and describe them.

A choice is a task tagged ``AWAITING_CHOICE`` with options (see :mod:`bot.runtime.choices`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from bot.sdk import ABORT, AWAITING_CHOICE, SHORT_ID, Task, options_of

from ._retention import TASK_NAME as RETENTION_TASK

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["describe_choices", "open_choices"]


async def open_choices(runtime: AgentRuntime, room_id: str) -> list[Task]:
    """The tasks waiting for a choice in ``room_id``, oldest first."""
    # Nothing could carry out a choice: no need to look for tasks on every message. Memory
    # retention, the core plugin's own worker, never waits for one.
    if all(name == RETENTION_TASK for name in runtime.task_workers):
        return []
    tasks = await runtime.store.get_tasks(room_id=room_id, tags=[AWAITING_CHOICE])
    return [t for t in tasks if options_of(t)]


def describe_choices(tasks: Sequence[Task], waiting_on: Mapping[str, str] | None = None) -> str:
    """Each task by its short id, name and description, with its options and ABORT; with
    ``waiting_on`` (entity id -> name), whose answer each waits for."""
    blocks = []
    for task in tasks:
        options = [
            f"  - {name}" + (f": {description}" if description else "") for name, description in options_of(task)
        ]
        options.append(f"  - {ABORT}: cancel this task")
        who = ""
        if waiting_on is not None and task.entity_id:
            who = f" (waiting for {waiting_on.get(task.entity_id, 'someone')})"
        blocks.append(
            f'- task {str(task.id)[:SHORT_ID]} "{task.name}"'
            + (f": {task.description}" if task.description else "")
            + who
            + "\n"
            + "\n".join(options)
        )
    return "\n".join(blocks)
