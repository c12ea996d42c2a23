import itertools
import math

import pytest

from bot.media.audio import (
    DISCORD_PCM,
    SILENCE_DB,
    SPEECH_PCM,
    PcmFormat,
    Segmenter,
    Utterance,
    VadConfig,
    duration_s,
    frame_level_db,
)
from tests.bot.audio._signals import (
    frames,
    mix,
    pink_noise,
    silence,
    speech,
    tone,
    white_noise,
)

FMT = DISCORD_PCM
FRAME_S = 0.02


def feed(segmenter: Segmenter, speaker: str, pcm: bytes, start: float = 0.0) -> list[Utterance]:
    """Push ``pcm`` as 20 ms frames arriving in real time from ``start``, then wait it out."""
    out = []
    now = start
    for frame in frames(pcm, segmenter.fmt):
        if utterance := segmenter.push(speaker, frame, now):
            out.append(utterance)
        now += FRAME_S
    return out + segmenter.tick(now + 10)


def assert_consistent(utterance: Utterance) -> None:
    assert utterance.ended - utterance.started == pytest.approx(utterance.duration_s, abs=1e-6)
    assert utterance.duration_s == pytest.approx(duration_s(utterance.pcm, utterance.fmt))
    assert len(utterance.pcm) % utterance.fmt.sample_bytes == 0


# --- frame_level_db ---------------------------------------------------------------------------


def test_frame_level_db() -> None:
    assert frame_level_db(b"\xff\x7f\x00\x80" * 480) == pytest.approx(0, abs=0.01)  # full-scale square
    assert frame_level_db(tone(1000, 0.02, FMT, level_db=-12)) == pytest.approx(-12, abs=0.1)
    assert frame_level_db(white_noise(0.02, FMT, level_db=-40)) == pytest.approx(-40, abs=0.5)
    assert frame_level_db(bytes(3840)) == SILENCE_DB
    assert frame_level_db(b"") == SILENCE_DB
    assert frame_level_db(b"\x01") == SILENCE_DB  # a stray byte is not a sample


# --- what counts as speech ----------------------------------------------------------------------


def test_speech_after_silence_is_one_utterance_with_pre_roll() -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    pcm = silence(1.0, FMT) + speech(3.0, FMT) + silence(2.0, FMT)
    [utterance] = feed(segmenter, "ann", pcm)
    assert utterance.speaker == "ann"
    assert utterance.fmt == FMT
    assert utterance.started == pytest.approx(1.0 - 0.2, abs=0.03), "speech starts at 1.0 s, 0.2 s pre-roll"
    assert 3.6 < utterance.ended < 4.35, "speech ends near 4.0 s, plus post-roll"
    assert 1.5 < utterance.speech_s < 3.0
    assert not utterance.cut
    assert_consistent(utterance)
    assert utterance.pcm.startswith(bytes(FMT.frame_bytes(200))), "pre-roll is the quiet before"
    assert pcm.find(utterance.pcm) == FMT.frame_bytes(800), "the audio is the speaker's own, unchanged"


def test_first_frame_speech_has_no_pre_roll_to_give() -> None:
    # Discord sends nothing until someone talks: the first frame is already speech.
    [utterance] = feed(Segmenter(VadConfig(), FMT), "ann", speech(2.0, FMT), start=100.0)
    assert utterance.started == pytest.approx(100.0, abs=0.03)
    assert_consistent(utterance)


def test_silence_alone_is_nothing() -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    assert feed(segmenter, "ann", silence(5.0, FMT)) == []
    assert not segmenter.speaking("ann")


@pytest.mark.parametrize("level_db", [-60, -45, -35, -25])
@pytest.mark.parametrize("noise", [white_noise, pink_noise])
def test_steady_noise_alone_is_not_speech(noise, level_db: float) -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    assert feed(segmenter, "fan", noise(6.0, FMT, level_db=level_db)) == []


@pytest.mark.parametrize("noise", [white_noise, pink_noise])
def test_speech_over_steady_noise_is_found_and_the_noise_is_not(noise) -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    background = noise(12.0, FMT, level_db=-40)
    voice = silence(4.0, FMT) + speech(3.0, FMT, level_db=-22) + silence(5.0, FMT)
    [utterance] = feed(segmenter, "ann", mix(background, voice))
    assert utterance.started == pytest.approx(3.8, abs=0.15)
    assert 6.6 < utterance.ended < 7.5
    floor = segmenter.noise_floor_db("ann")
    assert floor is not None and -43 < floor < -34, "the floor learnt the background"


def test_noise_floors_are_per_speaker() -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    noisy = white_noise(8.0, FMT, level_db=-30)
    quiet_voice = silence(3.0, FMT) + speech(2.0, FMT, level_db=-38) + silence(3.0, FMT)
    out = []
    for i, (a, b) in enumerate(zip(frames(noisy, FMT), frames(quiet_voice, FMT), strict=True)):
        for speaker, frame in (("loud room", a), ("quiet mic", b)):
            if utterance := segmenter.push(speaker, frame, i * FRAME_S):
                out.append(utterance)
    out += segmenter.tick(100)
    assert [u.speaker for u in out] == ["quiet mic"]


def test_clicks_and_short_bursts_are_dropped() -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    gap = silence(2.0, FMT)
    pcm = (
        gap
        + tone(2000, 0.01, FMT, level_db=-6).ljust(FMT.frame_bytes(20), b"\0")  # a click
        + gap
        + white_noise(0.1, FMT, level_db=-10)  # a bump on the mic
        + gap
        + speech(0.3, FMT)  # a too-short "hm"
        + gap
    )
    assert feed(segmenter, "ann", pcm) == []


def test_a_short_word_over_min_speech_is_kept() -> None:
    pcm = silence(1.0, FMT) + speech(0.8, FMT, syllables_per_s=3, seed=4) + silence(2.0, FMT)
    assert len(feed(Segmenter(VadConfig(min_speech_s=0.3), FMT), "ann", pcm)) == 1


# --- time and absence ---------------------------------------------------------------------------


def test_absence_of_frames_ends_the_utterance_on_tick() -> None:
    segmenter = Segmenter(VadConfig(silence_s=1.5), FMT)
    now = 50.0
    for frame in frames(speech(2.0, FMT), FMT):
        assert segmenter.push("ann", frame, now) is None
        now += FRAME_S
    assert segmenter.speaking("ann")
    # Discord stops sending: nothing arrives any more, only the clock moves.
    assert segmenter.tick(now + 1.0) == []
    assert segmenter.speaking("ann")
    [utterance] = segmenter.tick(now + 1.6)
    assert utterance.started == pytest.approx(50.0)
    assert utterance.ended <= now + 0.01
    assert not segmenter.speaking("ann")
    assert segmenter.tick(now + 5) == []


def test_a_pause_without_frames_stays_inside_the_utterance_as_silence() -> None:
    segmenter = Segmenter(VadConfig(silence_s=1.5), FMT)
    first, second = speech(1.5, FMT, seed=1), speech(1.5, FMT, seed=2)
    out = feed_no_tick(segmenter, "ann", first, 0.0)
    out += feed_no_tick(segmenter, "ann", second, 2.5)  # 1 s with no packets at all
    assert out == []
    [utterance] = segmenter.tick(10)
    assert utterance.started == pytest.approx(0.0)
    assert 3.7 < utterance.ended < 4.3
    assert_consistent(utterance)
    assert bytes(FMT.frame_bytes(900)) in utterance.pcm, "the 1 s gap became silence"


def test_a_pause_longer_than_silence_s_splits_even_without_tick() -> None:
    segmenter = Segmenter(VadConfig(silence_s=1.0), FMT)
    out = feed_no_tick(segmenter, "ann", speech(1.5, FMT, seed=1), 0.0)
    out += feed_no_tick(segmenter, "ann", speech(1.5, FMT, seed=2), 5.0)
    assert len(out) == 1 and out[0].ended < 2.0
    [second] = segmenter.tick(20)
    assert second.started == pytest.approx(5.0)


def test_network_jitter_does_not_break_an_utterance() -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    out = []
    for i, frame in enumerate(frames(speech(3.0, FMT), FMT)):
        jitter = 0.03 * math.sin(i * 1.7)  # packets early and late by up to 30 ms
        if utterance := segmenter.push("ann", frame, i * FRAME_S + jitter):
            out.append(utterance)
    [utterance] = out + segmenter.tick(100)
    assert utterance.duration_s == pytest.approx(3.0, abs=0.1), "no silence invented between frames"


def feed_no_tick(segmenter: Segmenter, speaker: str, pcm: bytes, start: float) -> list[Utterance]:
    out = []
    for i, frame in enumerate(frames(pcm, segmenter.fmt)):
        if utterance := segmenter.push(speaker, frame, start + i * FRAME_S):
            out.append(utterance)
    return out


# --- many speakers --------------------------------------------------------------------------------


def test_overlapping_speakers_come_out_separately_with_their_own_timing() -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    ann = silence(1.0, FMT) + speech(2.0, FMT, pitch=210, seed=1) + silence(4.0, FMT)
    bob = silence(2.0, FMT) + speech(2.5, FMT, pitch=110, seed=2) + silence(2.5, FMT)
    out = []
    for i, (a, b) in enumerate(zip(frames(ann, FMT), frames(bob, FMT), strict=True)):
        now = 10.0 + i * FRAME_S
        for speaker, frame in (("ann", a), (42, b)):  # speakers may be names or ids
            if utterance := segmenter.push(speaker, frame, now):
                out.append(utterance)
        out += segmenter.tick(now)
        if i == 140:  # 13.4 s: both are talking (ann in the pause before her end)
            assert segmenter.speaking("ann") and segmenter.speaking(42)
    out += segmenter.tick(100)
    by_speaker = {u.speaker: u for u in out}
    assert len(out) == 2 and set(by_speaker) == {"ann", 42}
    ann_said, bob_said = by_speaker["ann"], by_speaker[42]
    assert ann_said.started == pytest.approx(10.8, abs=0.05) and 12.6 < ann_said.ended < 13.4
    assert bob_said.started == pytest.approx(11.8, abs=0.05) and 14.1 < bob_said.ended < 14.9
    assert ann.find(ann_said.pcm) >= 0 and bob.find(bob_said.pcm) >= 0, "nobody's audio leaks into another's"
    assert out[0].speaker == "ann", "ann finished first"


def test_forget_drops_a_speaker_and_their_open_utterance() -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    feed_no_tick(segmenter, "ann", speech(1.0, FMT), 0.0)
    assert segmenter.speakers == ["ann"]
    segmenter.forget("ann")
    segmenter.forget("never seen")
    assert segmenter.speakers == []
    assert segmenter.tick(10) == []
    assert not segmenter.speaking("ann")


def test_flush_emits_what_is_open() -> None:
    segmenter = Segmenter(VadConfig(), FMT)
    feed_no_tick(segmenter, "ann", speech(1.0, FMT), 0.0)
    feed_no_tick(segmenter, "bob", speech(1.0, FMT, seed=3), 0.0)
    assert [u.speaker for u in segmenter.flush("bob")] == ["bob"]
    assert [u.speaker for u in segmenter.flush()] == ["ann"]
    assert segmenter.flush() == []


def test_speaking_waits_for_min_speech() -> None:
    segmenter = Segmenter(VadConfig(min_speech_s=0.5), FMT)
    talk = frames(speech(2.0, FMT, syllables_per_s=5), FMT)
    states = []
    for i, frame in enumerate(talk):
        segmenter.push("ann", frame, i * FRAME_S)
        states.append(segmenter.speaking("ann"))
    first = states.index(True)
    assert 0.5 <= first * FRAME_S < 1.2, "not on the first syllable, not much later than 0.5 s of speech"
    assert all(states[first:]), "stays true through pauses between syllables"


# --- long utterances --------------------------------------------------------------------------------


def test_a_long_utterance_is_cut_at_max_utterance_s() -> None:
    fmt = SPEECH_PCM
    talk = speech(5.0, fmt) * 13  # 65 s without a long pause
    segmenter = Segmenter(VadConfig(), fmt)
    out = feed(segmenter, "ann", silence(1.0, fmt) + talk + silence(3.0, fmt))
    # 0.2 s pre-roll + 65 s + 0.3 s post-roll
    assert [u.duration_s for u in out] == pytest.approx([30, 30, 5.5], abs=0.05)
    assert [u.cut for u in out] == [True, True, False]
    assert out[0].started == pytest.approx(0.8, abs=0.05)
    for before, after in itertools.pairwise(out):
        assert after.started == pytest.approx(before.ended), "pieces follow each other exactly"
    assert b"".join(u.pcm for u in out[:2]) + out[2].pcm[:1000] in silence(1.0, fmt) + talk


def test_a_piece_after_a_cut_is_kept_even_if_short() -> None:
    segmenter = Segmenter(VadConfig(max_utterance_s=2.0, min_speech_s=0.5), FMT)
    out = feed(segmenter, "ann", speech(2.3, FMT, seed=6) + silence(2.0, FMT))
    assert [u.cut for u in out] == [True, False]
    assert out[1].speech_s < 0.5


# --- config --------------------------------------------------------------------------------------


def test_config_rejects_contradictions() -> None:
    with pytest.raises(ValueError, match="min_speech_s .* cannot exceed max_utterance_s"):
        VadConfig(min_speech_s=40)
    with pytest.raises(ValueError, match="silence_s must be positive"):
        VadConfig(silence_s=0)


def test_defaults() -> None:
    config = VadConfig()
    assert (config.silence_s, config.min_speech_s, config.max_utterance_s) == (1.5, 0.5, 30.0)
    segmenter = Segmenter()
    assert segmenter.fmt == DISCORD_PCM and segmenter.config == config


def test_works_at_speech_rate_too() -> None:
    fmt = PcmFormat(16000, 1)
    pcm = silence(1.0, fmt) + speech(2.0, fmt) + silence(2.0, fmt)
    [utterance] = feed(Segmenter(VadConfig(), fmt), "ann", pcm)
    assert utterance.fmt == fmt
    assert_consistent(utterance)


def test_defaults_are_readable_on_the_class() -> None:
    # Settings code builds a VadConfig from the environment with the class defaults as fallbacks.
    assert VadConfig.silence_s == 1.5 and VadConfig.max_utterance_s == 30.0
