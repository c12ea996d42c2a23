"""RELATIONSHIPS (dynamic): who the sender is connected to, what matters for this message first.

A CSV of ``name,interactions,tags`` (tags joined with ``;``), at most 30 rows, names resolved
in one store call. People the message names come first; then the rest by interactions, which
count for less the longer ago the last one was (``metadata.last_interaction_at``, written by the
reflection evaluator; a relationship without it counts in full).
"""

from __future__ import annotations

import csv
import io
import math
import re
from typing import TYPE_CHECKING

from bot.sdk import Memory, Provider, ProviderResult, Relationship, State

from ._common import UNKNOWN_USER, entity_names

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_MAX = 30
_DAY_MS = 86_400_000
_HALF_LIFE_DAYS = 60.0
_NONE = "No relationships found."


def _weight(relationship: Relationship, now: int) -> float:
    """Interactions, halved for every ``_HALF_LIFE_DAYS`` since the last one."""
    last = relationship.metadata.last_interaction_at
    age_days = max(0, now - last) / _DAY_MS if last is not None else 0.0
    return _interactions(relationship) * math.pow(0.5, age_days / _HALF_LIFE_DAYS)


def _named_in(text: str, name: str) -> bool:
    return len(name) >= 3 and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def _interactions(relationship: Relationship) -> int:
    return relationship.metadata.interactions or 0


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    sender_id = message.entity_id
    relationships = await runtime.store.get_relationships(sender_id)
    other_of = {
        r.id: r.target_entity_id if r.source_entity_id == sender_id else r.source_entity_id for r in relationships
    }
    names = await entity_names(runtime, [sender_id, *other_of.values()])
    said = message.content.text or ""
    now = runtime.clock()
    top = sorted(
        relationships, key=lambda r: (_named_in(said, names.get(other_of[r.id], "")), _weight(r, now)), reverse=True
    )[:_MAX]
    others = [other_of[r.id] for r in top]
    sender = names.get(sender_id, UNKNOWN_USER)
    if not top:
        return ProviderResult(
            text=f"# {sender}'s Connections\n{_NONE}", values={"relationships": _NONE}, data={"relationships": []}
        )

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["name", "interactions", "tags"])
    rows = []
    for relationship, other in zip(top, others, strict=True):
        name = names.get(other, UNKNOWN_USER)
        writer.writerow([name, _interactions(relationship), ";".join(relationship.tags)])
        rows.append(
            {
                "entityId": other,
                "name": name,
                "interactions": _interactions(relationship),
                "tags": list(relationship.tags),
                "relationship": relationship,
            }
        )
    table = buffer.getvalue().rstrip("\n")
    text = f"# {sender}'s Connections ({len(rows)})\n{table}"
    return ProviderResult(text=text, values={"relationships": table}, data={"relationships": rows})


provider = Provider(
    name="RELATIONSHIPS",
    get=_get,
    description="The sender's connections to other people, with how often they interact.",
    dynamic=True,
)
