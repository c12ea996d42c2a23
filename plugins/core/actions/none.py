"""NONE: reply (if REPLY is also chosen) but take no other action."""

from __future__ import annotations

from bot.sdk import Action, ActionResult

__all__ = ["action"]


async def _handler(*_: object) -> ActionResult:
    return ActionResult(text="No additional action taken", values={"actionType": "NONE"})


action = Action(
    name="NONE",
    handler=_handler,
    description="Take no action beyond replying. Use together with REPLY when nothing else needs doing.",
    similes=("NO_ACTION", "NO_RESPONSE", "NO_REACTION"),
)
