"""CHOICE: the choices still open in the room, so that a person who answers one in words is
understood (CHOOSE_OPTION carries the answer out).

Each is shown by its task's short id, name and description, whose answer it waits for, and its
options (and ABORT): the newest few (``_SHOWN``), newest first, with a count of the older ones.
When nothing waits, there is no text (a line on every prompt would say nothing); ``tasks`` then
says so, as elizaOS's does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.sdk import Memory, Provider, ProviderResult, State

from .._open_choices import describe_choices, open_choices
from ._common import entity_names

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_SHOWN = 5
_NONE = "No pending choices for the moment."


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    tasks = await open_choices(runtime, message.room_id)
    if not tasks:
        return ProviderResult(text="", values={"tasks": _NONE}, data={"tasks": []})
    shown = tasks[::-1][:_SHOWN]
    names = await entity_names(runtime, [t.entity_id for t in shown if t.entity_id])
    lines = ["# Pending Choices", "Questions in this conversation still waiting for an answer, newest first:"]
    lines.append(describe_choices(shown, names))
    if len(tasks) > len(shown):
        older = len(tasks) - len(shown)
        lines.append(f"(and {older} older {'one' if older == 1 else 'ones'} not shown)")
    lines.append(
        "When the person answers one of these in words, use the CHOOSE_OPTION action: it carries the answer out."
    )
    text = "\n".join(lines)
    return ProviderResult(text=text, values={"tasks": text}, data={"tasks": shown})


provider = Provider(
    name="CHOICE",
    get=_get,
    description="The choices still open in the room (a task waiting for a person's pick), with their options.",
)
