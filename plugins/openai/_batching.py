"""Embedding requests sent together: texts asked for while a request is under way share the next.

A busy daemon embeds every message its characters hear, and the embeddings endpoint takes many
texts in one request. The first text asked for goes out at once, alone (no wait is added); texts
asked for while that request is under way are sent together in the next one, as soon as it
returns, up to ``BATCH_LIMIT`` at a time. At a few messages a second nothing changes; under load,
one request carries the texts of many messages (fewer requests, less CPU on both sides, fewer
rate limits).

A batch goes out with the client of whoever sends it, so batches are per endpoint, key, model and
dimensions (:class:`EmbeddingBatches`). The caller whose text is waiting when the request before
it ends sends the next batch itself: no task is started. If the server rejects a batch of several
texts (HTTP 400/422: one text too long, say), each text is asked for alone, so only the text at
fault fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.sdk import ModelRequestRejected

__all__ = ["BATCH_LIMIT", "EmbeddingBatches", "Send"]

#: Texts per request at most.
BATCH_LIMIT = 64

#: Asks the server for the vectors of some texts, in their order.
Send = Callable[[list[str]], Awaitable[list[list[float]]]]

BatchKey = tuple[str, str, str, int]  # base URL, API key, model, dimensions


@dataclass(eq=False)
class _Wanted:
    text: str
    vector: asyncio.Future[list[float]]
    sent: bool = False


@dataclass(eq=False)
class _Line:
    """The texts waiting for one endpoint and model, and whether a request is under way."""

    waiting: list[_Wanted] = field(default_factory=list)
    under_way: asyncio.Future[None] | None = None  # done when the request under way has ended

    async def vector(self, text: str, send: Send) -> list[float]:
        wanted = _Wanted(text, asyncio.get_running_loop().create_future())
        self.waiting.append(wanted)
        try:
            while not wanted.vector.done():
                if self.under_way is None:
                    await self._send_next(send)
                else:
                    either: list[asyncio.Future[Any]] = [wanted.vector, self.under_way]
                    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if not wanted.sent and wanted in self.waiting:
                self.waiting.remove(wanted)
            raise
        return wanted.vector.result()

    async def _send_next(self, send: Send) -> None:
        batch, self.waiting = self.waiting[:BATCH_LIMIT], self.waiting[BATCH_LIMIT:]
        for wanted in batch:
            wanted.sent = True
        under_way = self.under_way = asyncio.get_running_loop().create_future()
        try:
            await _answer(batch, send)
        except asyncio.CancelledError:
            # The sender gave up: what it carried for others waits for the next request.
            self.waiting[:0] = [w for w in batch if not w.vector.done()]
            for wanted in batch:
                wanted.sent = False
            raise
        finally:
            self.under_way = None
            under_way.set_result(None)


async def _answer(batch: list[_Wanted], send: Send) -> None:
    """Ask for the vectors of ``batch`` and settle each text's future."""
    try:
        vectors = await send([w.text for w in batch])
    except ModelRequestRejected:
        if len(batch) == 1:
            raise
        # One text may be at fault (too long, say): each on its own, so only it fails.
        for wanted in batch:
            try:
                wanted.vector.set_result((await send([wanted.text]))[0])
            except ModelRequestRejected as exc:
                _fail(wanted, exc)
        return
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - every text of the batch fails with the request
        for wanted in batch:
            _fail(wanted, exc)
        return
    for wanted, vector in zip(batch, vectors, strict=True):
        wanted.vector.set_result(vector)


def _fail(wanted: _Wanted, exc: BaseException) -> None:
    wanted.vector.set_exception(exc)
    wanted.vector.exception()  # retrieved: a caller that gave up does not leave it unseen


class EmbeddingBatches:
    """One daemon's embedding requests in flight, by endpoint, key, model and dimensions
    (``runtime.shared.instance_of(EmbeddingBatches)``)."""

    def __init__(self) -> None:
        self._lines: dict[BatchKey, _Line] = {}

    async def vector(self, key: BatchKey, text: str, send: Send) -> list[float]:
        """The vector of ``text``, asked for with ``send`` alone or together with other texts of ``key``."""
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = _Line()
        return await line.vector(text, send)
