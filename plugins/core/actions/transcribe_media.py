"""TRANSCRIBE_MEDIA: send the words of a recording or video shared in the room.

The words were heard when the attachment arrived (``_attachments.py``); this sends them back.
The recording named in the request (by id, file name or link) is chosen, else the newest.
A transcript longer than one chat message goes as a Markdown file, ``transcript-<name>.md``,
after a line saying whose it is. No model call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.sdk import Action, ActionContext, ActionResult, Memory, State, file_name_part

from .._attachments import SOUND_PREFIX, SOUNDLESS, attachment_kind
from ..providers._common import recent_attachments
from ._common import notify, sender_text
from ._media import named_in, send_answer

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["action"]

_NAME = "TRANSCRIBE_MEDIA"
_WORDS = (
    "transcri",  # transcribe, transcript, transcription
    "audio",
    "video",
    "voice",
    "recording",
    "podcast",
    "meeting",
    "interview",
    "lecture",
    "speech",
    "what did they say",
    "what was said",
)


async def _recordings(runtime: AgentRuntime, message: Memory) -> list[dict[str, Any]]:
    return [i for _, i in await recent_attachments(runtime, message) if attachment_kind(i) in ("audio", "video")]


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    text = sender_text(message).casefold()
    return any(w in text for w in _WORDS) and bool(await _recordings(runtime, message))


def _words(item: dict[str, Any]) -> str:
    text = str(item["text"]).strip()
    if text == SOUNDLESS:
        return ""
    return text.removeprefix(SOUND_PREFIX).strip()


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message = context.runtime, context.message
    recordings = await _recordings(runtime, message)
    if not recordings:
        await notify(context.reply, "I don't see a recording or a video in this conversation.", _NAME, message)
        return ActionResult(success=False, error="no audio or video attachment in the recent conversation")
    item = (named_in(sender_text(message), recordings) or recordings[-1:])[-1]
    name = item["title"] or item["id"] or "the recording"
    words = _words(item)
    if not words:
        said = (
            f"Nothing was heard in {name}."
            if item["text"]
            else f"I couldn't hear {name}: it came before I was listening, or could not be transcribed. "
            "Share it again and ask me."
        )
        await notify(context.reply, said, _NAME, message)
        return ActionResult(success=False, error=f"no transcript of {item['id'] or name}")
    text = f"Here is the transcript of {name}:\n```md\n{words}\n```"
    filename = f"transcript-{file_name_part(name, 'recording')}.md"
    lead = f"Here is the transcript of {name} ({len(words.split())} words): it is long, so it is in {filename}."
    long = (lead, filename, f"# Transcript of {name}\n\n{words}\n")
    return await send_answer(context.reply, message, text, _NAME, {"attachmentId": item["id"]}, long=long)


action = Action(
    name=_NAME,
    handler=_handler,
    validate=_validate,
    description="Send the full transcript of a voice message, recording or video shared in the conversation. "
    "Use when someone asks what was said in one.",
    similes=("TRANSCRIBE_AUDIO", "TRANSCRIBE_VIDEO", "MEDIA_TRANSCRIPT", "VIDEO_TRANSCRIPT", "AUDIO_TRANSCRIPT"),
)
