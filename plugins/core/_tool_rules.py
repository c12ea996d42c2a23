"""Who may make the character use which tool, and how often: the rules a call passes before it
runs, for the tool loop (``_tool_loop``).

- A call the model got wrong (no such tool, arguments that were not JSON) is not run.
- A tool for ``ADMINS`` runs only for the world's owner or admins, one for ``OWNER`` only for its
  owner (troupe's roles, as UPDATE_ROLE reads them); in a DM there is no world, so neither runs.
- Each person has a bounded number of calls a minute (``TOOL_CALLS_PER_MINUTE``), counted per
  runtime in a bounded map.
- A tool that changes things is not run in the turn: the person is asked with buttons under the
  reply (``_tool_confirm``) and it runs when they press yes; the model is told it waits for that.

A refused call is an error result saying why; the model tells the person.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.sdk import Role, ToolAccess, Toolbox, ToolCall, ToolContext, ToolResult, ToolSpec, World

from .actions._common import PRIVILEGED, role_in

if TYPE_CHECKING:
    from bot.sdk import Memory

__all__ = ["CallRules", "ToolRateLimit"]

_WINDOW_S = 60.0


class ToolRateLimit:
    """Calls per person per minute, for one runtime; remembers at most ``people`` people (the
    longest idle forgotten first), so that it stays small however many write."""

    def __init__(self, per_minute: int, *, people: int = 1000) -> None:
        self.per_minute = per_minute
        self._people = people
        self._calls: OrderedDict[str, deque[float]] = OrderedDict()

    def allow(self, entity_id: str, now: float | None = None) -> bool:
        """Whether ``entity_id`` may make one more call now (and count it when so)."""
        now = time.monotonic() if now is None else now
        calls = self._calls.pop(entity_id, None) or deque()
        while calls and now - calls[0] >= _WINDOW_S:
            calls.popleft()
        allowed = len(calls) < self.per_minute
        if allowed:
            calls.append(now)
        self._calls[entity_id] = calls
        while len(self._calls) > self._people:
            self._calls.popitem(last=False)
        return allowed


@dataclass(slots=True)
class CallRules:
    """The rules for one message's calls: :meth:`run` is the tool loop's ``run``."""

    toolbox: Toolbox
    tools: Sequence[ToolSpec]
    message: Memory
    """The message the calls answer (with its attachments read)."""
    world: World | None
    limit: ToolRateLimit
    fetch: Callable[[Mapping[str, object]], Awaitable[bytes]] | None = None
    """Downloads one of the message's attachments (for a tool that takes one)."""
    waiting: list[ToolCall] = field(default_factory=list)
    """Calls that wait for the person's yes (the pipeline offers the buttons after the reply)."""

    async def run(self, call: ToolCall, timeout: float) -> ToolResult:
        if call.problem:
            return ToolResult(call, f"{call.name} was not run: {call.problem}", ok=False)
        spec = next((t for t in self.tools if t.name == call.name), None)
        if spec is None:
            names = ", ".join(t.name for t in self.tools[:30])
            return ToolResult(call, f"there is no tool named {call.name!r}; the tools are: {names}", ok=False)
        refused = self._refusal(spec)
        if refused:
            return ToolResult(call, f"{call.name} was not run: {refused}. Tell the person so.", ok=False)
        if not self.limit.allow(self.message.entity_id):
            return ToolResult(
                call,
                f"{call.name} was not run: this person asked for more than {self.limit.per_minute} tool calls "
                "in a minute. Tell them to wait a minute.",
                ok=False,
            )
        if spec.changes_things:
            self.waiting.append(call)
            return ToolResult(
                call,
                f"{call.name} was not run yet: it changes things, so the person is asked to confirm it with "
                "buttons under your reply, and it runs when they press yes. Tell them that.",
                ok=False,
            )
        return await self.toolbox.call(call, timeout=timeout, context=ToolContext(self.message, self.fetch))

    def _refusal(self, spec: ToolSpec) -> str:
        if spec.access is ToolAccess.ANYONE:
            return ""
        role = role_in(self.world, self.message.entity_id)
        if spec.access is ToolAccess.OWNER and role is not Role.OWNER:
            return "only the owner of this server may have it used"
        if spec.access is ToolAccess.ADMINS and role not in PRIVILEGED:
            return "only the owner or an admin of this server may have it used"
        return ""
