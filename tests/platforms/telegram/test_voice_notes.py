"""Making voice notes: a speech model's audio (any format) as Telegram's Ogg/Opus, and a reply
as words to say."""

from __future__ import annotations

import array
import io
import math

import av
import numpy as np
import pytest

from bot.media.audio import AudioError, PcmFormat, decode_audio, wav
from platforms.telegram._voice import MAX_SPOKEN_CHARS, speakable, voice_note

MONO_48K = PcmFormat(48000, 1)


def tone(seconds: float, rate: int) -> bytes:
    count = int(seconds * rate)
    return array.array("h", (int(9000 * math.sin(2 * math.pi * 330 * i / rate)) for i in range(count))).tobytes()


def mp3(seconds: float) -> bytes:
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mp3") as container:
        stream = container.add_stream("libmp3lame", rate=24000, layout="mono")
        samples = np.frombuffer(tone(seconds, 24000), dtype="<i2").reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.rate = 24000
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    return buffer.getvalue()


def played_seconds(note: bytes) -> float:
    return len(decode_audio(note, MONO_48K)) / (48000 * 2)


@pytest.mark.parametrize(
    ("audio", "format", "seconds"),
    [
        (wav(tone(1.2, 22050), PcmFormat(22050, 1)), "wav", 1.2),
        (tone(0.8, 24000), "pcm_24000", 0.8),
        (tone(0.8, 16000), "pcm_16000", 0.8),
        (tone(0.5, 24000), "pcm", 0.5),  # OpenAI's raw PCM: 24 kHz
    ],
)
def test_speech_in_any_format_becomes_an_ogg_opus_voice_note(audio: bytes, format: str, seconds: float) -> None:
    note = voice_note(audio, format)
    assert note.data.startswith(b"OggS") and b"OpusHead" in note.data
    assert abs(played_seconds(note.data) - seconds) < 0.1 and note.duration == math.ceil(seconds)


def test_mp3_speech_is_converted_too() -> None:
    note = voice_note(mp3(2.3), "opus")  # bytes are decoded for what they are, whatever was asked
    assert note.data.startswith(b"OggS") and note.duration == 3 and 2.1 < played_seconds(note.data) < 2.6


def test_what_is_not_audio_is_an_audio_error() -> None:
    with pytest.raises(AudioError):
        voice_note(b"FAKE-AUDIO:opus:hello", "opus")
    with pytest.raises(AudioError, match="unknown raw PCM format"):
        voice_note(b"\x00\x00", "pcm_fast")


def test_a_reply_is_spoken_without_its_markdown_and_long_ones_end_on_a_sentence() -> None:
    assert speakable("# Plan\n**Bold**, *it*, [the docs](https://x.y/a_b).") == "Plan\nBold, it, the docs."
    assert speakable("  **Hello.**  ") == "Hello."
    long = "This is one sentence. " * 400
    spoken = speakable(long)
    assert len(spoken) <= MAX_SPOKEN_CHARS and spoken.endswith("sentence.")
