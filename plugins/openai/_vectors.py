"""Vectors shared by a daemon's characters: five characters that hear one message embed it once.

Every character stores each message it hears with its vector, so a message in a room of five
characters asked the embedding model five times for the same vector. Characters of one daemon
that use the same embedding model (server, model, dimensions) now share one request: the first
asks, the others wait for its answer. Only what is being asked or was asked moments ago is
kept; a failure is not kept (each asks again, and sees its own error).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

__all__ = ["SharedVectors"]

_KEPT = 128  # a 1536-float vector is ~50 KB as a Python list: a few MB at most
Key = tuple[str, str, int, str]  # server, model, dimensions, text


class SharedVectors:
    """One daemon's recent embeddings (``runtime.shared.instance_of(SharedVectors)``)."""

    def __init__(self) -> None:
        self._vectors: OrderedDict[Key, asyncio.Future[list[float]]] = OrderedDict()

    async def vector(self, key: Key, embed: Callable[[], Awaitable[list[float]]]) -> list[float]:
        """The vector for ``key``: asked for by whoever asks first (with ``embed``), shared with
        the others asking meanwhile or soon after."""
        found = self._vectors.get(key)
        if found is not None:
            try:
                return list(await asyncio.shield(found))
            except asyncio.CancelledError:
                if not found.cancelled():  # we were cancelled, not the first asker
                    raise
            except Exception:  # noqa: BLE001 - the first asker's failure is its own; ask for ourselves
                pass
        future: asyncio.Future[list[float]] = asyncio.get_running_loop().create_future()
        self._vectors[key] = future
        self._vectors.move_to_end(key)
        while len(self._vectors) > _KEPT:
            self._vectors.popitem(last=False)
        try:
            vector = await embed()
        except BaseException as exc:
            if self._vectors.get(key) is future:
                del self._vectors[key]
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # retrieved: waiters see it, and nobody else needs to
            raise
        future.set_result(vector)
        return list(vector)
