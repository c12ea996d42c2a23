"""CHAT_WITH_ATTACHMENTS: summarise, or answer a question about, what was shared in the room.

Works from the text already extracted from the attachments when they arrived (pages, PDFs, text
files, transcripts, image descriptions): the ones the request names (by id, file name or link),
else the newest few, bounded to :data:`_MAX_CHARS` in all, in one TEXT_SMALL call
(``attachmentsTemplate``). An answer longer than one chat message goes as a Markdown file,
``about-<first attachment>.md``, after a line saying what it is about.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.sdk import (
    Action,
    ActionContext,
    ActionResult,
    Memory,
    ModelError,
    ModelType,
    State,
    file_name_part,
    words_tokens,
)

from .._delivery import bound_text
from .._prompts import render, template
from ..providers._common import UNKNOWN_USER, entity_names, recent_attachments
from ._common import notify, sender_text
from ._media import named_in, send_answer

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["action"]

_NAME = "CHAT_WITH_ATTACHMENTS"
_MAX_ITEMS = 5
_MAX_CHARS = 24_000  # about 6,000 tokens of attachments: one small-model call stays cheap
_MAX_WORDS = 300
# Upstream's trigger words (plugin-discord's chatWithAttachments).
_WORDS = (
    "attachment summary summarize summarise research pdf video audio image document link file code report "
    "write details information talk chat read listen watch page article"
).split()


async def _readable(runtime: AgentRuntime, message: Memory) -> list[dict[str, Any]]:
    found = await recent_attachments(runtime, message)
    return [i for _, i in found if i["text"] or i["description"]]


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    text = sender_text(message).casefold()
    return any(w in text for w in _WORDS) and bool(await _readable(runtime, message))


def _block(items: Sequence[dict[str, Any]]) -> str:
    share = _MAX_CHARS // max(1, len(items))
    parts = []
    for item in items:
        lines = [f"## {item['title'] or item['url'] or item['id']} (id {item['id'] or 'none'})"]
        lines += [f"{label}: {item[key]}" for label, key in (("URL", "url"), ("Type", "contentType")) if item[key]]
        if item["description"]:
            lines.append(f"Description: {item['description']}")
        if item["text"]:
            lines.append(item["text"])
        parts.append(bound_text("\n".join(lines), share))
    return "\n\n".join(parts)


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message, state = context.runtime, context.message, context.state
    readable = await _readable(runtime, message)
    if not readable:
        await notify(context.reply, "I don't see any files, links or media in this conversation.", _NAME, message)
        return ActionResult(success=False, error="no attachment with text in the recent conversation")
    request = sender_text(message)
    chosen = named_in(request, readable) or readable[-_MAX_ITEMS:]
    values = {
        "agentName": runtime.character.name,
        "senderName": state.values.get("senderName")
        or (await entity_names(runtime, [message.entity_id])).get(message.entity_id, UNKNOWN_USER),
        "request": request,
        "attachments": _block(chosen[-_MAX_ITEMS:]),
        "maxWords": _MAX_WORDS,
    }
    prompt = render(template(runtime.character.templates, "attachmentsTemplate"), values, rng=runtime.rng)
    try:
        params = {"prompt": prompt, "max_tokens": words_tokens(_MAX_WORDS)}
        answer = str(await runtime.use_model(ModelType.TEXT_SMALL, params) or "").strip()
    except ModelError as exc:
        await notify(context.reply, "I couldn't read those just now; ask me again in a moment.", _NAME, message)
        return ActionResult(success=False, error=f"no answer from the model: {exc}")
    if not answer:
        return ActionResult(success=False, error="the model wrote nothing about the attachments")
    used = chosen[-_MAX_ITEMS:]
    ids = [i["id"] for i in used]
    titles = [str(i["title"] or i["url"] or i["id"]) for i in used]
    filename = f"about-{file_name_part(titles[0], 'attachments')}.md"
    about = titles[0] if len(titles) == 1 else f"{titles[0]} and {len(titles) - 1} more"
    lead = f"About {about}: my answer is long, so it is in {filename}."
    return await send_answer(
        context.reply, message, answer, _NAME, {"attachmentIds": ids}, long=(lead, filename, answer)
    )


action = Action(
    name=_NAME,
    handler=_handler,
    validate=_validate,
    description="Summarise, or answer a question about, the files, links, PDFs, images, recordings and videos "
    "shared in the conversation, from their full text. Use when asked about their content in more depth "
    "than the attachment notes show.",
    similes=(
        "CHAT_WITH_ATTACHMENT",
        "SUMMARIZE_FILES",
        "SUMMARIZE_FILE",
        "CHAT_WITH_PDF",
        "ATTACHMENT_SUMMARY",
        "RECAP_ATTACHMENTS",
        "SUMMARIZE_VIDEO",
        "SUMMARIZE_AUDIO",
        "SUMMARIZE_IMAGE",
        "SUMMARIZE_DOCUMENT",
        "SUMMARIZE_LINK",
        "FILE_SUMMARY",
    ),
)
