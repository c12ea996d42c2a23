"""The length of an agent's embedding vectors, learned from its model when the agent starts.

Any length is stored (bot/store), so the length is not configured but asked: the TEXT_EMBEDDING
handler answers ``None`` with one real request, and its vector's length becomes the store's
active dimension for the agent. A server that is down at start does not keep the character from
starting: it keeps the last known length (kept in the store from its last start) and the length
is asked again in the background, a bounded number of times; meanwhile messages are found by
time and keywords, and a vector of another length is refused by the store (and logged).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Protocol

from bot.config.character import Character
from bot.kernel.backoff import ExponentialBackoff
from bot.kernel.errors import ModelError
from bot.kernel.models import ModelType
from bot.store import MemoryStore

__all__ = ["ASK_TIMEOUT_S", "EmbeddingLengthHost", "learn_embedding_length", "RETRIES", "RETRY_BASE_S"]

_log = logging.getLogger(__name__)

#: How long the request at start may take: a start waits for it.
ASK_TIMEOUT_S = 30.0
#: Tries in the background after a failed one at start, and the first delay between them
#: (doubling up to 10 minutes: about 40 minutes in all).
RETRIES = 8
RETRY_BASE_S = 15.0
_RETRY_CAP_S = 600.0


class EmbeddingLengthHost(Protocol):
    """What learning the length needs of a runtime."""

    @property
    def store(self) -> MemoryStore: ...

    @property
    def character(self) -> Character: ...

    async def use_model(self, type: ModelType, params: Any) -> Any: ...

    def create_task(self, coro: Coroutine[Any, Any, Any], job: str) -> asyncio.Task[Any]: ...


async def learn_embedding_length(runtime: EmbeddingLengthHost) -> None:
    """Make the embedding model's vector length ``runtime``'s active dimension; when the model
    does not answer, keep the last known one and ask again in the background. Never raises
    for the model's failure."""
    failure = await _ask(runtime)
    if failure is None:
        return
    dim = await runtime.store.get_embedding_dimension()
    _log.warning(
        "%s: the embedding model did not say its vector length at start (%s); vectors keep the last known "
        "length (%d) and it is asked again in the background",
        runtime.character.name,
        failure,
        dim,
    )
    runtime.create_task(_ask_again(runtime), "embedding length")


async def _ask(runtime: EmbeddingLengthHost) -> str | None:
    """Ask once; None when the length was learned, else why not."""
    try:
        async with asyncio.timeout(ASK_TIMEOUT_S):
            vector = await runtime.use_model(ModelType.TEXT_EMBEDDING, None)
        await runtime.store.ensure_embedding_dimension(len(vector))
    except TimeoutError:
        return f"no answer in {ASK_TIMEOUT_S:.0f} s"
    except ModelError as exc:
        return exc.reason_for(runtime.character.name)
    except ValueError as exc:  # a length no store takes
        return str(exc)
    return None


async def _ask_again(runtime: EmbeddingLengthHost) -> None:
    backoff = ExponentialBackoff(RETRY_BASE_S, max(RETRY_BASE_S, _RETRY_CAP_S))
    failure = None
    for _ in range(RETRIES):
        await asyncio.sleep(backoff.delay())
        failure = await _ask(runtime)
        if failure is None:
            _log.info(
                "%s: the embedding model answered; vectors are %d long",
                runtime.character.name,
                await runtime.store.get_embedding_dimension(),
            )
            return
    _log.warning(
        "%s: the embedding model did not say its vector length in %d tries (%s); restart the character to ask again",
        runtime.character.name,
        RETRIES,
        failure,
    )
