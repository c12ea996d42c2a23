"""Reading what a remote server sends, against a limit.

A reply's body is read in the chunks it arrives in and counted as it comes; past the limit the
reading stops and :class:`BodyTooLarge` says how much was read and what the limit is, so a server
that sends 1.5 GB (or never stops) costs the daemon at most the limit in memory. A declared
``Content-Length`` over the limit is refused before anything is read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

__all__ = ["BodyTooLarge", "MAX_AUDIO_BYTES", "read_limited"]

#: The most audio one spoken reply is read to, whole or streamed: minutes of speech are a few MB
#: (an hour of 128 kbit/s MP3 is 58 MB); a voice server that never stops is cut off here.
MAX_AUDIO_BYTES = 64 * 1024 * 1024


class BodyTooLarge(Exception):
    """A reply's body was longer than the caller takes (``read``: bytes read or declared)."""

    def __init__(self, read: int, limit: int, *, declared: bool = False) -> None:
        if declared:
            text = f"declares {read} bytes, more than the {limit} troupe reads"
        else:
            text = f"went on past the {limit} bytes troupe reads (stopped at {read})"
        super().__init__(text)
        self.read = read
        self.limit = limit
        self.declared = declared


async def read_limited(chunks: AsyncIterator[bytes], limit: int, *, declared: int | None = None) -> bytes:
    """The whole body from ``chunks`` (``response.content.iter_any()``, httpx's ``aiter_bytes()``),
    at most ``limit`` bytes; ``declared`` is its Content-Length, if it said one.

    Raises:
        BodyTooLarge: it declares or sends more than ``limit`` bytes (reading stops there).
    """
    if declared is not None and declared > limit:
        raise BodyTooLarge(declared, limit, declared=True)
    parts: list[bytes] = []
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise BodyTooLarge(total, limit)
        parts.append(chunk)
    return b"".join(parts)
