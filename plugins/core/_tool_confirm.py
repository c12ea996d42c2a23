"""Tools that change things run only once the person says yes: the question with Yes and No
buttons under the reply, and the press that runs the call (without asking the model again
whether to).

The calls waiting are kept in the store's cache for a bounded time (``_WAIT_S``), so a question
asked before a restart (or a handover to another daemon) can still be answered after it; a press
after that is told the question is no longer open. A call is taken from the store before it runs,
one press at a time per runtime, so pressing yes twice runs it once. Only the person who asked, or
the world's owner or an admin, may answer. A question about one call shows the answer ("✓ chosen:
Yes") in place of its buttons where the platform edits messages; what came of the call is a new
message.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.sdk import (
    JSON,
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
    Settled,
    ToolCall,
    ToolContext,
    ToolResult,
    ToolRound,
    ToolTurn,
    ToolTurnParams,
    note_tool_calls,
    now_ms,
)

from ._tool_loop import trace_runs
from .actions._common import PRIVILEGED, role_in, room_and_world, source_of

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["PREFIX", "Confirmations", "Waiting"]

#: Button values: ``tool:<id>:yes`` / ``tool:<id>:no``.
PREFIX = "tool:"
_KEY = "tool-confirm:"
_WAIT_S = 15 * 60
_NAME = "RUN_TOOL"
_RESULT_CHARS = 1500


@dataclass(frozen=True, slots=True)
class Waiting:
    """A call that waits for its yes."""

    call: ToolCall
    message_id: str
    """The message it was made for."""
    entity_id: str
    room_id: str
    asked: str
    """What the person had asked (for the model's words once the call has run)."""

    def to_json(self) -> JSON:
        call = {"id": self.call.id, "name": self.call.name, "arguments": dict(self.call.arguments)}
        return {
            "call": call,
            "message": self.message_id,
            "entity": self.entity_id,
            "room": self.room_id,
            "asked": self.asked,
        }

    @classmethod
    def from_json(cls, data: object) -> Waiting | None:
        """What :meth:`to_json` wrote; None for anything else (a row of an older shape)."""
        if not isinstance(data, dict) or not isinstance(call := data.get("call"), dict):
            return None
        arguments = call.get("arguments")
        try:
            return cls(
                ToolCall(str(call["id"]), str(call["name"]), arguments if isinstance(arguments, dict) else {}),
                str(data["message"]),
                str(data["entity"]),
                str(data["room"]),
                str(data.get("asked") or ""),
            )
        except KeyError:
            return None


class Confirmations:
    """One runtime's calls waiting for a yes; :meth:`register` handles their buttons' presses."""

    def __init__(self, runtime: AgentRuntime, call_timeout_s: float) -> None:
        self.runtime = runtime
        self.call_timeout_s = call_timeout_s
        self._taking = asyncio.Lock()  # one press at a time takes its call from the store

    def register(self) -> None:
        self.runtime.register_press_handler(PressHandler(PREFIX, self.on_press))

    async def ask(self, calls: Sequence[ToolCall], message: Memory) -> tuple[str, list[Button]]:
        """The question for ``calls`` (made for ``message``) and its buttons; the calls wait, in
        the store (a call the store could not keep gets no buttons, and is said not to wait)."""
        buttons: list[Button] = []
        lines: list[str] = []
        for call in calls[:4]:  # a message holds a few buttons; more in one turn wait for another turn
            key = uuid.uuid4().hex[:12]
            waiting = Waiting(
                call, message.id or "", message.entity_id, message.room_id, (message.content.text or "")[:500]
            )
            kept = await self.runtime.store.set_cache(
                _KEY + key, waiting.to_json(), expires_at=now_ms() + _WAIT_S * 1000
            )
            if not kept:
                lines.append(f"- {call.name}: could not be kept for your answer; ask me again later")
                continue
            label = call.name if len(call.name) <= 20 else call.name[:19] + "…"
            buttons += [Button(f"Yes: {label}", f"{PREFIX}{key}:yes"), Button(f"No: {label}", f"{PREFIX}{key}:no")]
            lines.append(f"- {call.name} {json.dumps(dict(call.arguments), ensure_ascii=False, default=str)[:200]}")
        return "Shall I go ahead with this?\n" + "\n".join(lines), buttons

    async def on_press(
        self, runtime: AgentRuntime, message: Memory, press: Press, callback: HandlerCallback
    ) -> ActionResult:
        key, _, answer = press.value.removeprefix(PREFIX).partition(":")
        waiting, refusal = await self._take(key, message)
        if waiting is None:
            await _say(callback, refusal, message)
            return ActionResult(success=False, error=refusal)
        name = waiting.call.name
        alone = await self._asks_alone(message, key)
        if answer != "yes":
            settled = Settled(f"✓ chosen: No ({name} not run)") if alone else None
            await _say(callback, f"OK, I won't run {name}.", message, settles=settled)
            return ActionResult(text=f"{name} not run", data={"actionName": _NAME, "confirmed": False})
        if alone:  # the question shows the answer at once; what came of it is a new message
            await _say(callback, "", message, settles=Settled(f"✓ chosen: Yes ({name})"))
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

    async def _asks_alone(self, press: Memory, key: str) -> bool:
        """Whether the question pressed asks about this call alone: then answering it may take its
        buttons away (a question about several calls keeps the others' buttons)."""
        asked = await self.runtime.store.get_memory(press.content.in_reply_to) if press.content.in_reply_to else None
        shown = asked.content.buttons if asked is not None else None
        return bool(shown) and all((b.value or "").startswith(f"{PREFIX}{key}:") for b in shown or ())

    async def _take(self, key: str, message: Memory) -> tuple[Waiting | None, str]:
        """The call waiting under ``key`` for the press ``message``, taken from the store (so that
        no other press runs it); or None and what to tell the one who pressed."""
        store = self.runtime.store
        async with self._taking:
            waiting = Waiting.from_json(await store.get_cache(_KEY + key)) if key.isalnum() else None
            if waiting is None or waiting.room_id != message.room_id:
                return None, "That question is no longer open; ask me again."
            if message.entity_id != waiting.entity_id:
                _, world = await room_and_world(self.runtime, message)
                if role_in(world, message.entity_id) not in PRIVILEGED:
                    return None, "That's not yours to confirm."
            await store.delete_cache(_KEY + key)
            return waiting, ""

    async def _run(self, waiting: Waiting) -> ToolResult:
        call = waiting.call
        asked = await self.runtime.store.get_memory(waiting.message_id)
        toolbox = self.runtime.get_service(TOOLBOX)
        if toolbox is None:
            return ToolResult(call, f"{call.name} cannot run: the character has no tools now", ok=False)
        try:
            return await toolbox.call(
                call, timeout=self.call_timeout_s, context=ToolContext(asked) if asked is not None else None
            )
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


async def _say(callback: HandlerCallback, text: str, message: Memory, *, settles: Settled | None = None) -> None:
    """``text`` in answer; ``settles``: shown on the question pressed instead, where the platform
    edits messages (an empty ``text``: nothing is said where it does not)."""
    reply = Reply(text=text, actions=(_NAME,), in_reply_to=message.id, source=source_of(message), settles=settles)
    await callback(reply)
