"""Whole audio files made from PCM: WAV for speech-to-text, Ogg/Opus for voice notes."""

from __future__ import annotations

import io
import wave

import av

from bot.media.audio._avframes import frame_from_pcm
from bot.media.audio._errors import AudioError, translate_av_errors
from bot.media.audio._format import PcmFormat
from bot.media.audio._resample import resample

__all__ = ["VOICE_NOTE_PCM", "ogg_opus", "wav"]

#: Telegram voice notes: Opus runs at 48 kHz internally and voice needs only one channel.
VOICE_NOTE_PCM = PcmFormat(48000, 1)


def wav(pcm: bytes, fmt: PcmFormat) -> bytes:
    """A RIFF/WAVE file holding ``pcm`` unchanged (16-bit PCM)."""
    fmt.check(pcm)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(fmt.channels)
        out.setsampwidth(2)
        out.setframerate(fmt.rate)
        out.writeframes(pcm)
    return buffer.getvalue()


def ogg_opus(pcm: bytes, fmt: PcmFormat, *, bitrate: int = 32000) -> bytes:
    """An Ogg/Opus file of ``pcm``, mono 48 kHz: what Telegram plays as a voice note.

    32 kbit/s is transparent for speech and keeps a minute of voice near 240 KB. Raises
    ``AudioError`` for PCM that is not whole samples or empty. CPU-bound (about a second per minute of
    audio): run anything longer than a few seconds in a thread.
    """
    fmt.check(pcm)
    if not pcm:
        raise AudioError("cannot make a voice note from no audio (0 bytes of PCM)")
    mono = resample(pcm, fmt, VOICE_NOTE_PCM)
    buffer = io.BytesIO()
    with translate_av_errors("cannot encode Ogg/Opus"), av.open(buffer, mode="w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=VOICE_NOTE_PCM.rate, layout="mono")
        stream.bit_rate = bitrate
        # PyAV re-chunks the frame into the encoder's 20 ms frame size itself.
        for packet in stream.encode(frame_from_pcm(mono, VOICE_NOTE_PCM)):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buffer.getvalue()
