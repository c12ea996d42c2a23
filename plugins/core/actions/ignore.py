"""IGNORE: say nothing to this message."""

from __future__ import annotations

from bot.sdk import Action, ActionResult

__all__ = ["action"]


async def _handler(*_: object) -> ActionResult:
    # Nothing is sent: the pipeline stores the decision so the history shows it.
    return ActionResult(text="Ignored the message", values={"ignored": True})


action = Action(
    name="IGNORE",
    handler=_handler,
    description="Say nothing. Use alone, when the message is not for you, the conversation has ended, or the "
    "user is hostile. Do not use when the user is talking to you directly.",
    similes=("STOP_TALKING", "STOP_CHATTING", "STOP_CONVERSATION", "NO_REPLY"),
)
