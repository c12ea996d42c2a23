"""Decoding audio files, whole or as they arrive."""

from __future__ import annotations

import io
import logging

import av

from bot.media.audio._errors import AudioError, translate_av_errors
from bot.media.audio._format import PcmFormat
from bot.media.audio._resample import Resampler

__all__ = ["decode_audio"]

_log = logging.getLogger(__name__)


def decode_audio(data: bytes, out: PcmFormat) -> bytes:
    """Decode a whole audio file (any container and codec FFmpeg reads) to PCM in ``out``.

    Reads mp3, Ogg/Opus (Telegram voice notes), wav, m4a/AAC, webm, flac… from memory; the first
    audio stream is used. Raises ``AudioError`` when the bytes are not audio FFmpeg can decode.
    A file that breaks off part way gives the audio before the break (logged at warning).
    CPU-bound: run long files in a thread.
    """
    if not data:
        raise AudioError("cannot decode audio: the file is empty (0 bytes)")
    with translate_av_errors(f"cannot decode audio ({len(data)} bytes, not a readable audio file)"):
        container = av.open(io.BytesIO(data), mode="r")
    with container:
        if not container.streams.audio:
            kinds = ", ".join(s.type for s in container.streams) or "nothing"
            raise AudioError(
                f"cannot decode audio: the {container.format.name} file has no audio stream (it holds {kinds})"
            )
        stream = container.streams.audio[0]
        resampler = Resampler(out, out)
        pieces: list[bytes] = []
        try:
            for frame in container.decode(stream):
                pieces.append(resampler.convert_frame(frame))
        except av.FFmpegError as exc:
            if not any(pieces):
                raise AudioError(f"cannot decode audio: the {container.format.name} file is corrupt ({exc})") from exc
            _log.warning(
                "audio file breaks off after %d bytes of PCM; keeping what decoded: %s",
                sum(map(len, pieces)),
                exc,
            )
        pieces.append(resampler.flush())
    pcm = b"".join(pieces)
    if not pcm:
        raise AudioError(f"cannot decode audio: the {container.format.name} file holds no decodable samples")
    return pcm
