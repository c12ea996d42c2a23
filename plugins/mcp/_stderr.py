"""What a stdio server writes to its standard error: each line logged at DEBUG, the last few kept
to say why it would not start or died.

The server's stderr is a pipe whose read end the event loop watches (``add_reader``: no thread,
no task); one pipe per start, both ends closed when that start ends, so a server that dies again
and again leaks nothing. Only :data:`KEPT_LINES` lines of at most :data:`LINE_CHARS` characters are
kept, whatever the server writes; each is scrubbed of the server's secrets before it is kept or
logged.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TextIO

__all__ = ["KEPT_LINES", "LINE_CHARS", "ErrorOutput"]

_log = logging.getLogger(__name__)

#: Lines of a server's stderr kept (the last ones).
KEPT_LINES = 20
#: Longest line kept or logged; the rest of a longer one is dropped.
LINE_CHARS = 500
#: Lines of the tail a "down" reason quotes, and the most characters it quotes of them.
_QUOTED_LINES = 3
_QUOTED_CHARS = 300
#: How long a stopped server's stderr may take to reach its end (a child it left behind may hold
#: the pipe open: then the rest is not waited for).
_DRAIN_S = 1.0
_READ_BYTES = 65_536
#: Most of a line read before its end is kept: more than is shown, so that a secret the cut at
#: LINE_CHARS would split is still whole when it is scrubbed.
_PARTIAL_CHARS = 4 * LINE_CHARS


class ErrorOutput:
    """One server's standard error, across its starts: the last lines of the latest one."""

    def __init__(self, server: str, clean: Callable[[str], str]) -> None:
        self.server = server
        self._clean = clean  # scrubs the server's secrets
        self.lines: deque[str] = deque(maxlen=KEPT_LINES)
        self._partial = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._ended = asyncio.Event()
        self._writer: TextIO | None = None

    def tail(self) -> str:
        """The last lines, on one line (`` | `` between them), cut at the front to stay short;
        empty when the server wrote nothing."""
        text = " | ".join(line.strip() for line in list(self.lines)[-_QUOTED_LINES:] if line.strip())
        return text if len(text) <= _QUOTED_CHARS else "…" + text[-(_QUOTED_CHARS - 1) :]

    @contextlib.asynccontextmanager
    async def pipe(self) -> AsyncIterator[TextIO]:
        """A new pipe for one start: yields the write end to give the process as its stderr.
        Call :meth:`spawned` once the process has it; on leaving, waits (briefly) for the rest of
        the output and closes both ends."""
        self.lines.clear()
        self._partial = ""
        self._decoder.reset()
        self._ended = asyncio.Event()
        loop = asyncio.get_running_loop()
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._writer = os.fdopen(write_fd, "w")
        try:
            loop.add_reader(read_fd, self._readable, read_fd)
            try:
                yield self._writer
                self.spawned()  # the process has ended: only it (or its children) hold the pipe
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._ended.wait(), _DRAIN_S)
            finally:
                loop.remove_reader(read_fd)
        finally:
            self.spawned()
            os.close(read_fd)
            self._end_line()

    def spawned(self) -> None:
        """The process has its own copy of the write end: close ours, so the pipe ends when the
        process does."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, _READ_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(fd)
            self._end_line()
            self._ended.set()
            return
        lines = (self._partial + self._decoder.decode(data)).split("\n")
        self._partial = lines.pop()[:_PARTIAL_CHARS]  # a line without end is not kept whole either
        for line in lines:
            self._add(line)

    def _end_line(self) -> None:
        rest, self._partial = self._partial + self._decoder.decode(b"", final=True), ""
        if rest:
            self._add(rest)

    def _add(self, line: str) -> None:
        line = self._clean(line[:_PARTIAL_CHARS].rstrip())[:LINE_CHARS]
        if not line.strip():
            return
        self.lines.append(line)
        _log.debug("mcp server %s: %s", self.server, line)
