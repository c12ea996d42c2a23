"""Embedding messages in the background, off the reply's critical path.

Each incoming message is embedded once, and that one vector serves twice: it is saved with the
message (for later searches), and the providers (FACTS here, KNOWLEDGE in its own plugin) search
with it while the reply is being prepared. The pipeline holds the embedding back until it is
needed (:meth:`MessageEmbeddings.hold`): a provider asking for the vector starts it at once; a
model deciding whether to answer starts it too (the wait for that decision is time the embedding
can use); otherwise it starts once the message has been handled, so that a reply nobody needed
the vector for does not wait behind the embedding request's work.

Each runtime has its own :class:`MessageEmbeddings`, offered to every plugin as the
:data:`~bot.runtime.components.MESSAGE_VECTORS` service.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING

from bot.sdk import MESSAGE_VECTORS, ModelType

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime, Memory

__all__ = ["MessageEmbeddings", "embeddings"]

_log = logging.getLogger(__name__)

_KEPT = 64  # recent messages whose vector (or its computation) is kept for providers


class MessageEmbeddings:
    """One agent's message vectors: computed in the background, the recent ones kept for the
    providers that search with them (a :class:`~bot.runtime.components.MessageVectors`)."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime
        # Per memory: its embedding under way (a task), or its text while held back.
        self._recent: OrderedDict[str, asyncio.Task[list[float] | None] | str] = OrderedDict()

    def embed_later(self, memory_id: str, text: str) -> None:
        """Compute and store the vector of ``text`` for memory ``memory_id`` now, in the background,
        when an embedding model is configured; the memory is usable (by time and keywords) until
        then. Failures are logged."""
        self.hold(memory_id, text)
        self.start(memory_id)

    def hold(self, memory_id: str, text: str) -> None:
        """Like :meth:`embed_later`, but the request waits until :meth:`start` or :meth:`vector_of`
        asks for it (see the module docstring)."""
        if not text or not self.runtime.has_model(ModelType.TEXT_EMBEDDING):
            return
        self._recent[memory_id] = text
        while len(self._recent) > _KEPT:
            oldest, _ = next(iter(self._recent.items()))
            self.start(oldest)  # never dropped unembedded
            self._recent.popitem(last=False)

    def start(self, memory_id: str | None) -> asyncio.Task[list[float] | None] | None:
        """Start the embedding of ``memory_id`` if it is held back; its task, if there is one."""
        entry = self._recent.get(memory_id) if memory_id else None
        if not isinstance(entry, str):
            return entry
        assert memory_id is not None
        try:
            task = self.runtime.create_task(self._embed(memory_id, entry), "embed")
        except RuntimeError:  # the runtime is closing: the message stays findable by time and keywords
            del self._recent[memory_id]
            return None
        self._recent[memory_id] = task
        return task

    async def vector_of(self, memory: Memory) -> list[float] | None:
        """The vector of ``memory``'s text: the one :meth:`embed_later` computes for it (waiting for
        it if need be), else computed now. None without an embedding model or text, or if the model
        failed."""
        if memory.embedding:
            return memory.embedding
        task = self.start(memory.id)
        if task is not None:
            # shield: a provider giving up (its timeout) must not cancel the embedding being stored.
            return await asyncio.shield(task)
        runtime = self.runtime
        text = memory.content.text or ""
        if not text or not runtime.has_model(ModelType.TEXT_EMBEDDING):
            return None
        try:
            vector: list[float] = await runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": text})
            return vector
        except Exception as exc:
            _log.warning("%s: could not embed a message: %s", runtime.character.name, exc.__class__.__name__)
            return None

    async def _embed(self, memory_id: str, text: str) -> list[float] | None:
        runtime = self.runtime
        try:
            vector: list[float] = await runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": text})
            await runtime.store.update_memory(memory_id, embedding=vector)
        except Exception as exc:
            _log.warning("%s: could not embed message %s: %s", runtime.character.name, memory_id, exc)
            return None
        return vector


def embeddings(runtime: AgentRuntime) -> MessageEmbeddings:
    """``runtime``'s message embeddings (registered by this plugin's ``setup``)."""
    found = runtime.get_service(MESSAGE_VECTORS)
    if not isinstance(found, MessageEmbeddings):
        raise RuntimeError(f"{runtime.character.name}: the core plugin is not set up ({MESSAGE_VECTORS} is missing)")
    return found
