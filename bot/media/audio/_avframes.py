"""Moving PCM bytes in and out of PyAV frames; the only module that knows PyAV's frame API."""

from __future__ import annotations

import av
import numpy as np

from bot.media.audio._format import PcmFormat

__all__ = ["frame_from_pcm", "layout_name", "pcm_from_frame"]

_LAYOUTS = {1: "mono", 2: "stereo"}


def layout_name(channels: int) -> str | av.AudioLayout:
    """The PyAV layout for ``channels`` interleaved channels."""
    return _LAYOUTS.get(channels) or av.AudioLayout(f"{channels}c")


def frame_from_pcm(pcm: bytes, fmt: PcmFormat) -> av.AudioFrame:
    """A packed s16 frame holding ``pcm`` (whole samples only)."""
    samples = np.frombuffer(pcm, dtype="<i2").reshape(1, -1)
    frame = av.AudioFrame.from_ndarray(samples, format="s16", layout=layout_name(fmt.channels))
    frame.sample_rate = fmt.rate
    return frame


def pcm_from_frame(frame: av.AudioFrame) -> bytes:
    """The samples of a packed s16 frame as bytes (planes carry alignment padding; this drops it)."""
    return frame.to_ndarray().astype("<i2", copy=False).tobytes()
