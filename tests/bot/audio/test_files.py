import io
import wave

import pytest

from bot.kernel.errors import TroupeError
from bot.media.audio import (
    DISCORD_PCM,
    SPEECH_PCM,
    AudioError,
    PcmFormat,
    decode_audio,
    duration_s,
    ogg_opus,
    wav,
)
from tests.bot.audio._signals import dominant_hz, encode_file, tone, tone_snr_db


def test_pcm_format_sizes() -> None:
    assert DISCORD_PCM.bytes_per_second == 192_000
    assert DISCORD_PCM.frame_bytes(20) == 3840
    assert SPEECH_PCM.frame_bytes(20) == 640
    assert PcmFormat(44100, 1).frame_bytes(20) == 1764


def test_pcm_format_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="channel count"):
        PcmFormat(48000, 0)
    with pytest.raises(ValueError, match="sample rate"):
        PcmFormat(0, 1)


def test_duration_s() -> None:
    assert duration_s(bytes(192_000 * 3), DISCORD_PCM) == 3.0
    assert duration_s(b"", SPEECH_PCM) == 0.0


def test_wav_keeps_the_samples() -> None:
    pcm = tone(440, 0.5, SPEECH_PCM)
    data = wav(pcm, SPEECH_PCM)
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    with wave.open(io.BytesIO(data)) as read:
        assert (read.getnchannels(), read.getsampwidth(), read.getframerate()) == (1, 2, 16000)
        assert read.readframes(read.getnframes()) == pcm
    assert decode_audio(data, SPEECH_PCM) == pcm


def test_wav_rejects_a_partial_sample() -> None:
    with pytest.raises(AudioError, match="not a whole number of 16-bit 2-channel samples"):
        wav(b"\x00\x01\x02", DISCORD_PCM)


def test_ogg_opus_is_a_voice_note_that_decodes_back() -> None:
    pcm = tone(440, 1.0, DISCORD_PCM)
    note = ogg_opus(pcm, DISCORD_PCM)
    assert note.startswith(b"OggS")
    assert b"OpusHead" in note
    head = note.index(b"OpusHead")
    assert note[head + 9] == 1, "mono: the channel count in OpusHead"
    assert len(note) < 10_000, "about 32 kbit/s"
    back = decode_audio(note, DISCORD_PCM)
    assert abs(duration_s(back, DISCORD_PCM) - 1.0) < 0.03
    assert abs(dominant_hz(back, DISCORD_PCM) - 440) < 3
    assert tone_snr_db(back[9600:-9600], DISCORD_PCM, 440) > 20


def test_ogg_opus_from_speech_rate_pcm() -> None:
    note = ogg_opus(tone(300, 0.4, SPEECH_PCM), SPEECH_PCM)
    back = decode_audio(note, SPEECH_PCM)
    assert abs(duration_s(back, SPEECH_PCM) - 0.4) < 0.03
    assert abs(dominant_hz(back, SPEECH_PCM) - 300) < 5


def test_ogg_opus_rejects_empty_audio() -> None:
    with pytest.raises(AudioError, match="no audio"):
        ogg_opus(b"", DISCORD_PCM)


@pytest.mark.parametrize(
    ("container", "codec"),
    [("mp3", "libmp3lame"), ("wav", "pcm_s16le"), ("ogg", "libopus"), ("ipod", "aac"), ("flac", "flac")],
)
def test_decode_audio_reads_common_files(container: str, codec: str) -> None:
    source = PcmFormat(24000 if codec != "libopus" else 48000, 1)
    data = encode_file(tone(440, 1.0, source), source, container, codec)
    pcm = decode_audio(data, DISCORD_PCM)
    # Encoders add priming/padding; mp3 and aac round up to whole frames.
    assert 0.97 < duration_s(pcm, DISCORD_PCM) < 1.08
    assert abs(dominant_hz(pcm, DISCORD_PCM) - 440) < 3
    assert len(pcm) % DISCORD_PCM.sample_bytes == 0


def test_decode_audio_converts_to_the_requested_format() -> None:
    data = wav(tone(1000, 0.5, DISCORD_PCM), DISCORD_PCM)
    pcm = decode_audio(data, SPEECH_PCM)
    assert abs(len(pcm) - 16000) <= 64
    assert abs(dominant_hz(pcm, SPEECH_PCM) - 1000) < 3


@pytest.mark.parametrize(
    "garbage",
    [b"this is not audio at all, just text" * 20, bytes(range(256)) * 8, b"OggS" + bytes(100), b"\x00"],
)
def test_decode_audio_rejects_garbage_with_audio_error(garbage: bytes) -> None:
    with pytest.raises(AudioError, match="cannot decode audio"):
        decode_audio(garbage, DISCORD_PCM)


def test_decode_audio_rejects_empty_input() -> None:
    with pytest.raises(AudioError, match="empty"):
        decode_audio(b"", DISCORD_PCM)


def test_audio_error_is_a_value_error_and_a_troupe_error() -> None:
    assert issubclass(AudioError, ValueError)
    assert issubclass(AudioError, TroupeError)
    assert AudioError("bad").message == "bad"
