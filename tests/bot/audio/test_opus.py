import pytest

from bot.media.audio import (
    DISCORD_PCM,
    FRAME_MS,
    FRAME_SAMPLES,
    OPUS_SILENCE,
    AudioError,
    OpusDecoder,
    OpusEncoder,
)
from tests.bot.audio._signals import dominant_hz, silence, speech, tone, tone_snr_db

FRAME_BYTES = FRAME_SAMPLES * 4


def test_frame_constants() -> None:
    assert (FRAME_MS, FRAME_SAMPLES) == (20, 960)


def test_round_trip_keeps_a_440_hz_tone() -> None:
    pcm = tone(440, 1.0, DISCORD_PCM)
    encoder, decoder = OpusEncoder(), OpusDecoder()
    packets = encoder.encode(pcm) + encoder.flush()
    assert len(packets) == 50, "one packet per 20 ms"
    decoded = [decoder.decode(packet) for packet in packets]
    assert all(len(pcm) == FRAME_BYTES for pcm in decoded), "each packet is 960 stereo samples"
    back = b"".join(decoded)
    assert abs(dominant_hz(back, DISCORD_PCM) - 440) < 2
    # Skip the encoder's start-up; the codec delay does not matter to a phase-free fit.
    assert tone_snr_db(back[FRAME_BYTES * 5 :], DISCORD_PCM, 440) > 25


def test_packets_are_bare_opus_not_ogg() -> None:
    packets = OpusEncoder().encode(speech(0.2, DISCORD_PCM))
    assert len(packets) == 10
    for packet in packets:
        assert not packet.startswith(b"OggS")
        assert packet[0] & 0x04, "stereo flag"
        assert packet[0] & 0x03 == 0, "one frame per packet"


def test_encode_buffers_the_remainder_across_calls() -> None:
    pcm = tone(440, 0.25, DISCORD_PCM)
    encoder = OpusEncoder()
    packets = []
    for start in range(0, len(pcm), 1001):  # odd sizes: splits samples and frames
        packets += encoder.encode(pcm[start : start + 1001])
    assert len(packets) == 12  # 250 ms = 12 whole frames + 10 ms
    assert encoder.buffered_ms == pytest.approx(10)
    tail = encoder.flush()
    assert len(tail) == 1
    assert encoder.flush() == [] and encoder.buffered_ms == 0


def test_packet_count_matches_duration() -> None:
    encoder = OpusEncoder()
    for seconds, expected in ((0.02, 1), (0.5, 25), (0.51, 26), (2.0, 100)):
        packets = encoder.encode(silence(seconds, DISCORD_PCM)) + encoder.flush()
        assert len(packets) == expected, seconds


def test_encoder_is_reusable_after_flush() -> None:
    encoder, decoder = OpusEncoder(), OpusDecoder()
    encoder.encode(tone(300, 0.1, DISCORD_PCM))
    encoder.flush()
    packets = encoder.encode(tone(880, 0.5, DISCORD_PCM)) + encoder.flush()
    back = b"".join(decoder.decode(p) for p in packets)
    assert abs(dominant_hz(back, DISCORD_PCM) - 880) < 3


def test_discord_silence_frame_decodes_to_20_ms_of_silence() -> None:
    assert OpusDecoder().decode(OPUS_SILENCE) == bytes(FRAME_BYTES)
    assert OPUS_SILENCE == b"\xf8\xff\xfe"


def test_decode_missing_is_20_ms_of_silence() -> None:
    assert OpusDecoder().decode_missing() == bytes(FRAME_BYTES)


def test_decoder_survives_a_lost_packet() -> None:
    packets = OpusEncoder().encode(tone(440, 0.5, DISCORD_PCM))
    decoder = OpusDecoder()
    out = [decoder.decode(p) if i != 10 else decoder.decode_missing() for i, p in enumerate(packets)]
    assert all(len(pcm) == FRAME_BYTES for pcm in out)
    assert abs(dominant_hz(b"".join(out[12:]), DISCORD_PCM) - 440) < 3


def test_mono_packets_decode_to_stereo() -> None:
    # A 20 ms CELT mono packet of silence (TOC 0xf8 with the stereo bit clear) from another client.
    assert len(OpusDecoder().decode(b"\xf8\xff\xfe\x00")) == FRAME_BYTES


@pytest.mark.parametrize("packet", [b"\xff\xff\xff\xff\xff", bytes(range(7, 60))])
def test_corrupt_packet_raises_audio_error(packet: bytes) -> None:
    decoder = OpusDecoder()
    with pytest.raises(AudioError, match=r"cannot decode Opus packet \(\d+ bytes"):
        decoder.decode(packet)
    # ...and the decoder goes on working for the next packet.
    good = OpusEncoder().encode(tone(440, 0.02, DISCORD_PCM))[0]
    assert len(decoder.decode(good)) == FRAME_BYTES


def test_empty_packet_raises_audio_error() -> None:
    with pytest.raises(AudioError, match="empty Opus packet"):
        OpusDecoder().decode(b"")
