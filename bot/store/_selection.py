"""What is about one person: the rows forgetting them removes, and exporting them shows.

"Everything about a person", for :meth:`~bot.store.Store.forget_entity` and an entity export:
their entity row, components (theirs and those they asserted), participations, relationships
either way, every memory they authored, the agent's replies to their messages, their
direct-message rooms with the agent (whole), facts and summaries that name them (by id in
``metadata.entityIds`` or anywhere in the JSON, or by one of their names, 3 letters or more, as a
whole word in the text), logs about them, cache entries and tasks mentioning them. Other people's
messages that mention their id keep their text, with the id scrubbed out; so do worlds, rooms,
other entities and relationships. :func:`select_entity` picks the memories and rooms; the rest
is the forget's own (``_forgetting``). The PostgreSQL store selects alike
(``postgres/_selection``) with the pure parts here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.store._connect import Connection
from bot.store._rows import loads
from bot.store._scoped import json_list
from bot.store._values import DERIVED_TABLES, KNOWLEDGE_TABLES

__all__ = ["ABOUT", "DM_TYPES", "MESSAGES", "Selection", "name_pattern", "naming", "select_entity", "selection"]

#: The memory table of messages, and the room types of direct messages.
MESSAGES = "messages"
DM_TYPES = ("DM", "VOICE_DM")
_MIN_NAME = 3  # shorter names ("Al", "J") would match too much text
#: SQL: the memory ``m`` is about the entity bound to ``?`` (summaries and facts list the ids
#: they are about, besides their author, in ``metadata.entityIds``).
ABOUT = "EXISTS (SELECT 1 FROM json_each(m.metadata, '$.entityIds') a WHERE a.value = ?)"


def name_pattern(names: Iterable[str], exclude: Iterable[str]) -> re.Pattern[str] | None:
    """A whole-word, case-blind pattern of ``names`` (3 letters or more, none of ``exclude``), or None."""
    skip = {n.strip().casefold() for n in exclude}
    usable = sorted(
        {n.strip() for n in names if len(n.strip()) >= _MIN_NAME and n.strip().casefold() not in skip},
        key=len,
        reverse=True,
    )
    if not usable:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in usable) + r")(?!\w)", re.IGNORECASE)


@dataclass(slots=True)
class Selection:
    """What is about one entity: computed the same way for forgetting and for exporting."""

    dm_rooms: list[str]
    memories: list[str]
    """Memories outside those rooms to remove: theirs, replies to them, facts and summaries about them."""
    mentions: list[str]
    """Messages outside those rooms (others') whose JSON mentions their id: kept, id scrubbed."""


def select_entity(conn: Connection, agent: str, entity_id: str, names: Sequence[str]) -> Selection:
    """On a database thread: the rows :meth:`~bot.store.Store.forget_entity` removes or edits."""
    dm_rooms = [
        r[0]
        for r in conn.execute(
            "SELECT r.id FROM rooms r WHERE r.agent_id = ? AND r.id != ? AND r.type IN (SELECT value FROM json_each(?)) "
            "AND (EXISTS (SELECT 1 FROM participants p WHERE p.room_id = r.id AND p.entity_id = ?) "
            "     OR EXISTS (SELECT 1 FROM memories m WHERE m.room_id = r.id AND m.entity_id = ?)) "
            "AND NOT EXISTS (SELECT 1 FROM participants p WHERE p.room_id = r.id AND p.entity_id NOT IN (?, ?)) "
            "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.room_id = r.id AND m.entity_id NOT IN (?, ?))",
            (agent, agent, json_list(DM_TYPES), entity_id, entity_id, entity_id, agent, entity_id, agent),
        )
    ]
    outside = "(m.room_id IS NULL OR m.room_id NOT IN (SELECT value FROM json_each(?)))"
    rooms = json_list(dm_rooms)
    theirs = [
        r[0]
        for r in conn.execute(
            f"SELECT m.id FROM memories m WHERE m.agent_id = ? AND m.entity_id = ? AND {outside}",
            (agent, entity_id, rooms),
        )
    ]
    replies = [
        r[0]
        for r in conn.execute(
            f"SELECT m.id FROM memories m WHERE m.agent_id = ? AND m.type = ? AND m.entity_id = ? AND {outside} "
            "AND json_extract(m.content, '$.inReplyTo') IN (SELECT value FROM json_each(?))",
            (agent, MESSAGES, agent, rooms, json_list(theirs)),
        )
    ]
    # Mentions of the id anywhere in a memory's JSON (about them, or naming them in passing).
    mentioning = conn.execute(
        f"SELECT m.id, m.type FROM memories m WHERE m.agent_id = ? AND {outside} "
        f"AND (instr(m.content, ?) > 0 OR instr(m.metadata, ?) > 0 OR {ABOUT})",
        (agent, rooms, entity_id, entity_id, entity_id),
    ).fetchall()
    agent_names = [
        n for r in conn.execute("SELECT names FROM entities WHERE id = ?", (agent,)) for n in loads(r[0], [])
    ]
    pattern = name_pattern(names, agent_names)
    named: list[str] = []
    if pattern is not None:
        texts = conn.execute(
            f"SELECT m.id, json_extract(m.content, '$.text') FROM memories m WHERE m.agent_id = ? AND {outside} "
            "AND m.type IN (SELECT value FROM json_each(?))",
            (agent, rooms, json_list(DERIVED_TABLES)),
        )
        named = naming(pattern, texts)
    return selection(dm_rooms, [*theirs, *replies, *named], mentioning)


def naming(pattern: re.Pattern[str], texts: Iterable[tuple[str, object]]) -> list[str]:
    """The ids of the (id, text) pairs whose text names the person (``pattern``)."""
    return [memory_id for memory_id, text in texts if isinstance(text, str) and pattern.search(text)]


def selection(dm_rooms: list[str], removed: Iterable[str], mentioning: Iterable[tuple[str, str]]) -> Selection:
    """The selection from the DM rooms, the memories removed for sure, and the (id, memory table)
    of the memories whose JSON mentions the person: facts and summaries about them go too,
    messages and knowledge only lose the id."""
    kept_types = {MESSAGES, *KNOWLEDGE_TABLES}
    mentions: set[str] = set()
    gone = set(removed)
    for memory_id, table in mentioning:
        (mentions if table in kept_types else gone).add(memory_id)
    return Selection(dm_rooms, sorted(gone), sorted(mentions - gone))
