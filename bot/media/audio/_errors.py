"""The one error this package raises."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import av

from bot.kernel.errors import AudioError

__all__ = ["AudioError", "translate_av_errors"]


@contextmanager
def translate_av_errors(what: str) -> Iterator[None]:
    """Turn any FFmpeg/PyAV failure inside the block into an ``AudioError`` about ``what``.

    The single place where av exceptions cross into troupe, so nothing above this package ever
    has to import ``av`` to catch an error.
    """
    try:
        yield
    except av.FFmpegError as exc:
        raise AudioError(f"{what}: {_describe(exc)}") from exc


def _describe(exc: av.FFmpegError) -> str:
    # str(exc) of an FFmpegError embeds the errno and a useless "'<none>'" filename.
    return getattr(exc, "strerror", None) or str(exc)
