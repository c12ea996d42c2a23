"""REPLY: send the reply text to the room."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.components import Action, ActionResult, HandlerCallback, State
from bot.types import Memory

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["action"]


async def _handler(
    runtime: AgentRuntime,
    message: Memory,
    state: State,
    options: dict[str, Any],
    callback: HandlerCallback | None,
    responses: Sequence[Memory],
) -> ActionResult:
    # The planning call already wrote the reply; reusing it saves a second large-model call
    # per message (upstream generates it again).
    content = responses[0].content if responses else {}
    text = str(content.get("text") or "").strip()
    files = content.get("files") or []  # attached by an earlier step of the plan
    if not text and not files:
        return ActionResult(success=False, error="the model chose REPLY but wrote no text")
    if callback is None:
        return ActionResult(success=False, error="no way to send: the message came without a callback")
    reply: dict[str, Any] = {
        "text": text,
        "thought": content.get("thought", ""),
        "actions": ["REPLY"],
        "inReplyTo": content.get("inReplyTo"),
    }
    if files:
        reply["files"] = files
    sent = await callback(reply)
    if not sent:
        return ActionResult(success=False, error="send failed: the platform took none of the reply")
    return ActionResult(text=text, values={"responded": True}, data={"actionName": "REPLY"})


action = Action(
    name="REPLY",
    handler=_handler,
    description="Reply to the message with the text you wrote. The usual action when responding; put it first "
    "when combined with others.",
    similes=("GREET", "REPLY_TO_MESSAGE", "SEND_REPLY", "RESPOND", "RESPONSE"),
)
