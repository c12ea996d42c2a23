"""RELATIONSHIPS (dynamic): who the sender is connected to, most interactions first.

A CSV of ``name,interactions,tags`` (tags joined with ``;``), at most 30 rows, names resolved
in one store call.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from bot.components import Provider, ProviderResult, State
from bot.types import Memory, Relationship

from ._common import UNKNOWN_USER, entity_names

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["provider"]

_MAX = 30
_NONE = "No relationships found."


def _interactions(relationship: Relationship) -> int:
    try:
        return int(relationship.metadata.get("interactions") or 0)
    except (TypeError, ValueError):
        return 0


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    sender_id = message.entity_id
    relationships = await runtime.store.get_relationships(sender_id)
    top = sorted(relationships, key=_interactions, reverse=True)[:_MAX]
    others = [r.target_entity_id if r.source_entity_id == sender_id else r.source_entity_id for r in top]
    names = await entity_names(runtime, [sender_id, *others])
    sender = names.get(sender_id, UNKNOWN_USER)
    if not top:
        return ProviderResult(text=f"# {sender}'s Connections\n{_NONE}", values={"relationships": _NONE},
                              data={"relationships": []})

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["name", "interactions", "tags"])
    rows = []
    for relationship, other in zip(top, others, strict=True):
        name = names.get(other, UNKNOWN_USER)
        writer.writerow([name, _interactions(relationship), ";".join(relationship.tags)])
        rows.append({"entityId": other, "name": name, "interactions": _interactions(relationship),
                     "tags": list(relationship.tags), "relationship": relationship})
    table = buffer.getvalue().rstrip("\n")
    text = f"# {sender}'s Connections ({len(rows)})\n{table}"
    return ProviderResult(text=text, values={"relationships": table}, data={"relationships": rows})


provider = Provider(
    name="RELATIONSHIPS",
    get=_get,
    description="The sender's connections to other people, with how often they interact.",
    dynamic=True,
)
