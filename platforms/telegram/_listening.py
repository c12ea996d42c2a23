"""Hearing what people send: files downloaded from Telegram, and voice notes, audio files and
round videos transcribed into the message's words before the pipeline sees it (so a name said
aloud addresses the character). Audio over the 20 MB the Bot API lets bots download is never
fetched: the character sees a voice message it could not listen to, and why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from telegram import Bot
from telegram.error import BadRequest

from bot.sdk import Content, ModelError, TooLargeToFetch, reason_for, transcribe

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

    from ._mapping import Translated

__all__ = ["FileTooLarge", "download", "listen"]

_log = logging.getLogger(__name__)

_MAX_DOWNLOAD = 20 * 1024 * 1024  # the Bot API serves files up to 20 MB
_TOO_LARGE = "larger than the 20 MB the Telegram Bot API lets bots download"
_DOWNLOAD_TIMEOUT_S = 60.0


class FileTooLarge(TooLargeToFetch, ValueError):
    """A file over the 20 MB the Bot API lets bots download."""


async def download(bot: Bot, item: Mapping[str, object]) -> bytes:
    """The bytes of the file ``item["id"]``.

    Raises:
        FileTooLarge: over 20 MB (Telegram's "file is too big", or the size it reports).
    """
    try:
        file = await bot.get_file(str(item["id"]))
    except BadRequest as exc:
        if "file is too big" in exc.message.lower():
            raise FileTooLarge(_TOO_LARGE) from None
        raise
    if file.file_size and file.file_size > _MAX_DOWNLOAD:
        raise FileTooLarge(_TOO_LARGE)
    return bytes(await file.download_as_bytearray())


async def listen(runtime: AgentRuntime, bot: Bot, seen: Translated) -> Translated:
    """Transcribe the message's voice note, audio file or round video into its text (after the
    caption, if any); its attachment keeps the transcript and is marked ``transcribed``, so the
    core does not transcribe it again.

    Spoken notes set ``content.is_voice_message``. A failure is logged and leaves the attachment
    untranscribed: the core tries again if the character answers. Audio over 20 MB (by the
    update's size, else by what ``getFile`` says) is not downloaded: its attachment is marked
    ``transcribed`` with no words and a description saying it was too large, so the character
    knows why it cannot hear it and the core does not try again.

    Returns ``seen`` with its memory so changed (new ones: ``seen`` is left as it is).
    """
    spoken, name = seen.spoken, runtime.character.name
    if spoken is None:
        return seen
    content = seen.memory.content
    if spoken.said:
        content = replace(content, is_voice_message=True)
    where = seen.title or "a private chat"
    try:
        if spoken.size and spoken.size > _MAX_DOWNLOAD:
            raise FileTooLarge(_TOO_LARGE)
        async with asyncio.timeout(_DOWNLOAD_TIMEOUT_S):
            audio = await download(bot, {"id": spoken.file_id})
        transcript = await transcribe(runtime, audio, spoken.filename)
    except FileTooLarge:
        _log.info(
            "%s: a %s in %s (chat %s) is %s; it goes on untranscribed",
            name,
            spoken.label,
            where,
            seen.chat_id,
            _TOO_LARGE,
        )
        heard = _mark_heard(
            content,
            spoken.file_id,
            "",
            f"A {spoken.label} too large to listen to: it is {_TOO_LARGE}, so it was not transcribed",
        )
        return _with(seen, heard)
    except Exception as exc:
        # A download error may quote the file URL, which carries the token: name only its kind.
        reason = reason_for(exc, name) if isinstance(exc, (ModelError, ValueError)) else type(exc).__name__
        _log.warning(
            "%s: could not transcribe a %s in %s (chat %s): %s; it goes on untranscribed",
            name,
            spoken.label,
            where,
            seen.chat_id,
            reason,
        )
        return _with(seen, content)
    content = _mark_heard(
        content,
        spoken.file_id,
        transcript,
        f"Transcript of a {spoken.label}" if transcript else f"A {spoken.label} with no words in it",
    )
    if transcript:
        caption = content.text
        content = replace(content, text=f"{caption}\n{transcript}" if caption else transcript)
    return _with(seen, content)


def _with(seen: Translated, content: Content) -> Translated:
    return replace(seen, memory=replace(seen.memory, content=content))


def _mark_heard(content: Content, file_id: str, transcript: str, description: str) -> Content:
    """``content`` with the attachment ``file_id`` dealt with (``transcribed``): the core leaves it."""
    items = content.attachments
    if not items:
        return content
    return replace(
        content,
        attachments=tuple(
            replace(item, transcribed=True, text=transcript, description=description) if item.id == file_id else item
            for item in items
        ),
    )
