"""Embedding messages in the background, off the reply's critical path.

Each incoming message is embedded once, starting the moment it is stored, and that one vector
serves twice: it is saved with the message (for later searches), and the FACTS provider
searches with it while the reply is being prepared — by then the gate has usually given the
embedding model all the time it needs, so the search rarely waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING

from bot.models import ModelType

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime
    from bot.types import Memory

__all__ = ["embed_later", "vector_of"]

_log = logging.getLogger(__name__)

_KEPT = 64  # recent messages whose vector (or its computation) is kept for providers

_pending: weakref.WeakKeyDictionary[AgentRuntime, OrderedDict[str, asyncio.Task[list[float] | None]]] = (
    weakref.WeakKeyDictionary()
)


def embed_later(runtime: AgentRuntime, memory_id: str, text: str) -> None:
    """Compute and store the vector of ``text`` for memory ``memory_id`` when an embedding model is
    configured; the memory is usable (by time and keywords) until then. Failures are logged."""
    if not text or not runtime.has_model(ModelType.TEXT_EMBEDDING):
        return
    recent = _pending.setdefault(runtime, OrderedDict())
    recent[memory_id] = runtime.create_task(_embed(runtime, memory_id, text), "embed")
    while len(recent) > _KEPT:
        recent.popitem(last=False)


async def vector_of(runtime: AgentRuntime, memory: Memory) -> list[float] | None:
    """The vector of ``memory``'s text: the one :func:`embed_later` computes for it (waiting for it
    if need be), else computed now. None without an embedding model or text, or if the model failed."""
    if memory.embedding:
        return memory.embedding
    task = _pending.get(runtime, {}).get(memory.id) if memory.id else None
    if task is not None:
        # shield: a provider giving up (its timeout) must not cancel the embedding being stored.
        return await asyncio.shield(task)
    text = str(memory.content.get("text") or "")
    if not text or not runtime.has_model(ModelType.TEXT_EMBEDDING):
        return None
    try:
        return await runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": text})
    except Exception as exc:
        _log.warning("%s: could not embed a message: %s", runtime.character.name, exc.__class__.__name__)
        return None


async def _embed(runtime: AgentRuntime, memory_id: str, text: str) -> list[float] | None:
    try:
        vector = await runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": text})
        await runtime.store.update_memory(memory_id, embedding=vector)
    except Exception as exc:
        _log.warning("%s: could not embed message %s: %s", runtime.character.name, memory_id, exc)
        return None
    return vector
