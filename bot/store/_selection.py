"""What is about one person: the rows forgetting them removes, and exporting them shows.

"Everything about a person", for :meth:`~bot.store.Store.forget_entity` and an entity export:
their entity row, components (theirs and those they asserted), participations, relationships
either way, every memory they authored, the agent's replies to their messages, their
direct-message rooms with the agent (whole), facts and summaries that name them (by id in
``metadata.entityIds`` or anywhere in the JSON, or by one of their names, 3 letters or more, as a
whole word in the text), logs about them, cache entries and tasks mentioning them. Other people's
messages that mention their id keep their text, with the id scrubbed out; so do worlds, rooms,
other entities and relationships. :func:`select_entity` picks the memories and rooms, in either
backend's SQL; the rest is the forget's own (``_forgetting``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.store._dialect import IdList, Step, Unit
from bot.store._rows import Row, loads
from bot.store._values import DERIVED_TABLES, KNOWLEDGE_TABLES

__all__ = [
    "ABOUT",
    "DM_TYPES",
    "MESSAGES",
    "OUTSIDE",
    "Selection",
    "name_pattern",
    "naming",
    "select_entity",
    "selection",
]

#: The memory table of messages, and the room types of direct messages.
MESSAGES = "messages"
DM_TYPES = ("DM", "VOICE_DM")
_MIN_NAME = 3  # shorter names ("Al", "J") would match too much text
#: SQL (a template): the memory ``m`` is about the entity bound to ``?`` (summaries and facts
#: list the ids they are about, besides their author, in ``metadata.entityIds``).
ABOUT = "{about}"
#: SQL (a template): the memory ``m`` is outside the rooms bound to ``?`` (an id list).
OUTSIDE = "(m.room_id IS NULL OR m.room_id {not_in_list})"


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


def select_entity(agent: str, entity_id: str, names: Sequence[str], id_list: IdList) -> Unit[Selection]:
    """The rows :meth:`~bot.store.Store.forget_entity` removes or edits, read inside the caller's
    transaction or snapshot; ``id_list`` is the dialect's (``Dialect.id_list``)."""
    dm_rooms = _ids(
        (
            yield Step(
                "SELECT r.id FROM rooms r WHERE r.agent_id = ? AND r.id != ? AND r.type {in_list} "
                "AND (EXISTS (SELECT 1 FROM participants p WHERE p.room_id = r.id AND p.entity_id = ?) "
                "     OR EXISTS (SELECT 1 FROM memories m WHERE m.room_id = r.id AND m.entity_id = ?)) "
                "AND NOT EXISTS (SELECT 1 FROM participants p WHERE p.room_id = r.id AND p.entity_id NOT IN (?, ?)) "
                "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.room_id = r.id AND m.entity_id NOT IN (?, ?))",
                (agent, agent, id_list(DM_TYPES), entity_id, entity_id, entity_id, agent, entity_id, agent),
            )
        ).rows
    )
    rooms = id_list(dm_rooms)
    theirs = _ids(
        (
            yield Step(
                f"SELECT m.id FROM memories m WHERE m.agent_id = ? AND m.entity_id = ? AND {OUTSIDE}",
                (agent, entity_id, rooms),
            )
        ).rows
    )
    replies = _ids(
        (
            yield Step(
                f"SELECT m.id FROM memories m WHERE m.agent_id = ? AND m.type = ? AND m.entity_id = ? AND {OUTSIDE} "
                "AND {json_text:m.content.inReplyTo} {in_list}",
                (agent, MESSAGES, agent, rooms, id_list(theirs)),
            )
        ).rows
    )
    # Mentions of the id anywhere in a memory's JSON (about them, or naming them in passing).
    mentioning = (
        yield Step(
            f"SELECT m.id, m.type FROM memories m WHERE m.agent_id = ? AND {OUTSIDE} "
            f"AND ({{json_holds:m.content}} OR {{json_holds:m.metadata}} OR {ABOUT})",
            (agent, rooms, entity_id, entity_id, entity_id),
        )
    ).rows
    agent_rows = (yield Step("SELECT names FROM entities WHERE id = ?", (agent,))).rows
    pattern = name_pattern(names, [n for r in agent_rows for n in loads(r["names"], [])])
    named: list[str] = []
    if pattern is not None:
        texts = yield Step(
            f"SELECT m.id, {{json_text:m.content.text}} AS text FROM memories m WHERE m.agent_id = ? AND {OUTSIDE} "
            "AND m.type {in_list}",
            (agent, rooms, id_list(DERIVED_TABLES)),
        )
        named = naming(pattern, ((r["id"], r["text"]) for r in texts.rows))
    return selection(dm_rooms, [*theirs, *replies, *named], ((r["id"], r["type"]) for r in mentioning))


def _ids(rows: Iterable[Row]) -> list[str]:
    return [r["id"] for r in rows]


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
