"""Tools that change things run only once the person says yes: the question with Yes and No
buttons under the reply, and the press that runs the call (without asking the model again
whether to).

The calls waiting are kept in memory per runtime, a bounded number for a bounded time
(``_MAX_WAITING``, ``_WAIT_S``): a press after a restart, or after that, is told the question is
no longer open. Only the person who asked, or the world's owner or an admin, may answer.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.sdk import (
    TOOLBOX,
    ActionResult,
    Button,
    HandlerCallback,
    Memory,
    ModelError,
    ModelType,
    Press,
    PressHandler,
    Reply,
    ToolCall,
    ToolContext,
    ToolResult,
    ToolRound,
    ToolTurn,
    ToolTurnParams,
    note_tool_calls,
)

from ._tool_loop import trace_runs
from .actions._common import PRIVILEGED, role_in, room_and_world, source_of

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["PREFIX", "Confirmations", "Waiting"]

#: Button values: ``tool:<id>:yes`` / ``tool:<id>:no``.
PREFIX = "tool:"
_MAX_WAITING = 200
_WAIT_S = 15 * 60
_NAME = "RUN_TOOL"
_RESULT_CHARS = 1500


@dataclass(frozen=True, slots=True)
class Waiting:
    """A call that waits for its yes."""

    call: ToolCall
    message: Memory
    """The message it was made for."""
    entity_id: str
    room_id: str
    asked: str
    """What the person had asked (for the model's words once the call has run)."""
    since: float


class Confirmations:
    """One runtime's calls waiting for a yes; :meth:`register` handles their buttons' presses."""

    def __init__(self, runtime: AgentRuntime, call_timeout_s: float) -> None:
        self.runtime = runtime
        self.call_timeout_s = call_timeout_s
        self._waiting: OrderedDict[str, Waiting] = OrderedDict()

    def register(self) -> None:
        self.runtime.register_press_handler(PressHandler(PREFIX, self.on_press))

    def ask(self, calls: Sequence[ToolCall], message: Memory) -> tuple[str, list[Button]]:
        """The question for ``calls`` (made for ``message``) and its buttons; the calls wait."""
        buttons: list[Button] = []
        lines: list[str] = []
        for call in calls[:4]:  # a message holds a few buttons; more in one turn wait for another turn
            key = uuid.uuid4().hex[:12]
            self._waiting[key] = Waiting(
                call, message, message.entity_id, message.room_id, (message.content.text or "")[:500], time.monotonic()
            )
            label = call.name if len(call.name) <= 20 else call.name[:19] + "…"
            buttons += [Button(f"Yes: {label}", f"{PREFIX}{key}:yes"), Button(f"No: {label}", f"{PREFIX}{key}:no")]
            lines.append(f"- {call.name} {json.dumps(dict(call.arguments), ensure_ascii=False, default=str)[:200]}")
        while len(self._waiting) > _MAX_WAITING:
            self._waiting.popitem(last=False)
        return "Shall I go ahead with this?\n" + "\n".join(lines), buttons

    async def on_press(
        self, runtime: AgentRuntime, message: Memory, press: Press, callback: HandlerCallback
    ) -> ActionResult:
        key, _, answer = press.value.removeprefix(PREFIX).partition(":")
        waiting = self._waiting.get(key)
        if waiting is not None and time.monotonic() - waiting.since > _WAIT_S:
            self._waiting.pop(key, None)
            waiting = None
        if waiting is None or waiting.room_id != message.room_id:
            await _say(callback, "That question is no longer open; ask me again.", message)
            return ActionResult(success=False, error=f"no call waiting for {press.value!r}")
        if message.entity_id != waiting.entity_id:
            _, world = await room_and_world(runtime, message)
            if role_in(world, message.entity_id) not in PRIVILEGED:
                await _say(callback, "That's not yours to confirm.", message)
                return ActionResult(success=False, error="only the person who asked, or an admin, may confirm")
        self._waiting.pop(key, None)  # answered once, however often it is pressed
        name = waiting.call.name
        if answer != "yes":
            await _say(callback, f"OK, I won't run {name}.", message)
            return ActionResult(text=f"{name} not run", data={"actionName": _NAME, "confirmed": False})
        result = await self._run(waiting)
        text = await self._words(waiting, result)
        await _say(callback, text, message)
        note_tool_calls(trace_runs([ToolRound((waiting.call,), (result,))]))  # the press's trace
        return ActionResult(
            success=result.ok,
            text=text,
            data={"actionName": _NAME, "confirmed": True},
            error=None if result.ok else f"{name} failed",
        )

    async def _run(self, waiting: Waiting) -> ToolResult:
        call = waiting.call
        toolbox = self.runtime.get_service(TOOLBOX)
        if toolbox is None:
            return ToolResult(call, f"{call.name} cannot run: the character has no tools now", ok=False)
        try:
            return await toolbox.call(call, timeout=self.call_timeout_s, context=ToolContext(waiting.message))
        except Exception as exc:  # a Toolbox's bug is the call's failure
            return ToolResult(call, f"{call.name} failed ({type(exc).__name__})", ok=False)

    async def _words(self, waiting: Waiting, result: ToolResult) -> str:
        """What the character says now the call has run: the model's words, else plain ones."""
        shown = result.text[:_RESULT_CHARS]
        plain = f"Done: {waiting.call.name} ran. {shown}" if result.ok else f"{waiting.call.name} failed: {shown}"
        prompt = (
            f"The person had asked: {waiting.asked!r}. They confirmed, and {waiting.call.name} was run; its result "
            "is below. Tell them in a short message, in your own voice, what came of it."
        )
        params = ToolTurnParams(prompt=prompt, tools=[], rounds=[ToolRound((waiting.call,), (result,))])
        if not self.runtime.has_model(ModelType.TEXT_TOOLS):
            return plain
        try:
            turn = await self.runtime.use_model(ModelType.TEXT_TOOLS, params)
        except ModelError:
            return plain
        return turn.text.strip() if isinstance(turn, ToolTurn) and turn.done and turn.text.strip() else plain


async def _say(callback: HandlerCallback, text: str, message: Memory) -> None:
    await callback(Reply(text=text, actions=(_NAME,), in_reply_to=message.id, source=source_of(message)))
