"""Sample-rate and channel conversion that keeps its filter state between calls."""

from __future__ import annotations

import av

from bot.media.audio._avframes import frame_from_pcm, layout_name, pcm_from_frame
from bot.media.audio._errors import translate_av_errors
from bot.media.audio._format import PcmFormat

__all__ = ["Resampler", "resample"]


class Resampler:
    """Convert a stream of PCM from ``src`` to ``dst`` piece by piece.

    The FFmpeg resampler keeps its filter history between calls, so converting audio in many
    small pieces gives the same samples as converting it at once: no clicks at piece boundaries.
    A trailing partial sample is kept for the next call. ``flush()`` returns the samples still
    inside the filter and leaves the resampler ready for a new stream. Output of ``convert`` lags
    the input by a few samples; only ``flush()`` gives the exact total.

    Not thread-safe; one per stream.
    """

    def __init__(self, src: PcmFormat, dst: PcmFormat) -> None:
        self.src = src
        self.dst = dst
        self._identity = src == dst
        self._pending = b""
        self._av: av.AudioResampler | None = None
        self._input: tuple[str, str, int] | None = None  # format, layout, rate fed to self._av

    def convert(self, pcm: bytes) -> bytes:
        """Convert ``pcm`` (any length) and return whatever output is ready."""
        if self._pending:
            pcm = self._pending + pcm
        usable = len(pcm) - len(pcm) % self.src.sample_bytes
        self._pending = pcm[usable:]
        if not usable:
            return b""
        if self._identity:
            return pcm[:usable]
        return self.convert_frame(frame_from_pcm(pcm[:usable], self.src))

    def convert_frame(self, frame: av.AudioFrame) -> bytes:
        """Convert a decoded PyAV frame of any sample format, rate and layout (for decoders).

        A stream may change rate or layout part way (an mp3 joined from two encodes); the
        filter is then drained and rebuilt instead of failing.
        """
        shape = (frame.format.name, frame.layout.name, frame.sample_rate)
        drained = b""
        if self._av is not None and shape != self._input:
            drained = self._drain()
        if self._av is None:
            self._av = av.AudioResampler(format="s16", layout=layout_name(self.dst.channels), rate=self.dst.rate)
            self._input = shape
        with translate_av_errors("cannot convert audio"):
            return drained + b"".join(pcm_from_frame(out) for out in self._av.resample(frame))

    def flush(self) -> bytes:
        """Return the rest of the converted stream; a trailing partial sample is dropped."""
        self._pending = b""
        return self._drain()

    def _drain(self) -> bytes:
        if self._av is None:
            return b""
        resampler, self._av, self._input = self._av, None, None
        with translate_av_errors("cannot convert audio"):
            return b"".join(pcm_from_frame(out) for out in resampler.resample(None))


def resample(pcm: bytes, src: PcmFormat, dst: PcmFormat) -> bytes:
    """Convert a whole piece of PCM from ``src`` to ``dst`` at once."""
    if src == dst:
        return pcm
    resampler = Resampler(src, dst)
    return resampler.convert(pcm) + resampler.flush()
