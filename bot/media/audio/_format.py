"""The PCM layouts troupe moves audio around in."""

from __future__ import annotations

from dataclasses import dataclass

from bot.media.audio._errors import AudioError

__all__ = ["DISCORD_PCM", "PcmFormat", "SPEECH_PCM", "duration_s"]

_SAMPLE_BYTES = 2  # always signed 16-bit little-endian


@dataclass(frozen=True, slots=True)
class PcmFormat:
    """Raw PCM: signed 16-bit little-endian samples, channels interleaved."""

    rate: int
    """Samples per second per channel."""
    channels: int
    """1 (mono) or 2 (stereo, left first); more are allowed but nothing in troupe uses them."""

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise ValueError(f"PCM sample rate must be positive, got {self.rate}")
        if not 1 <= self.channels <= 8:
            raise ValueError(f"PCM channel count must be 1..8, got {self.channels}")

    @property
    def sample_bytes(self) -> int:
        """Bytes of one sample frame (one sample for every channel)."""
        return _SAMPLE_BYTES * self.channels

    @property
    def bytes_per_second(self) -> int:
        """Bytes of one second of audio."""
        return self.rate * self.sample_bytes

    def frame_bytes(self, ms: int) -> int:
        """Bytes of ``ms`` milliseconds of audio (rounded down to whole samples)."""
        return self.rate * ms // 1000 * self.sample_bytes

    def samples(self, pcm: bytes) -> int:
        """Samples per channel in ``pcm``."""
        return len(pcm) // self.sample_bytes

    def check(self, pcm: bytes) -> None:
        """Raise ``AudioError`` unless ``pcm`` holds whole sample frames of this format."""
        if len(pcm) % self.sample_bytes:
            raise AudioError(
                f"{len(pcm)} bytes is not a whole number of 16-bit {self.channels}-channel samples "
                f"({self.sample_bytes} bytes each); the PCM was cut or is in another format"
            )


#: What discord.py sends and receives: 48 kHz stereo.
DISCORD_PCM = PcmFormat(48000, 2)
#: What speech-to-text models want: 16 kHz mono.
SPEECH_PCM = PcmFormat(16000, 1)


def duration_s(pcm: bytes, fmt: PcmFormat) -> float:
    """Seconds of audio in ``pcm``."""
    return len(pcm) / fmt.bytes_per_second
