"""SUMMARIZE_CONVERSATION: "tl;dr", "catch me up", "what did I miss in the last 2 hours?".

Offered when the message asks for a summary (keywords, as upstream; on every platform). The
window is read from the request without a model call ("the last 20 messages", "the last 2
hours", "since this morning": :mod:`plugins.core._summary_window`), else from the plan's own
text; with none, in a group it is what was said since the asker last wrote in the room, else the
last 50 messages, and in a private conversation (the asker and the character alone) the
conversation itself, back to its last long pause. The summary itself is :func:`plugins.core._summaries.summarize`. A short summary is
one message; a long one (over :data:`~plugins.core._delivery.ONE_MESSAGE_CHARS`) is a line
saying what it covers, with the summary as a Markdown file. Unlike upstream, the
window's start and end are not swapped, and no model call guesses the window.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from bot.sdk import Action, ActionContext, ActionResult, ConversationSummary, HandlerCallback, Memory, State, now_ms

from .._summaries import summarize
from .._summary_window import Window, parse_window
from ._common import sender_text, source_of

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["action", "asks_for_summary", "send_summary"]

NAME = "SUMMARIZE_CONVERSATION"
RESPONSE = "SUMMARIZE_CONVERSATION_RESPONSE"

_ASKS = re.compile(
    r"\b(?:summar(?:y|ies|ise|ize|ised|ized|ising|izing|isation|ization)|recap|tl;?dr|sum (?:it |this |that )?up|"
    r"catch (?:me |us )?up|what did i miss|what have i missed|bring me up to speed|fill me in|rundown|"
    r"gist|key points|main points|highlights|long story short|in a nutshell|digest|overview)\b"
)


def asks_for_summary(text: str) -> bool:
    """Whether ``text`` asks for a summary of the conversation."""
    return bool(_ASKS.search(text.lower()))


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    return asks_for_summary(sender_text(message))


async def send_summary(callback: HandlerCallback, message: Memory, summary: ConversationSummary) -> ActionResult:
    """Send ``summary`` in reply to ``message``: one message, or a lead and a file when it is long."""
    reply = replace(summary.reply(), actions=(RESPONSE,), in_reply_to=message.id, source=source_of(message))
    if not await callback(reply):
        return ActionResult(success=False, error="send failed: the platform took none of the summary")
    data = {"actionName": NAME, "messages": summary.messages, "long": summary.long}
    if summary.failed:
        return ActionResult(success=False, text=summary.text, error="the model gave no summary", data=data)
    return ActionResult(text=summary.text, data=data)


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message, responses = context.runtime, context.message, context.responses
    request = sender_text(message)
    now = message.created_at or now_ms()
    planned = " ".join(r.content.text or "" for r in responses)
    window = parse_window(request, now) or parse_window(planned, now) or Window()
    summary = await summarize(
        runtime,
        message.room_id,
        window,
        request=request,
        end=message.created_at,
        skip_id=message.id,
        asker=message.entity_id,
    )
    return await send_summary(context.reply, message, summary)


action = Action(
    name=NAME,
    handler=_handler,
    validate=_validate,
    description=(
        "Summarise the conversation in this room when asked (tl;dr, catch me up, what did I miss): "
        "over the last N messages, a time such as the last 2 hours or since this morning, or since the asker "
        "last wrote. It sends the summary itself; a REPLY beside it should only be a short lead-in, or nothing."
    ),
    similes=(
        "RECAP",
        "RECAP_CONVERSATION",
        "CATCH_UP",
        "TLDR",
        "SUMMARIZE_CHAT",
        "SUMMARIZATION",
        "CHAT_SUMMARY",
        "CONVERSATION_SUMMARY",
    ),
)
