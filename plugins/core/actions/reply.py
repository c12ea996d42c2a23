"""REPLY: send the reply text to the room."""

from __future__ import annotations

from bot.sdk import Action, ActionContext, ActionResult, Reply, files_in

__all__ = ["action"]


async def _handler(context: ActionContext) -> ActionResult:
    responses = context.responses
    # The planning call already wrote the reply; reusing it saves a second large-model call
    # per message (upstream generates it again).
    content = responses[0].content if responses else {}
    text = str(content.get("text") or "").strip()
    files = files_in(content)  # attached by an earlier step of the plan
    if not text and not files:
        return ActionResult(success=False, error="the model chose REPLY but wrote no text")
    in_reply_to = content.get("inReplyTo")
    reply = Reply(
        text=text,
        thought=thought if isinstance(thought := content.get("thought", ""), str) else None,
        actions=("REPLY",),
        in_reply_to=None if in_reply_to is None else str(in_reply_to),
        files=tuple(files),
    )
    sent = await context.reply(reply)
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
