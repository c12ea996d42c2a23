"""The values the :class:`~bot.store.Store` protocol speaks in, shared by every backend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.kernel.ids import string_to_uuid
from bot.kernel.types import Entity, Handling, Memory, Relationship, Room, RoomState, World

__all__ = [
    "DERIVED_TABLES",
    "Forgotten",
    "KNOWLEDGE_TABLES",
    "KnowledgeDocument",
    "KnowledgeSourceRecord",
    "MemoryExport",
    "MessageHandling",
    "Participation",
    "SHARED_KNOWLEDGE_ID",
    "StoredKnowledgeSource",
    "parse_room_state",
]

#: The scope (an ``agents`` row) of knowledge every agent sees.
SHARED_KNOWLEDGE_ID = string_to_uuid("troupe:shared-knowledge")
#: Memory tables learned from conversations and about people: a forgotten person's name in their
#: text is enough to remove them.
DERIVED_TABLES = ("facts", "summaries")
#: Memory tables holding the character's own knowledge (documents and their fragments): they are
#: not memories of anyone; ``forget_all`` keeps them unless asked (``forget_knowledge``).
KNOWLEDGE_TABLES = ("documents", "fragments", "knowledge")


def parse_room_state(state: RoomState | str | None) -> RoomState | None:
    """``state`` as a RoomState (None stays None); ValueError saying what is allowed otherwise."""
    if state is None:
        return None
    try:
        return RoomState(state)
    except ValueError:
        raise ValueError(
            f"invalid room state {state!r}: use RoomState.FOLLOWED, RoomState.MUTED, RoomState.STOPPED or None"
        ) from None


@dataclass(frozen=True, slots=True)
class KnowledgeSourceRecord:
    """Where one document came from: a file, an inline fact or a web page, as last ingested."""

    source: str
    """``file:<absolute path>``, ``text:<sha256>`` or ``url:<link as listed>``."""
    document_id: str
    content_hash: str
    size: int | None = None
    mtime_ns: int | None = None
    """A file's modification time; for a web page, when it was last read."""


@dataclass(frozen=True, slots=True)
class StoredKnowledgeSource:
    """One source of an agent's knowledge as stored: what it is, its document and how many
    fragments it gives the searches."""

    source: str
    """``file:<absolute path>``, ``text:<sha256>`` or ``url:<link as listed>``."""
    title: str
    """The document's title: the file's name (with its folders below the listed folder), the
    start of a fact, or a web page's title."""
    shared: bool
    """In the shared scope (a claim of this agent's on it), rather than the agent's own."""
    fragments: int
    size: int | None
    """The file's (or page's text's) size in bytes when it was last read (None for a fact)."""
    updated_at: int
    """When it was last stored or found unchanged with a new mtime (ms)."""


@dataclass(frozen=True, slots=True)
class KnowledgeDocument:
    """A document to store: its id, its title, metadata, and the text of each fragment in order."""

    id: str
    title: str
    fragments: Sequence[str]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KnowledgeFragment:
    """A stored fragment of a knowledge document: its id, its document's, where it sits in that
    document, and its text."""

    id: str
    document_id: str
    position: int
    text: str


@dataclass(slots=True)
class Forgotten:
    """What a forget removed (or, on a dry run, would remove)."""

    memories: dict[str, int] = field(default_factory=dict)
    """Memories deleted, by memory table (``messages``, ``facts``, ``summaries`` …)."""
    rows: dict[str, int] = field(default_factory=dict)
    """Other rows deleted, by database table (``entities``, ``embeddings``, ``relationships`` …)."""
    edited: dict[str, int] = field(default_factory=dict)
    """Rows kept but with the forgotten id scrubbed out of their JSON, by database table."""

    @property
    def total(self) -> int:
        """Every row deleted or edited."""
        return sum(self.memories.values()) + sum(self.rows.values()) + sum(self.edited.values())


@dataclass(frozen=True, slots=True)
class MessageHandling:
    """Where the answer to one platform message stands, as ``claim_message`` and ``mark_message`` left it."""

    memory_id: str
    room_id: str
    status: Handling
    outcome: str | None
    """How it ended (the pipeline's outcome, e.g. ``replied``), once it is done; None before."""
    attempts: int
    """How often it was taken up: 1, and one more for each retry after a crash."""
    created_at: int
    """The message's own time, in ms."""


@dataclass(slots=True)
class Participation:
    """An entity taking part in a room, with the agent's FOLLOWED/MUTED state there."""

    entity_id: str
    room_id: str
    state: RoomState | None = None


@dataclass(slots=True)
class MemoryExport:
    """Everything an agent stores about a scope (all, one room, one person), without vectors."""

    worlds: list[World] = field(default_factory=list)
    rooms: list[Room] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)
    """With their components."""
    participants: list[Participation] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    """Oldest first; ``embedding`` is never set."""
    relationships: list[Relationship] = field(default_factory=list)
