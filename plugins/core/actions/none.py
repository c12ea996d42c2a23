"""NONE: reply (if REPLY is also chosen) but take no other action."""

from __future__ import annotations

from typing import Any

from bot.components import Action, ActionResult

__all__ = ["action"]


async def _handler(runtime: Any, message: Any, state: Any, options: Any, callback: Any, responses: Any) -> ActionResult:
    return ActionResult(text="No additional action taken", values={"actionType": "NONE"})


action = Action(
    name="NONE",
    handler=_handler,
    description="Take no action beyond replying. Use together with REPLY when nothing else needs doing.",
    similes=("NO_ACTION", "NO_RESPONSE", "NO_REACTION"),
)
