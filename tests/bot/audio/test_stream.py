import av
import numpy as np
import pytest

from bot.media.audio import (
    DISCORD_PCM,
    SPEECH_PCM,
    AudioError,
    PcmFormat,
    StreamDecoder,
    decode_audio,
    ogg_opus,
    resample,
    wav,
)
from bot.media.audio._stream import _lame_delay
from tests.bot.audio._signals import dominant_hz, encode_file, from_pcm, speech, tone

MP3_SOURCE = PcmFormat(44100, 1)


@pytest.fixture(scope="module")
def mp3() -> bytes:
    return encode_file(speech(2.0, MP3_SOURCE), MP3_SOURCE, "mp3", "libmp3lame", bit_rate=64000)


def stream(data: bytes, piece: int, format: str, out: PcmFormat = DISCORD_PCM) -> list[bytes]:
    decoder = StreamDecoder(format, out)
    pieces = [decoder.feed(data[i : i + piece]) for i in range(0, len(data), piece)]
    return [*pieces, decoder.flush()]


@pytest.mark.parametrize("piece", [1, 7, 417, 4096])
def test_mp3_in_chunks_equals_mp3_at_once(mp3: bytes, piece: int) -> None:
    assert b"".join(stream(mp3, piece, "mp3")) == b"".join(stream(mp3, len(mp3), "mp3"))


def test_mp3_stream_matches_decoding_the_whole_file(mp3: bytes) -> None:
    streamed = from_pcm(b"".join(stream(mp3, 1000, "mp3_44100_128")), DISCORD_PCM)[:, 0]
    whole = from_pcm(decode_audio(mp3, DISCORD_PCM), DISCORD_PCM)[:, 0]
    # Same start (LAME delay trimmed); the stream keeps the encoder's end padding, under a frame.
    assert 0 <= len(streamed) - len(whole) < 1152 * 48000 // 44100 + 100
    assert np.abs(streamed[: len(whole)] - whole).max() < 3 / 32768


def test_mp3_plays_from_the_first_chunks(mp3: bytes) -> None:
    pieces = stream(mp3, 1024, "mp3")
    first_audio = next(i for i, pcm in enumerate(pieces) if pcm)
    assert first_audio <= 2, "PCM comes out while the stream is still arriving"
    assert sum(map(len, pieces[:-1])) > 0.9 * sum(map(len, pieces))


def test_mp3_stream_without_id3_or_lame_tag() -> None:
    # Streaming TTS servers often send bare frames; the parser must not need the header.
    data = encode_file(tone(440, 1.0, MP3_SOURCE), MP3_SOURCE, "mp3", "libmp3lame")
    info_frame = data.index(b"Info") - 21  # 4-byte header + 17 bytes of mono side info
    frames = av.CodecContext.create("mp3", "r").parse(data[info_frame:])
    bare = b"".join(bytes(frame) for frame in frames[1:])  # no ID3, no Info frame
    assert _lame_delay(bytes(frames[0])) == 576 and _lame_delay(bare) is None
    pcm = b"".join(stream(bare, 333, "mp3"))
    assert abs(len(pcm) / DISCORD_PCM.bytes_per_second - 1.0) < 0.06
    assert abs(dominant_hz(pcm, DISCORD_PCM) - 440) < 3


@pytest.mark.parametrize("rate", [16000, 22050, 24000, 44100])
def test_pcm_stream_has_the_right_length_and_pitch(rate: int) -> None:
    source = PcmFormat(rate, 1)
    pcm = tone(440, 1.0, source)
    out = b"".join(stream(pcm, 333, f"pcm_{rate}"))  # odd sizes split samples
    assert len(out) == DISCORD_PCM.bytes_per_second
    assert abs(dominant_hz(out, DISCORD_PCM) - 440) < 2
    assert out == resample(pcm, source, DISCORD_PCM)


def test_pcm_16000_in_1_byte_chunks() -> None:
    pcm = speech(0.5, SPEECH_PCM)
    pieces = stream(pcm, 1, "pcm_16000")
    assert b"".join(pieces) == resample(pcm, SPEECH_PCM, DISCORD_PCM)


def test_bare_pcm_is_openai_24_khz() -> None:
    pcm = tone(440, 0.5, PcmFormat(24000, 1))
    out = b"".join(stream(pcm, 4096, "pcm"))
    assert len(out) == DISCORD_PCM.bytes_per_second // 2


@pytest.mark.parametrize("piece", [1, 50, 4096])
def test_wav_streams_incrementally(piece: int) -> None:
    data = wav(speech(0.4, PcmFormat(24000, 1)), PcmFormat(24000, 1))
    pieces = stream(data, piece, "wav")
    assert b"".join(pieces) == decode_audio(data, DISCORD_PCM)
    assert sum(map(len, pieces[:-1])) > 0.9 * sum(map(len, pieces))


def test_wav_with_unknown_length_streams_to_the_end() -> None:
    # What streaming servers send: data size 0xFFFFFFFF.
    data = bytearray(wav(tone(440, 0.5, SPEECH_PCM), SPEECH_PCM))
    data[40:44] = b"\xff\xff\xff\xff"
    out = b"".join(stream(bytes(data), 512, "wav", SPEECH_PCM))
    assert out == bytes(data[44:])


def test_wav_in_another_sample_format_is_decoded_at_flush() -> None:
    data = encode_file(tone(440, 0.5, SPEECH_PCM), SPEECH_PCM, "wav", "pcm_f32le")
    pieces = stream(data, 1000, "wav")
    assert not any(pieces[:-1])
    assert abs(dominant_hz(pieces[-1], DISCORD_PCM) - 440) < 3


@pytest.mark.parametrize("piece", [1, 100, 4096])
def test_ogg_opus_streams_incrementally(piece: int) -> None:
    note = ogg_opus(speech(1.5, DISCORD_PCM), DISCORD_PCM)
    pieces = stream(note, piece, "opus")
    assert b"".join(pieces) == b"".join(stream(note, len(note), "opus"))
    if piece < 1000:
        assert sum(map(len, pieces[:-1])) > 0.9 * sum(map(len, pieces))


def test_ogg_opus_stream_matches_the_whole_file() -> None:
    note = ogg_opus(tone(440, 1.0, DISCORD_PCM), DISCORD_PCM)
    streamed = b"".join(stream(note, 500, "opus"))
    whole = decode_audio(note, DISCORD_PCM)
    assert abs(len(streamed) - len(whole)) < DISCORD_PCM.frame_bytes(25)
    assert abs(dominant_hz(streamed, DISCORD_PCM) - 440) < 2


def test_stream_of_garbage_raises_at_flush() -> None:
    decoder = StreamDecoder("mp3", DISCORD_PCM)
    decoder.feed(b'{"detail": {"status": "quota_exceeded", "message": "too many characters"}}' * 4)
    with pytest.raises(AudioError, match="gave no audio"):
        decoder.flush()


@pytest.mark.parametrize("format", ["wav", "opus"])
def test_stream_that_is_not_the_container_raises(format: str) -> None:
    decoder = StreamDecoder(format, DISCORD_PCM)
    with pytest.raises(AudioError, match="cannot decode"):
        decoder.feed(b"<html><body>502 Bad Gateway</body></html>")
        decoder.flush()


def test_empty_stream_is_empty() -> None:
    assert StreamDecoder("mp3", DISCORD_PCM).flush() == b""


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown stream format 'ulaw_8000'"):
        StreamDecoder("ulaw_8000", DISCORD_PCM)


def test_feed_after_flush_is_a_mistake() -> None:
    decoder = StreamDecoder("pcm_16000", DISCORD_PCM)
    decoder.flush()
    with pytest.raises(RuntimeError, match="after flush"):
        decoder.feed(b"\x00\x00")
