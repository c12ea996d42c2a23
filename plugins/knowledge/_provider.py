"""KNOWLEDGE: what the character's documents and facts say about the message, or that they say
nothing about it.

Not dynamic (unless ``KNOWLEDGE_PROVIDER_DYNAMIC``): a character with knowledge sees it in every
planning prompt, placed before the conversation (position 50; RECENT_MESSAGES is 100). The
query is the message's text, and its vector — the one the pipeline computes for storing the
message, so no embedding call is added — when an embedding model is configured. A character
with no knowledge at all (own or shared) gets no section. While a sync runs (the first start's,
a reload's) the provider waits for it, at most KNOWLEDGE_SYNC_WAIT_S, then answers from what is
stored so far and says so in the log.

When nothing matches, the section says so and tells the character to say it does not know
rather than guess; when fragments are shown, the character is told to answer from them and, if
they do not hold the answer, to say so.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from bot.sdk import MESSAGE_VECTORS, Memory, ModelType, Provider, ProviderResult, State

from ._search import Hit
from ._service import KNOWLEDGE

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["HEADING", "provider"]

_log = logging.getLogger("plugins.knowledge")

HEADING = "# Knowledge"
# Longest the provider waits for the message's vector before searching by keywords alone.
_VECTOR_WAIT_S = 5.0


def _found(name: str) -> str:
    return (
        f"What {name} knows from their documents and notes that bears on this message, most relevant "
        f"first. Answer from it when it applies. If it does not hold the answer, {name} says they do not "
        "know rather than guessing or making something up."
    )


def _nothing(name: str) -> str:
    return (
        f"Nothing in {name}'s documents or notes matches this message. If it asks for facts {name} "
        f"would need to look up, {name} says plainly that they do not know rather than guessing or "
        "making something up."
    )


def _bullet(text: str) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    return "- " + "\n  ".join(lines)


def _data(hit: Hit) -> dict[str, object]:
    """A hit as elizaOS's knowledge provider gives it (JSON, read by key in templates and plugins)."""
    memory = hit.memory
    return {
        "id": memory.id,
        "content": {"text": hit.text},
        "similarity": hit.similarity,
        "score": hit.score,
        "metadata": memory.metadata.to_json(),
    }


async def _vector(runtime: AgentRuntime, message: Memory) -> list[float] | None:
    """The message's vector, or None (no embedding model, it failed, or it is slow: then the
    search is by keywords rather than the reply waiting)."""
    # The pipeline's own vector of the message (plugins/core embeds each message once).
    vectors = runtime.get_service(MESSAGE_VECTORS)
    if vectors is None or not runtime.has_model(ModelType.TEXT_EMBEDDING):
        return None
    try:
        async with asyncio.timeout(_VECTOR_WAIT_S):
            return await vectors.vector_of(message)
    except TimeoutError:
        _log.warning(
            "%s: knowledge: the message's embedding took over %.0f s; searching by keywords",
            runtime.character.name,
            _VECTOR_WAIT_S,
        )
        return None


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    service = runtime.get_service(KNOWLEDGE)
    text = (message.content.text or "").strip()
    if service is None or not text:
        return ProviderResult()  # nothing to ask: no section at all
    await service.settle()  # a sync under way (the first start's): its knowledge, not none
    if not await service.has_knowledge():
        return ProviderResult()  # nothing to know: no section at all
    name = runtime.character.name
    hits = await service.search(text, await _vector(runtime, message))
    if not hits:
        section = f"{HEADING}\n{_nothing(name)}"
        return ProviderResult(text=section, values={"knowledge": ""}, data={"knowledge": []})
    body = "\n".join(_bullet(hit.text) for hit in hits)
    section = f"{HEADING}\n{_found(name)}\n{body}"
    return ProviderResult(text=section, values={"knowledge": section}, data={"knowledge": [_data(h) for h in hits]})


provider = Provider(
    name="KNOWLEDGE",
    get=_get,
    description="Passages from the character's documents and notes that bear on the message.",
    position=50,
)
