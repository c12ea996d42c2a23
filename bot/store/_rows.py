"""Conversions between database rows and the dataclasses of :mod:`bot.kernel.types`, and JSON columns."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypeVar

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.record_metadata import EntityMetadata, RelationshipMetadata, RoomMetadata, TaskMetadata, WorldMetadata
from bot.kernel.types import (
    AgentRecord,
    ChannelType,
    Component,
    Entity,
    LogEntry,
    Memory,
    Relationship,
    Room,
    Task,
    World,
    now_ms,
)
from bot.store._connect import casefold
from bot.store._scoped import new_id
from bot.store._vectors import decode_vector

__all__ = [
    "AGENT_JSON_FIELDS",
    "component_filter",
    "dumps",
    "entities_with_components",
    "fold_names",
    "json_text",
    "loads",
    "log_row",
    "LogRow",
    "normalize_names",
    "room_values",
    "row_to_agent",
    "row_to_component",
    "row_to_entity",
    "row_to_log",
    "Payloads",
    "row_to_memory",
    "row_to_relationship",
    "row_to_room",
    "row_to_task",
    "row_to_world",
    "sanitize_log_body",
    "task_row",
    "task_updates",
]


class Row(Protocol):
    """A row read by column name: SQLite's ``Row`` or a PostgreSQL dict row alike."""

    def __getitem__(self, key: str, /) -> Any: ...


#: AgentRecord fields stored as JSON text, with the empty value each defaults to.
AGENT_JSON_FIELDS: dict[str, object] = {
    "bio": [],
    "message_examples": [],
    "post_examples": [],
    "topics": [],
    "adjectives": [],
    "knowledge": [],
    "plugins": [],
    "settings": {},
    "style": {},
}


def dumps(value: object) -> str:
    """JSON text for a column; raises ValueError for NaN/inf, which SQLite's JSON functions reject."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def json_text(value: object) -> str:
    """JSON text for a jsonb column, as :func:`dumps` writes it for SQLite, with U+0000 (which
    jsonb cannot hold, and a user's message can carry) as U+FFFD: the message is kept, that
    character is not. ValueError for NaN or an infinity."""
    text = dumps(value)
    # dumps escapes U+0000 as \u0000; the same six characters may also be text that is not one.
    return dumps(_without_nul(value)) if "\\u0000" in text else text


def _without_nul(value: object) -> object:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(v) for v in value]
    return value


# Rows are decoded by the dozen for every prompt (each memory's content and metadata): the
# decoder itself rather than json.loads's checks of its arguments, and no parse at all for the
# empty object most metadata columns hold.
_decode = json.JSONDecoder().decode


def loads(text: str | None, default: Any = None) -> Any:
    """Parse a JSON column; NULL gives ``default``."""
    if text is None:
        return default
    if text == "{}":
        return {}
    return _decode(text)


def normalize_names(names: object) -> list[str]:
    """Entity names as a list of strings (a str becomes [str], any iterable a list)."""
    if names is None:
        return []
    if isinstance(names, str):
        return [names]
    if isinstance(names, Iterable):
        return [n if isinstance(n, str) else str(n) for n in names]
    return [str(names)]


def fold_names(names: Iterable[str]) -> list[str]:
    """Entity names as a search by name compares them: NFKC-normalised and casefolded, as SQL's
    ``casefold()`` on SQLite. PostgreSQL stores them (``folded_names``) since its own lowercasing
    depends on the server's locale."""
    return [casefold(n) or "" for n in names]


def row_to_agent(row: Row) -> AgentRecord:
    bio = loads(row["bio"], [])
    return AgentRecord(
        id=row["id"],
        name=row["name"],
        username=row["username"],
        enabled=bool(row["enabled"]),
        system=row["system"] or None,
        bio=bio if isinstance(bio, list) else [bio],
        message_examples=loads(row["message_examples"], []),
        post_examples=loads(row["post_examples"], []),
        topics=loads(row["topics"], []),
        adjectives=loads(row["adjectives"], []),
        knowledge=loads(row["knowledge"], []),
        plugins=loads(row["plugins"], []),
        settings=loads(row["settings"], {}),
        style=loads(row["style"], {}),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def row_to_entity(row: Row, components: list[Component] | None = None) -> Entity:
    return Entity(
        id=row["id"],
        agent_id=row["agent_id"],
        names=loads(row["names"], []),
        metadata=EntityMetadata.from_json(loads(row["metadata"], {})),
        created_at=row["created_at"],
        components=components if components is not None else [],
    )


def entities_with_components(rows: Iterable[Row], component_rows: Iterable[Row]) -> list[Entity]:
    """The entities of ``rows``, each with its components among ``component_rows`` in their order."""
    by_entity: dict[str, list[Component]] = {}
    for row in component_rows:
        by_entity.setdefault(row["entity_id"], []).append(row_to_component(row))
    return [row_to_entity(r, by_entity.get(r["id"], [])) for r in rows]


def row_to_component(row: Row) -> Component:
    return Component(
        id=row["id"],
        entity_id=row["entity_id"],
        agent_id=row["agent_id"],
        room_id=row["room_id"],
        type=row["type"],
        data=loads(row["data"], {}),
        world_id=row["world_id"],
        source_entity_id=row["source_entity_id"],
        created_at=row["created_at"],
    )


def component_filter(
    agent_id: str, entity_id: str, world_id: str | None, source_entity_id: str | None
) -> tuple[str, list[str]]:
    """The WHERE clause (a template, see ``Dialect.render``) and parameters picking an entity's
    components (for a world, asserted by someone, when given)."""
    clauses, params = ["agent_id = ?", "entity_id = ?"], [agent_id, entity_id]
    for column, value in (("world_id", world_id), ("source_entity_id", source_entity_id)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(clauses), params


def row_to_world(row: Row) -> World:
    return World(
        id=row["id"],
        agent_id=row["agent_id"],
        name=row["name"],
        server_id=row["server_id"],
        metadata=WorldMetadata.from_json(loads(row["metadata"], {})),
        created_at=row["created_at"],
    )


def row_to_room(row: Row) -> Room:
    return Room(
        id=row["id"],
        source=row["source"],
        type=ChannelType(row["type"]),
        agent_id=row["agent_id"],
        name=row["name"],
        world_id=row["world_id"],
        server_id=row["server_id"],
        channel_id=row["channel_id"],
        metadata=RoomMetadata.from_json(loads(row["metadata"], {})),
        created_at=row["created_at"],
    )


def room_values(room: Room, room_id: str, agent_id: str) -> tuple[str | None, ...]:
    """A room's columns to write: agent_id, source, type, server_id, world_id, name, metadata (JSON
    text), channel_id, id. ValueError for a type that is not a ChannelType."""
    return (
        agent_id,
        room.source,
        ChannelType(room.type).value,
        room.server_id,
        room.world_id,
        room.name,
        dumps(room.metadata.to_json()),
        room.channel_id,
        room_id,
    )


_P = TypeVar("_P")


class Payloads:
    """Memories' content and metadata already decoded, by their JSON text.

    Every prompt reads the same recent messages again, and decoding a row (its JSON, then its
    typed fields) is most of what reading it costs; the payloads are frozen, so one decoded
    value serves every read of the same text. Bounded: the oldest entries go first. Rows are
    decoded on reader threads too, hence the lock.
    """

    __slots__ = ("_content", "_lock", "_metadata", "_size")

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._content: dict[str, Content] = {}
        self._metadata: dict[str, MemoryMetadata] = {}
        self._lock = threading.Lock()

    def content(self, text: str | None) -> Content:
        found = self._content.get(text) if text is not None else None
        if found is None:
            found = Content.from_json(loads(text, {}))
            self._keep(self._content, text, found)
        return found

    def metadata(self, text: str | None) -> MemoryMetadata:
        found = self._metadata.get(text) if text is not None else None
        if found is None:
            found = MemoryMetadata.from_json(loads(text, {}))
            self._keep(self._metadata, text, found)
        return found

    def _keep(self, decoded: dict[str, _P], text: str | None, value: _P) -> None:
        if text is None:
            return
        with self._lock:
            if len(decoded) >= self._size:
                del decoded[next(iter(decoded))]
            decoded[text] = value


def row_to_memory(
    row: Row, payloads: Payloads, *, embedding: bytes | list[float] | None = None, similarity: float | None = None
) -> Memory:
    """A memory from its row; ``embedding`` as SQLite's float32 BLOB or as floats already decoded."""
    return Memory(
        id=row["id"],
        entity_id=row["entity_id"],
        agent_id=row["agent_id"],
        room_id=row["room_id"],
        world_id=row["world_id"],
        content=payloads.content(row["content"]),
        embedding=decode_vector(embedding) if isinstance(embedding, bytes) else embedding,
        created_at=row["created_at"],
        unique=bool(row["is_unique"]),
        metadata=payloads.metadata(row["metadata"]),
        similarity=similarity,
        table=row["type"],
    )


def row_to_relationship(row: Row) -> Relationship:
    return Relationship(
        id=row["id"],
        source_entity_id=row["source_entity_id"],
        target_entity_id=row["target_entity_id"],
        agent_id=row["agent_id"],
        tags=loads(row["tags"], []),
        metadata=RelationshipMetadata.from_json(loads(row["metadata"], {})),
        created_at=row["created_at"],
    )


def row_to_log(row: Row) -> LogEntry:
    return LogEntry(
        id=row["id"],
        entity_id=row["entity_id"],
        room_id=row["room_id"],
        type=row["type"],
        body=loads(row["body"], {}),
        created_at=row["created_at"],
    )


def row_to_task(row: Row) -> Task:
    return Task(
        id=row["id"],
        name=row["name"],
        agent_id=row["agent_id"],
        description=row["description"] or "",
        room_id=row["room_id"],
        world_id=row["world_id"],
        entity_id=row["entity_id"],
        tags=loads(row["tags"], []),
        metadata=TaskMetadata.from_json(loads(row["metadata"], {})),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def task_row(task: Task, task_id: str, agent_id: str, now: int) -> tuple[str | int | None, ...]:
    """A new ``tasks`` row: id, name, description, room_id, world_id, entity_id, agent_id, tags and
    metadata (JSON text), created_at, updated_at."""
    return (
        task_id,
        task.name,
        task.description or "",
        task.room_id,
        task.world_id,
        task.entity_id,
        agent_id,
        dumps(list(task.tags)),
        dumps(task.metadata.to_json()),
        now,
        now,
    )


_TASK_UPDATABLE = frozenset({"name", "description", "room_id", "world_id", "entity_id", "tags", "metadata"})


def task_updates(changes: Mapping[str, Any]) -> dict[str, str | None]:
    """The ``tasks`` columns ``update_task`` sets for ``changes``, as stored (tags and metadata as
    JSON text, replaced whole); ValueError for a field that cannot be updated."""
    unknown = set(changes) - _TASK_UPDATABLE
    if unknown:
        raise ValueError(f"update_task: cannot update {', '.join(sorted(unknown))}")
    updates: dict[str, str | None] = {}
    for name, value in changes.items():
        if name == "tags":
            value = dumps(list(value or []))
        elif name == "metadata":
            value = dumps(TaskMetadata().to_json() if value is None else value.to_json())
        elif name == "description":
            value = value or ""
        updates[name] = value
    return updates


#: One ``logs`` row: id, created_at, entity_id, body (JSON text), type, room_id.
LogRow = tuple[str, int, str, str, str, str]


def log_row(body: Mapping[str, object], entity_id: str, room_id: str, type: str) -> LogRow:
    """A new ``logs`` row (its id first) for ``body``, made JSON-safe by :func:`sanitize_log_body`."""
    text = json.dumps(sanitize_log_body(body), ensure_ascii=False)
    return (new_id(), now_ms(), entity_id, text, type, room_id)


def sanitize_log_body(value: object, _seen: frozenset[int] = frozenset()) -> object:
    """A JSON-safe copy of a log body: NUL characters stripped, cycles cut to None, NaN/inf to None."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if id(value) in _seen:
        return None
    if isinstance(value, Mapping):
        seen = _seen | {id(value)}
        return {str(k).replace("\x00", ""): sanitize_log_body(v, seen) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        seen = _seen | {id(value)}
        return [sanitize_log_body(v, seen) for v in value]
    # Anything else (datetimes, enums, objects) is logged as its text.
    return str(value).replace("\x00", "")
