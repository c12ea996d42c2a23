"""The core records: what the store keeps and what adapters and plugins pass around.

Plain dataclasses. A memory's content and metadata are typed (:mod:`bot.kernel.content`), as
are the other records' metadata (:mod:`bot.kernel.record_metadata`); all are stored as JSON with
elizaOS's camelCase keys (``inReplyTo``, ``channelType``).
Ids are lowercase UUID strings; times are milliseconds since the epoch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.kernel.content import ChannelType, Content, MemoryMetadata, MemoryType
from bot.kernel.record_metadata import (
    EntityMetadata,
    RelationshipMetadata,
    Role,
    RoomMetadata,
    TaskMetadata,
    WorldMetadata,
)

__all__ = [
    "AgentRecord",
    "ChannelType",
    "Claim",
    "Component",
    "Entity",
    "Handling",
    "LogEntry",
    "Memory",
    "MemoryType",
    "Relationship",
    "Role",
    "Room",
    "RoomState",
    "Task",
    "World",
    "now_ms",
]

JSON = dict[str, Any]


def now_ms() -> int:
    """Milliseconds since the epoch, the unit of every timestamp troupe stores."""
    return time.time_ns() // 1_000_000


class Handling(StrEnum):
    """Where the answer to one platform message stands; stored, so it survives a crash."""

    HANDLING = "handling"  # claimed and being answered — or was, when the process died
    SENDING = "sending"  # a reply is going out: after a crash it may have been sent, so never again
    DONE = "done"  # decided (and, if answered, sent)
    # Its reply never went out: the daemon answering it lost the character's lease after marking
    # it SENDING and before sending. Given back: the daemon that holds the lease now answers it.
    RELEASED = "released"


class Claim(StrEnum):
    """What to do with a delivery of a platform message (``Store.claim_message``)."""

    NEW = "new"  # first delivery: handle it
    RETRY = "retry"  # left unfinished by a process that died: handle it again, this once
    DUPLICATE = "duplicate"  # already handled: a redelivery, answered at most once
    SENT = "sent"  # its reply had started going out when a process died: never sent again
    ABANDONED = "abandoned"  # a process died while handling it again after a crash: given up


class RoomState(StrEnum):
    """The agent's own state in a room; ``None`` means none of them."""

    FOLLOWED = "FOLLOWED"
    MUTED = "MUTED"
    STOPPED = "STOPPED"  # asked to stay out (a STOP decision): quiet until named or invited back


@dataclass(frozen=True, slots=True)
class Memory:
    """A stored item: a message, a fact, a document fragment, …

    Frozen: what changes (an id, a vector) makes a new one with :func:`dataclasses.replace`."""

    entity_id: str
    """Who said or wrote it."""
    room_id: str
    content: Content
    """What it says: its text, the platform it came from, what it answers, its files …"""
    id: str | None = None
    agent_id: str | None = None
    world_id: str | None = None
    embedding: list[float] | None = None
    created_at: int | None = None
    unique: bool | None = None
    """``None`` lets the store decide (not unique when a ≥0.95-similar memory exists)."""
    metadata: MemoryMetadata = field(default_factory=MemoryMetadata)
    similarity: float | None = None
    """Set on search results only."""
    table: str | None = None
    """The table (``"messages"``, ``"facts"``, ``"documents"`` …) it was read from."""


@dataclass(slots=True)
class Entity:
    """A person or bot as one agent knows it."""

    id: str
    agent_id: str
    names: list[str] = field(default_factory=list)
    metadata: EntityMetadata = field(default_factory=EntityMetadata)
    created_at: int | None = None
    components: list[Component] = field(default_factory=list)


@dataclass(slots=True)
class Component:
    """A typed JSON blob attached to an entity (a profile, per-world settings)."""

    id: str
    entity_id: str
    agent_id: str
    room_id: str
    type: str
    data: JSON = field(default_factory=dict)
    world_id: str | None = None
    source_entity_id: str | None = None
    created_at: int | None = None


@dataclass(slots=True)
class World:
    """A Discord guild or a Telegram chat, as one agent knows it."""

    id: str
    agent_id: str
    name: str = ""
    server_id: str = "default"
    metadata: WorldMetadata = field(default_factory=WorldMetadata)
    created_at: int | None = None


@dataclass(slots=True)
class Room:
    """A channel, thread, DM, forum topic or voice channel, as one agent knows it."""

    id: str
    source: str
    type: ChannelType
    agent_id: str | None = None
    name: str | None = None
    world_id: str | None = None
    server_id: str | None = None
    channel_id: str | None = None
    metadata: RoomMetadata = field(default_factory=RoomMetadata)
    created_at: int | None = None


@dataclass(slots=True)
class Relationship:
    """A directed edge between two entities, as one agent sees it."""

    id: str
    source_entity_id: str
    target_entity_id: str
    agent_id: str
    tags: list[str] = field(default_factory=list)
    metadata: RelationshipMetadata = field(default_factory=RelationshipMetadata)
    created_at: int | None = None


@dataclass(slots=True)
class Task:
    """A persisted unit of work; workers that run it are registered in memory."""

    name: str
    id: str | None = None
    agent_id: str | None = None
    description: str = ""
    room_id: str | None = None
    world_id: str | None = None
    entity_id: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: TaskMetadata = field(default_factory=TaskMetadata)
    created_at: int | None = None
    updated_at: int | None = None


@dataclass(slots=True)
class LogEntry:
    """A structured audit or debug record (model calls, actions, runs)."""

    id: str
    entity_id: str
    room_id: str
    type: str
    body: JSON
    created_at: int


@dataclass(slots=True)
class AgentRecord:
    """A character as stored: its public fields, never its secrets."""

    id: str
    name: str
    username: str | None = None
    enabled: bool = True
    system: str | None = None
    bio: list[str] = field(default_factory=list)
    message_examples: list[list[JSON]] = field(default_factory=list)
    """Example conversations: each a list of messages (``name``, ``content``)."""
    post_examples: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    adjectives: list[str] = field(default_factory=list)
    knowledge: list[str | JSON] = field(default_factory=list)
    """Facts (text), or ``{"path": …}`` / ``{"directory": …}`` with ``shared``."""
    plugins: list[str] = field(default_factory=list)
    settings: JSON = field(default_factory=dict)
    """Non-secret settings only: ``settings.secrets`` is never written to the database."""
    style: JSON = field(default_factory=dict)
    created_at: int | None = None
    updated_at: int | None = None
