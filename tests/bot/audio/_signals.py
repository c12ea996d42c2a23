"""Audio fixtures made on the fly: tones, speech-like sounds, noise, and encoded files."""

from __future__ import annotations

import io

import av
import numpy as np

from bot.media.audio import PcmFormat

_FULL_SCALE = 32767


def db_to_amplitude(db: float) -> float:
    """Linear RMS amplitude (1.0 = full scale) of a level in dBFS."""
    return 10 ** (db / 20)


def to_pcm(mono: np.ndarray, fmt: PcmFormat) -> bytes:
    """Float mono samples in [-1, 1] as s16le PCM with every channel the same."""
    ints = np.clip(np.round(mono * _FULL_SCALE), -32768, 32767).astype("<i2")
    return np.repeat(ints, fmt.channels).tobytes()


def from_pcm(pcm: bytes, fmt: PcmFormat) -> np.ndarray:
    """s16le PCM as float samples, shape (samples, channels)."""
    return np.frombuffer(pcm, dtype="<i2").reshape(-1, fmt.channels).astype(np.float64) / 32768


def tone(freq: float, seconds: float, fmt: PcmFormat, *, level_db: float = -12.0) -> bytes:
    """A sine at ``freq`` Hz, RMS ``level_db`` dBFS."""
    t = np.arange(int(seconds * fmt.rate)) / fmt.rate
    return to_pcm(np.sqrt(2) * db_to_amplitude(level_db) * np.sin(2 * np.pi * freq * t), fmt)


def speech(
    seconds: float,
    fmt: PcmFormat,
    *,
    level_db: float = -20.0,
    pitch: float = 140.0,
    syllables_per_s: float = 4.0,
    seed: int = 1,
) -> bytes:
    """Something with the statistics of voiced speech.

    Harmonics of a wandering pitch under formant-like weights, switched on and off at syllable
    rate (syllables of uneven length with short gaps, as in speech), peak syllables near
    ``level_db`` RMS. Not intelligible, but an energy detector sees what it sees in real speech:
    loud, strongly modulated bursts.
    """
    rng = np.random.default_rng(seed)
    n = int(seconds * fmt.rate)
    t = np.arange(n) / fmt.rate
    f0 = pitch * (1 + 0.08 * np.sin(2 * np.pi * 0.7 * t + rng.uniform(0, 6)))
    phase = 2 * np.pi * np.cumsum(f0) / fmt.rate
    voice = np.zeros(n)
    for k in range(1, 20):
        weight = np.exp(-(((k * pitch) - 700) ** 2) / (2 * 500**2)) + 0.3 / k
        voice += weight * np.sin(k * phase + rng.uniform(0, 6))
    envelope = np.zeros(n)
    position = 0.0
    while position < seconds:
        length = rng.uniform(0.6, 1.4) / syllables_per_s
        start, stop = int(position * fmt.rate), int((position + length * 0.8) * fmt.rate)
        stop = min(stop, n)
        if stop > start:
            envelope[start:stop] = np.sin(np.linspace(0, np.pi, stop - start)) * rng.uniform(0.6, 1.0)
        position += length
    voice *= envelope
    peak_rms = np.sqrt(np.mean(voice[envelope > 0.5] ** 2))
    return to_pcm(voice * db_to_amplitude(level_db) / peak_rms, fmt)


def white_noise(seconds: float, fmt: PcmFormat, *, level_db: float = -45.0, seed: int = 2) -> bytes:
    """Gaussian white noise at RMS ``level_db`` dBFS."""
    rng = np.random.default_rng(seed)
    return to_pcm(rng.standard_normal(int(seconds * fmt.rate)) * db_to_amplitude(level_db), fmt)


def pink_noise(seconds: float, fmt: PcmFormat, *, level_db: float = -45.0, seed: int = 3) -> bytes:
    """1/f noise (fans, traffic, room tone) at RMS ``level_db`` dBFS."""
    rng = np.random.default_rng(seed)
    n = int(seconds * fmt.rate)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1 / fmt.rate)
    spectrum[1:] /= np.sqrt(freqs[1:])
    spectrum[0] = 0
    noise = np.fft.irfft(spectrum, n)
    noise /= np.sqrt(np.mean(noise**2))
    return to_pcm(noise * db_to_amplitude(level_db), fmt)


def silence(seconds: float, fmt: PcmFormat) -> bytes:
    """Digital silence."""
    return bytes(int(seconds * fmt.rate) * fmt.sample_bytes)


def mix(*pieces: bytes) -> bytes:
    """Sum PCM pieces of one format sample by sample (length of the shortest)."""
    n = min(map(len, pieces)) // 2
    total = sum(np.frombuffer(p[: n * 2], dtype="<i2").astype(np.int32) for p in pieces)
    return np.clip(total, -32768, 32767).astype("<i2").tobytes()


def frames(pcm: bytes, fmt: PcmFormat, ms: int = 20) -> list[bytes]:
    """``pcm`` cut into whole frames of ``ms`` milliseconds (a trailing partial frame is dropped)."""
    size = fmt.frame_bytes(ms)
    return [pcm[i : i + size] for i in range(0, len(pcm) - size + 1, size)]


def dominant_hz(pcm: bytes, fmt: PcmFormat) -> float:
    """The strongest frequency in the first channel."""
    x = from_pcm(pcm, fmt)[:, 0]
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / fmt.rate)[np.argmax(spectrum)])


def tone_snr_db(pcm: bytes, fmt: PcmFormat, freq: float) -> float:
    """How far a ``freq`` sine fitted to the first channel stands above the residue, in dB."""
    x = from_pcm(pcm, fmt)[:, 0]
    t = np.arange(len(x)) / fmt.rate
    basis = np.column_stack([np.sin(2 * np.pi * freq * t), np.cos(2 * np.pi * freq * t)])
    fit = basis @ np.linalg.lstsq(basis, x, rcond=None)[0]
    return float(10 * np.log10(np.sum(fit**2) / np.sum((x - fit) ** 2)))


def encode_file(pcm: bytes, fmt: PcmFormat, container: str, codec: str, **options: object) -> bytes:
    """``pcm`` encoded with FFmpeg into a whole file (mp3 via libmp3lame, m4a via aac…)."""
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container) as out:
        stream = out.add_stream(codec, rate=fmt.rate, layout="mono" if fmt.channels == 1 else "stereo")
        assert isinstance(stream, av.AudioStream)
        for key, value in options.items():
            setattr(stream, key, value)
        samples = np.frombuffer(pcm, dtype="<i2").reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout=stream.layout.name)
        frame.sample_rate = fmt.rate
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buffer.getvalue()
