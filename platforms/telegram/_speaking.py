"""Voice replies: a reply (or, by ``TELEGRAM_VOICE_REPLIES=always``, every reply and every
message SEND_MESSAGE delivers) also said as a voice note, after its text; the voice note is
added to the stored message as an attachment, by file id, and VOICE_MESSAGE_SENT says so."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from telegram import Chat

from bot.sdk import Attachment, FrozenMap, Memory, ModelError, VoiceMessageSent, reason_for, synthesize

from ._mapping import SOURCE
from ._outbound import send_voice
from ._voice import speakable, voice_note

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = ["Indicator", "speak"]

_log = logging.getLogger(__name__)


class Indicator(Protocol):
    """A chat action shown while something is prepared ("recording a voice message…")."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def speak(
    adapter: TelegramAdapter,
    recording: Indicator,
    chat: Chat,
    text: str,
    memory: Memory,
    *,
    reply_to: int | None,
    thread: int | None,
    what: str,
) -> Memory | None:
    """Say ``text`` in ``chat`` as a voice note (quoting ``reply_to``, if given), after the text
    message ``memory`` stores, showing ``recording`` meanwhile. ``what`` names the text in the
    log: ``reply``, or ``message`` for one sent unasked.

    Returns ``memory`` with the voice note among its attachments (a new memory, also stored),
    or None when no voice note went out. Never raises: without a voice the text stands, and a
    warning says why.
    """
    words = speakable(text)
    if not words:
        return None
    assert adapter.app is not None
    name = adapter.name
    await recording.start()
    try:
        audio, audio_format = await synthesize(adapter.runtime, words, "opus")
        note = await asyncio.to_thread(voice_note, audio, audio_format)
        sent = await send_voice(
            adapter.app.bot,
            chat.id,
            note.data,
            duration=note.duration,
            reply_to=reply_to,
            thread_id=thread,
            deadline_s=adapter.config.send_deadline,
        )
    except Exception as exc:
        reason = (
            reason_for(exc, name)
            if isinstance(exc, (ModelError, ValueError))
            else (getattr(exc, "message", None) or type(exc).__name__)
        )
        _log.warning(
            "%s: the %s in %s (chat %s) went out as text only, without a voice note: %s",
            name,
            what,
            chat.title or "a private chat",
            chat.id,
            reason,
        )
        return None
    finally:
        await recording.stop()
    voice = sent.voice
    attachment = Attachment(
        id=voice.file_id if voice else "",
        title="voice.ogg",
        content_type="audio/ogg",
        source=SOURCE,
        private=True,
        transcribed=True,
        text=words,
        description=f"Voice note of this {what}",
        url=f"telegram:file:{voice.file_unique_id}" if voice else "",
        # Telegram's own: how long it plays, and the message that carries it.
        extra=FrozenMap({"duration": note.duration, "messageId": sent.message_id}),
    )
    carried = (*(memory.content.attachments or ()), attachment)
    said = replace(memory, content=replace(memory.content, attachments=carried))
    assert said.id is not None  # a Telegram message's memory is named after its chat and id
    await adapter.runtime.store.update_memory(said.id, content=said.content)
    await adapter.runtime.emit(VoiceMessageSent(message=said, source=SOURCE))
    return said
