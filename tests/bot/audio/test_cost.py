"""Per-frame work stays small and does not grow with how long anyone has been talking.

No timing asserts (CI machines vary): these run enough frames that a quadratic or
per-frame-allocating implementation would make the suite visibly slow, and they check the
work is proportional to the input.
"""

import itertools

from bot.media.audio import (
    DISCORD_PCM,
    SPEECH_PCM,
    OpusDecoder,
    OpusEncoder,
    Resampler,
    Segmenter,
    VadConfig,
    frame_level_db,
)
from tests.bot.audio._signals import frames, mix, speech, white_noise


def test_ten_minutes_of_three_speakers_through_the_segmenter() -> None:
    sample = frames(mix(speech(4.0, DISCORD_PCM), white_noise(4.0, DISCORD_PCM, level_db=-45)), DISCORD_PCM)
    segmenter = Segmenter(VadConfig(max_utterance_s=30.0), DISCORD_PCM)
    emitted = 0
    cycle = itertools.cycle(sample)
    for i in range(30_000):  # 10 minutes of 20 ms frames
        now = i * 0.02
        for speaker in (1, 2, 3):
            emitted += segmenter.push(speaker, next(cycle), now) is not None
        if i % 10 == 0:
            emitted += len(segmenter.tick(now))
    emitted += len(segmenter.flush())
    # Continuous speech: every speaker is cut at 30 s, 20 times in 10 minutes.
    assert 3 * 19 <= emitted <= 3 * 21


def test_a_level_per_received_packet_is_cheap() -> None:
    frame = frames(speech(0.1, DISCORD_PCM), DISCORD_PCM)[2]
    levels = {frame_level_db(frame) for _ in range(20_000)}
    assert len(levels) == 1


def test_opus_and_resampling_for_twenty_seconds_of_frames() -> None:
    pcm = speech(1.0, DISCORD_PCM)
    encoder, decoder = OpusEncoder(), OpusDecoder()
    to_speech = Resampler(DISCORD_PCM, SPEECH_PCM)
    out = 0
    for _ in range(20):
        for packet in encoder.encode(pcm):
            out += len(to_speech.convert(decoder.decode(packet)))
    out += len(to_speech.flush())
    assert out == 20 * SPEECH_PCM.bytes_per_second
