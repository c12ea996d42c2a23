"""REPLY: send the reply text to the room."""

from __future__ import annotations

from bot.sdk import Action, ActionContext, ActionResult, Content, Reply

__all__ = ["action"]


async def _handler(context: ActionContext) -> ActionResult:
    responses = context.responses
    # The planning call already wrote the reply; reusing it saves a second large-model call
    # per message (upstream generates it again).
    content = responses[0].content if responses else Content()
    text = (content.text or "").strip()
    files = tuple(context.attached)  # attached by an earlier step of the plan
    if not text and not files:
        return ActionResult(success=False, error="the model chose REPLY but wrote no text")
    reply = Reply(
        text=text,
        thought=content.thought or "",
        actions=("REPLY",),
        in_reply_to=content.in_reply_to,
        files=files,
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
