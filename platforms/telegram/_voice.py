"""Voice notes both ways: the spoken media an incoming message carries, and the audio a speech
model returns made into the Ogg/Opus voice note Telegram plays.

Pure functions; ``voice_note`` is CPU-bound (decoding and Opus encoding), so the adapter runs it
in a thread.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from bot.sdk import AudioError, spoken_text
from bot.sdk.media import PcmFormat, decode_audio, ogg_opus, wav

__all__ = ["MAX_SPOKEN_CHARS", "Spoken", "VoiceNote", "speakable", "spoken_media", "voice_note"]

#: Opus runs at 48 kHz, and a voice needs one channel.
_VOICE_NOTE = PcmFormat(48000, 1)
#: Raw PCM with no rate in its format name is OpenAI's: 24 kHz.
_DEFAULT_PCM_RATE = 24000
#: Speech models take about 4096 characters; a reply longer than this is spoken up to a sentence end.
MAX_SPOKEN_CHARS = 4000
_SENTENCE_END = re.compile(r"[.!?…](?=\s)")


@dataclass(frozen=True, slots=True)
class Spoken:
    """Audio on an incoming message that can be transcribed."""

    kind: str
    """``voice``, ``audio`` or ``video_note`` (the Message attribute)."""
    file_id: str
    size: int | None
    filename: str
    """Tells the transcription model the format (``voice.ogg``, ``video_note.mp4`` …)."""
    said: bool
    """The person spoke it (a voice or video note), rather than sharing a recording."""

    @property
    def label(self) -> str:
        return {"voice": "voice message", "audio": "audio file", "video_note": "video message"}[self.kind]


def spoken_media(message: Any) -> Spoken | None:
    """The message's voice note, audio file or round video, if it has one."""
    voice = getattr(message, "voice", None)
    if voice is not None:
        return Spoken("voice", voice.file_id, voice.file_size, "voice.ogg", True)
    note = getattr(message, "video_note", None)
    if note is not None:
        return Spoken("video_note", note.file_id, note.file_size, "video_note.mp4", True)
    audio = getattr(message, "audio", None)
    if audio is not None:
        name = audio.file_name or ("audio.ogg" if (audio.mime_type or "").endswith("ogg") else "audio.mp3")
        return Spoken("audio", audio.file_id, audio.file_size, name, False)
    return None


def speakable(text: str) -> str:
    """A reply as words to say: Markdown removed (code skipped, links by their text), and cut
    after a sentence if very long."""
    plain = spoken_text(text)
    if len(plain) <= MAX_SPOKEN_CHARS:
        return plain
    head = plain[:MAX_SPOKEN_CHARS]
    ends = [m.end() for m in _SENTENCE_END.finditer(head + " ")]
    return head[: ends[-1]] if ends else head.rsplit(None, 1)[0]


@dataclass(frozen=True, slots=True)
class VoiceNote:
    data: bytes
    """Ogg/Opus, mono, 48 kHz."""
    duration: int
    """Whole seconds, rounded up (what Telegram shows)."""


def voice_note(audio: bytes, format: str) -> VoiceNote:
    """``audio`` (any file FFmpeg reads, or raw s16le mono PCM when ``format`` is ``pcm`` or
    ``pcm_<rate>``) as a Telegram voice note.

    Raises:
        AudioError: the audio could not be decoded or encoded, or holds no sound.
    """
    if format == "pcm" or format.startswith("pcm_"):
        rate = format.partition("_")[2]
        if rate and not rate.isdigit():
            raise AudioError(f"unknown raw PCM format {format!r}")
        audio = wav(audio[: len(audio) // 2 * 2], PcmFormat(int(rate) if rate else _DEFAULT_PCM_RATE, 1))
    pcm = decode_audio(audio, _VOICE_NOTE)
    seconds = len(pcm) / (_VOICE_NOTE.rate * 2)  # 16-bit mono
    return VoiceNote(ogg_opus(pcm, _VOICE_NOTE), max(1, math.ceil(seconds)))
