"""What is about one person, on PostgreSQL: what forgetting them removes and exporting them shows.

The same selection as SQLite's (``bot/store/_selection.py``, which says what is in it and holds
the parts that are not SQL); here in PostgreSQL's SQL, inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from bot.store._rows import loads
from bot.store._selection import DM_TYPES, MESSAGES, Selection, name_pattern, naming, selection
from bot.store._values import DERIVED_TABLES

__all__ = ["ABOUT", "select_entity"]

#: SQL: the memory ``m`` is about the entity bound to ``%s`` (summaries and facts list the ids
#: they are about, besides their author, in ``metadata.entityIds``).
ABOUT = "m.metadata->'entityIds' @> jsonb_build_array(%s::text)"
# The memory ``m`` is outside the rooms bound to ``%s`` (a list).
_OUTSIDE = "(m.room_id IS NULL OR NOT m.room_id = ANY(%s))"


async def _ids(conn: psycopg.AsyncConnection[Any], sql: str, params: Sequence[object]) -> list[str]:
    cur = await conn.execute(sql, params)
    return [r["id"] for r in await cur.fetchall()]


async def select_entity(
    conn: psycopg.AsyncConnection[Any], agent: str, entity_id: str, names: Sequence[str]
) -> Selection:
    """The rows :meth:`~bot.store.Store.forget_entity` removes or edits."""
    dm_rooms = await _ids(
        conn,
        "SELECT r.id FROM rooms r WHERE r.agent_id = %s AND r.id != %s AND r.type = ANY(%s) "
        "AND (EXISTS (SELECT 1 FROM participants p WHERE p.room_id = r.id AND p.entity_id = %s) "
        "     OR EXISTS (SELECT 1 FROM memories m WHERE m.room_id = r.id AND m.entity_id = %s)) "
        "AND NOT EXISTS (SELECT 1 FROM participants p WHERE p.room_id = r.id AND p.entity_id NOT IN (%s, %s)) "
        "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.room_id = r.id AND m.entity_id NOT IN (%s, %s))",
        (agent, agent, list(DM_TYPES), entity_id, entity_id, entity_id, agent, entity_id, agent),
    )
    theirs = await _ids(
        conn,
        f"SELECT m.id FROM memories m WHERE m.agent_id = %s AND m.entity_id = %s AND {_OUTSIDE}",
        (agent, entity_id, dm_rooms),
    )
    replies = await _ids(
        conn,
        f"SELECT m.id FROM memories m WHERE m.agent_id = %s AND m.type = %s AND m.entity_id = %s AND {_OUTSIDE} "
        "AND m.content->>'inReplyTo' = ANY(%s)",
        (agent, MESSAGES, agent, dm_rooms, theirs),
    )
    # Mentions of the id anywhere in a memory's JSON (about them, or naming them in passing).
    cur = await conn.execute(
        f"SELECT m.id, m.type FROM memories m WHERE m.agent_id = %s AND {_OUTSIDE} "
        f"AND (strpos(m.content::text, %s) > 0 OR strpos(m.metadata::text, %s) > 0 OR {ABOUT})",
        (agent, dm_rooms, entity_id, entity_id, entity_id),
    )
    mentioning = [(r["id"], r["type"]) for r in await cur.fetchall()]
    cur = await conn.execute("SELECT names FROM entities WHERE id = %s", (agent,))
    agent_names = [n for r in await cur.fetchall() for n in loads(r["names"], [])]
    pattern = name_pattern(names, agent_names)
    named: list[str] = []
    if pattern is not None:
        cur = await conn.execute(
            f"SELECT m.id, m.content->>'text' AS text FROM memories m WHERE m.agent_id = %s AND {_OUTSIDE} "
            "AND m.type = ANY(%s)",
            (agent, dm_rooms, list(DERIVED_TABLES)),
        )
        named = naming(pattern, ((r["id"], r["text"]) for r in await cur.fetchall()))
    return selection(dm_rooms, [*theirs, *replies, *named], mentioning)
