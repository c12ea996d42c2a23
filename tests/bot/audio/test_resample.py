import numpy as np
import pytest

from bot.media.audio import DISCORD_PCM, SPEECH_PCM, PcmFormat, Resampler, resample
from tests.bot.audio._signals import dominant_hz, from_pcm, tone, tone_snr_db


def test_speech_rate_mono_to_discord_keeps_length_and_pitch() -> None:
    pcm = tone(440, 1.0, SPEECH_PCM)
    out = resample(pcm, SPEECH_PCM, DISCORD_PCM)
    assert len(out) == 192_000
    samples = from_pcm(out, DISCORD_PCM)
    assert np.array_equal(samples[:, 0], samples[:, 1]), "mono goes to both channels"
    assert abs(dominant_hz(out, DISCORD_PCM) - 440) < 2
    assert tone_snr_db(out[4000:-4000], DISCORD_PCM, 440) > 40


def test_discord_to_speech_rate() -> None:
    out = resample(tone(1000, 0.5, DISCORD_PCM), DISCORD_PCM, SPEECH_PCM)
    assert len(out) == 16_000
    assert abs(dominant_hz(out, SPEECH_PCM) - 1000) < 3


def test_same_format_is_unchanged() -> None:
    pcm = tone(440, 0.1, SPEECH_PCM)
    assert resample(pcm, SPEECH_PCM, SPEECH_PCM) is pcm


@pytest.mark.parametrize("piece", [1, 3, 640, 4097])
def test_piecewise_conversion_equals_one_shot(piece: int) -> None:
    src = PcmFormat(22050, 1)
    pcm = tone(523, 0.5, src)
    resampler = Resampler(src, DISCORD_PCM)
    out = b"".join(resampler.convert(pcm[i : i + piece]) for i in range(0, len(pcm), piece))
    out += resampler.flush()
    assert out == resample(pcm, src, DISCORD_PCM)


def test_resampler_is_reusable_after_flush() -> None:
    resampler = Resampler(SPEECH_PCM, DISCORD_PCM)
    first = resampler.convert(tone(440, 0.2, SPEECH_PCM)) + resampler.flush()
    second = resampler.convert(tone(440, 0.2, SPEECH_PCM)) + resampler.flush()
    assert first == second
