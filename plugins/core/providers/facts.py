"""FACTS (dynamic): what the agent has learned, and earlier conversation, that bears on the message.

With an embedding model the ``facts`` and ``summaries`` tables are searched by the vector of the
current message — the one computed for storing it, started when it arrived, so no extra model
call waits here. Without one (or if embedding failed) the text of the last few messages is
searched by keywords. Facts come from two searches, one within the room and one about the
sender (facts are stored under the person they are about); summaries of compacted conversation
(plugins/core/_retention.py) from this room only, so nothing said in private surfaces elsewhere.

Ranking is cheap: relevance (cosine similarity, or BM25 scaled to the best hit) plus a small bonus
for recency, which fades over weeks for lasting facts and over days for a status ("is ill"),
minus a little for near-duplicates of another fact.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.sdk import Memory, Provider, ProviderResult, State

from .._embedding import embeddings
from ._common import MESSAGES

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_log = logging.getLogger(__name__)

FACTS = "facts"
SUMMARIES = "summaries"
_RECENT = 10  # messages read
_QUERY_MESSAGES = 5  # of which the newest are the query
_PER_SEARCH = 12  # candidates per search
_SHOWN_FACTS = 8
_SHOWN_SUMMARIES = 3
_DAY_MS = 86_400_000
_RECENCY_WEIGHT = 0.15  # at most this much is added for being new: relevance still decides
_HALF_LIFE_DAYS = 90.0
_STATUS_HALF_LIFE_DAYS = 7.0  # "type: status" facts ("is travelling") go stale fast
_DUPLICATE_PENALTY = 0.2  # stored as not unique: a near-repeat of another fact, after any original
_NONE = "No facts available."


async def _query_text(runtime: AgentRuntime, message: Memory) -> str:
    recent = await runtime.store.get_memories_by_room_ids(table=MESSAGES, room_ids=[message.room_id], limit=_RECENT)
    texts = [(m.content.text or "").strip() for m in reversed(recent[:_QUERY_MESSAGES])]
    current = (message.content.text or "").strip()
    if current and current not in texts:
        texts.append(current)
    return "\n".join(t for t in texts if t)


def _score(memory: Memory, relevance: float, now: int) -> float:
    age_days = max(0, now - (memory.created_at or now)) / _DAY_MS
    half_life = _STATUS_HALF_LIFE_DAYS if memory.content.type == "status" else _HALF_LIFE_DAYS
    score = relevance + _RECENCY_WEIGHT * math.pow(0.5, age_days / half_life)
    return score - _DUPLICATE_PENALTY if memory.unique is False else score


def _scaled(found: list[Memory]) -> list[tuple[Memory, float]]:
    """Keyword hits with their BM25 relevance scaled to 0..1 by the best one."""
    best = max((m.similarity or 0.0 for m in found), default=0.0)
    return [(m, (m.similarity or 0.0) / best if best > 0 else 0.0) for m in found]


async def _search(
    runtime: AgentRuntime, message: Memory
) -> tuple[list[tuple[Memory, float]], list[tuple[Memory, float]]]:
    """(facts, summaries) with their relevance, unranked and possibly repeated."""
    store = runtime.store
    vector = await embeddings(runtime).vector_of(message)
    if vector:
        try:
            in_room = await store.search_memories(vector, FACTS, room_id=message.room_id, count=_PER_SEARCH)
            about_sender = await store.search_memories(vector, FACTS, entity_id=message.entity_id, count=_PER_SEARCH)
            summaries = await store.search_memories(
                vector, SUMMARIES, room_id=message.room_id, count=_SHOWN_SUMMARIES * 2
            )
            return (
                [(m, m.similarity or 0.0) for m in (*in_room, *about_sender)],
                [(m, m.similarity or 0.0) for m in summaries],
            )
        except Exception as exc:
            _log.warning(
                "%s: fact search by embedding failed (%s); searching by keywords",
                runtime.character.name,
                exc.__class__.__name__,
            )
    query = await _query_text(runtime, message)
    if not query:
        return [], []
    in_room = await store.search_memories_by_text(query, FACTS, room_id=message.room_id, count=_PER_SEARCH)
    about_sender = await store.search_memories_by_text(query, FACTS, entity_id=message.entity_id, count=_PER_SEARCH)
    summaries = await store.search_memories_by_text(
        query, SUMMARIES, room_id=message.room_id, count=_SHOWN_SUMMARIES * 2
    )
    return _scaled(in_room) + _scaled(about_sender), _scaled(summaries)


def _best(found: list[tuple[Memory, float]], now: int, limit: int) -> list[Memory]:
    """Highest score first, each memory (and each text) once."""
    ranked = sorted(found, key=lambda hit: _score(hit[0], hit[1], now), reverse=True)
    kept: list[Memory] = []
    seen: set[str] = set()
    for memory, _ in ranked:
        text = (memory.content.text or "").strip()
        keys = {memory.id or text, text.casefold()}
        if text and not keys & seen:
            seen |= keys
            kept.append(memory)
    return kept[:limit]


def _span(summary: Memory) -> str:
    def day(value: int | None) -> str:
        if value is None:
            value = summary.created_at
        if value is None:
            return "?"
        try:
            return datetime.fromtimestamp(value / 1000, UTC).strftime("%Y-%m-%d")
        except (ValueError, OverflowError, OSError):
            return "?"

    start, end = day(summary.metadata.start), day(summary.metadata.end)
    return start if start == end else f"{start} to {end}"


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    found_facts, found_summaries = await _search(runtime, message)
    now = runtime.clock()
    facts = _best(found_facts, now, _SHOWN_FACTS)
    summaries = _best(found_summaries, now, _SHOWN_SUMMARIES)
    heading = f"# What {runtime.character.name} Knows"
    texts = [(f.content.text or "").strip() for f in facts]
    text = f"{heading}\n" + ("\n".join(f"- {t}" for t in texts) if texts else _NONE)
    earlier = [f"({_span(s)}) {(s.content.text or '').strip()}" for s in summaries]
    if earlier:
        text += "\n\n# Earlier Conversation Here\n" + "\n".join(f"- {line}" for line in earlier)
    return ProviderResult(
        text=text,
        values={"facts": "\n".join(texts), "summaries": "\n".join(earlier)},
        data={"facts": facts, "summaries": summaries},
    )


provider = Provider(
    name="FACTS",
    get=_get,
    description="Facts the agent has learned earlier about the people and topics in this conversation, "
    "and summaries of older conversation in this room.",
    dynamic=True,
)
