"""FACTS (dynamic): what the agent has learned that bears on the conversation.

With an embedding model the ``facts`` table is searched by the vector of the current message —
the one computed for storing it, started when it arrived, so no extra model call waits here.
Without one (or if embedding failed) the text of the last few messages is searched by keywords.
Two searches, one within the room and one about the sender, are merged without duplicates.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.components import Provider, ProviderResult, State
from bot.types import Memory

from .._embedding import vector_of
from ._common import MESSAGES

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["provider"]

_log = logging.getLogger(__name__)

FACTS = "facts"
_RECENT = 10  # messages read
_QUERY_MESSAGES = 5  # of which the newest are the query
_PER_SEARCH = 6
_NONE = "No facts available."


async def _query_text(runtime: AgentRuntime, message: Memory) -> str:
    recent = await runtime.store.get_memories(table=MESSAGES, room_id=message.room_id, count=_RECENT)
    texts = [str(m.content.get("text") or "").strip() for m in reversed(recent[:_QUERY_MESSAGES])]
    current = str(message.content.get("text") or "").strip()
    if current and current not in texts:
        texts.append(current)
    return "\n".join(t for t in texts if t)


async def _search(runtime: AgentRuntime, message: Memory, query: str) -> list[Memory]:
    store = runtime.store
    vector = await vector_of(runtime, message)
    if vector:
        try:
            in_room = await store.search_memories(vector, FACTS, room_id=message.room_id, count=_PER_SEARCH)
            about_sender = await store.search_memories(vector, FACTS, entity_id=message.entity_id, count=_PER_SEARCH)
            return [*in_room, *about_sender]
        except Exception as exc:
            _log.warning("%s: fact search by embedding failed (%s); searching by keywords",
                         runtime.character.name, exc.__class__.__name__)
    in_room = await store.search_memories_by_text(query, FACTS, room_id=message.room_id, count=_PER_SEARCH)
    about_sender = await store.search_memories_by_text(query, FACTS, entity_id=message.entity_id, count=_PER_SEARCH)
    return [*in_room, *about_sender]


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    query = await _query_text(runtime, message)
    found = await _search(runtime, message, query) if query else []
    facts: list[Memory] = []
    seen: set[str] = set()
    for fact in found:
        key = fact.id or str(fact.content.get("text"))
        if key not in seen and str(fact.content.get("text") or "").strip():
            seen.add(key)
            facts.append(fact)
    heading = f"# What {runtime.character.name} Knows"
    if not facts:
        return ProviderResult(text=f"{heading}\n{_NONE}", values={"facts": ""}, data={"facts": []})
    texts = [str(f.content["text"]).strip() for f in facts]
    text = f"{heading}\n" + "\n".join(f"- {t}" for t in texts)
    return ProviderResult(text=text, values={"facts": "\n".join(texts)}, data={"facts": facts})


provider = Provider(
    name="FACTS",
    get=_get,
    description="Facts the agent has learned earlier about the people and topics in this conversation.",
    dynamic=True,
)
