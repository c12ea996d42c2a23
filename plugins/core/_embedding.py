"""Embedding messages in the background, off the reply's critical path."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.models import ModelType

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["embed_later"]

_log = logging.getLogger(__name__)


def embed_later(runtime: AgentRuntime, memory_id: str, text: str) -> None:
    """Compute and store the vector of ``text`` for memory ``memory_id`` when an embedding model is
    configured; the memory is usable (by time and keywords) until then. Failures are logged."""
    if text and runtime.has_model(ModelType.TEXT_EMBEDDING):
        runtime.create_task(_embed(runtime, memory_id, text), "embed")


async def _embed(runtime: AgentRuntime, memory_id: str, text: str) -> None:
    try:
        vector = await runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": text})
        await runtime.store.update_memory(memory_id, embedding=vector)
    except Exception as exc:
        _log.warning("%s: could not embed message %s: %s", runtime.character.name, memory_id, exc)
