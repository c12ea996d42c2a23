"""What a short video holds for a model: its sound as a WAV file and one frame as a PNG image.

PyAV (FFmpeg) decodes from memory. Everything here is CPU-bound: callers on the event loop run
it in a thread. The duration is read from the container before anything is decoded, so a video
over the limit costs nothing but the probe.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import av

from bot.media.audio import SPEECH_PCM, decode_audio, translate_av_errors, wav

__all__ = ["VideoParts", "VideoProbe", "probe_video", "video_parts"]


@dataclass(frozen=True, slots=True)
class VideoParts:
    duration_s: float | None
    sound: bytes | None  # a 16 kHz mono WAV file; None when the video is silent
    frame: bytes | None  # a PNG of the frame in the middle; None when there is no picture


@dataclass(frozen=True, slots=True)
class VideoProbe:
    duration_s: float | None  # as the container states it; None when it does not say
    has_sound: bool
    has_picture: bool


def probe_video(data: bytes) -> VideoProbe:
    """What the video holds and how long it is, without decoding it.

    Raises:
        AudioError: the bytes are not a file FFmpeg can open.
    """
    with (
        translate_av_errors(f"cannot open the video ({len(data)} bytes)"),
        av.open(io.BytesIO(data), mode="r") as container,
    ):
        duration = None
        if container.duration is not None:
            duration = float(container.duration / av.time_base)
        return VideoProbe(duration, bool(container.streams.audio), bool(container.streams.video))


def _middle_frame(data: bytes, duration_s: float | None) -> bytes | None:
    with translate_av_errors("cannot decode the video's picture"), av.open(io.BytesIO(data), mode="r") as container:
        stream = container.streams.video[0]
        middle = (duration_s or 0.0) / 2
        chosen = None
        for frame in container.decode(stream):
            chosen = frame
            if frame.time is None or frame.time >= middle:
                break
        if chosen is None:
            return None
        rgb = chosen.reformat(format="rgb24")
        encoder = av.CodecContext.create("png", "w")
        encoder.width, encoder.height, encoder.pix_fmt = rgb.width, rgb.height, "rgb24"
        packets = [*encoder.encode(rgb), *encoder.encode(None)]
        return b"".join(bytes(p) for p in packets) or None


def video_parts(data: bytes) -> VideoParts:
    """The sound (as WAV) and the middle frame (as PNG) of the video in ``data``.

    Raises:
        AudioError: the bytes are not a video FFmpeg can read.
    """
    probe = probe_video(data)
    sound = wav(decode_audio(data, SPEECH_PCM), SPEECH_PCM) if probe.has_sound else None
    frame = _middle_frame(data, probe.duration_s) if probe.has_picture else None
    return VideoParts(probe.duration_s, sound, frame)
