"""Standard input as lines for the MCP SDK's stdio server, read on the event loop.

The SDK reads stdin in a worker thread that a cancellation cannot interrupt: stopped on SIGTERM,
``troupe mcp`` would wait for the client's next line. A pipe read on the loop stops at once.
"""

from __future__ import annotations

import asyncio
import os
import sys

__all__ = ["MAX_LINE_BYTES", "StdinLines"]

#: The longest message taken (one JSON-RPC line); the rest of a longer one is passed over.
MAX_LINE_BYTES = 32 * 1024 * 1024


class StdinLines:
    """The lines of standard input, decoded as UTF-8, until end of input (async iteration, as
    the SDK reads its ``stdin``)."""

    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.ReadTransport) -> None:
        self._reader = reader
        self._transport = transport

    @classmethod
    async def open(cls, limit: int = MAX_LINE_BYTES) -> StdinLines | None:
        """Standard input read on the loop; None when it is not a pipe, a socket or a terminal
        (a regular file): the SDK's own reader serves it then."""
        reader = asyncio.StreamReader(limit=limit)
        try:
            # A duplicate, so that closing the transport leaves fd 0 itself alone.
            pipe = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
        except (OSError, ValueError, AttributeError):
            return None
        try:
            loop = asyncio.get_running_loop()
            transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        except (OSError, ValueError):
            pipe.close()
            return None
        return cls(reader, transport)

    def close(self) -> None:
        self._transport.close()

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:
                if not end.partial.strip():
                    raise StopAsyncIteration from None
                line = end.partial
            except asyncio.LimitOverrunError as long:
                await self._pass_over(long.consumed)
                continue  # a message past the limit is dropped; the client's request times out
            return line.decode("utf-8", errors="replace")

    async def _pass_over(self, consumed: int) -> None:
        """Drop the buffered part of an overlong line, then the rest of it up to its newline."""
        await self._reader.readexactly(consumed)
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as more:
                await self._reader.readexactly(more.consumed)
            except asyncio.IncompleteReadError:
                return
