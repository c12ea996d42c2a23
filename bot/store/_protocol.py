"""``Store`` and ``StoreBackend``: all that code outside ``bot.store`` may ask of storage.

``Store`` is storage as one agent sees it: the sum of its roles (``MemoryStore``, ``ClaimStore``,
``KnowledgeStore``…), each a protocol that code needing only that role may ask for alone.
``StoreBackend`` is the whole database, opened once per process, that hands out one ``Store``
per agent. The SQLite :class:`~bot.store.Database` and
:class:`~bot.store.AgentStore` implement them today; a PostgreSQL backend would too, and must
pass tests/bot/store/contract unchanged. Nothing outside ``bot.store`` sees a connection or SQL.
Every ``Store`` method is scoped to :attr:`Store.agent_id` (see the implementation's module
docstring for the few deliberate cross-agent reads). Semantics follow elizaOS's database adapter.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Protocol, Self, runtime_checkable

from bot.kernel.bus import Bus
from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.messages import Status
from bot.kernel.record_metadata import RelationshipMetadata
from bot.kernel.tables import Table
from bot.kernel.traces import MessageTrace, TraceQuery
from bot.kernel.types import (
    AgentRecord,
    Claim,
    Component,
    Entity,
    Handling,
    LogEntry,
    Memory,
    Relationship,
    Room,
    RoomState,
    Task,
    World,
)
from bot.store._health import StoreHealth
from bot.store._leases import Leases
from bot.store._plugin_tables import PluginTable, TablesReport
from bot.store._roster import Roster
from bot.store._sharing import RoomSharing
from bot.store._values import (
    Forgotten,
    KnowledgeDocument,
    KnowledgeSourceRecord,
    MemoryExport,
    MessageHandling,
    StoredKnowledgeSource,
)

__all__ = [
    "AgentRecords",
    "CacheStore",
    "ClaimStore",
    "EntityStore",
    "JSONValue",
    "KnowledgeStore",
    "LogStore",
    "MaintenanceStore",
    "MemoryStore",
    "PluginTableStore",
    "RoomStore",
    "Store",
    "StoreBackend",
    "StoreScope",
    "TaskStore",
    "TraceStore",
]

#: A JSON value (what ``json.dumps`` writes and ``json.loads`` reads): what the cache stores.
JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]


@runtime_checkable
class StoreScope(Protocol):
    """What every role shares: the agent it is scoped to, the database's health, and
    units of work whose identical reads share one query."""

    @property
    def agent_id(self) -> str: ...
    @property
    def health(self) -> StoreHealth: ...

    # one unit of work (one message): identical reads share one query until a write
    def shared_reads(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class AgentRecords(StoreScope, Protocol):
    """The ``agents`` table: the characters themselves (reads of others' are cross-agent)."""

    # agents
    async def create_agent(self, agent: AgentRecord) -> bool: ...
    async def upsert_agent(self, agent: AgentRecord) -> AgentRecord: ...
    async def get_agent(self, agent_id: str | None = None) -> AgentRecord | None: ...
    async def get_agents(self) -> list[AgentRecord]: ...
    async def update_agent(self, changes: Mapping[str, Any]) -> bool: ...
    async def delete_agent(self) -> bool: ...


@runtime_checkable
class EntityStore(StoreScope, Protocol):
    """Entities, their components and the relationships between them."""

    # entities
    async def create_entities(self, entities: Sequence[Entity]) -> bool: ...
    async def get_entities_by_ids(self, entity_ids: Sequence[str]) -> list[Entity]: ...
    async def get_entity(self, entity_id: str) -> Entity | None: ...
    async def get_entities_by_names(self, names: Sequence[str]) -> list[Entity]: ...
    async def update_entity(self, entity: Entity) -> bool: ...
    async def delete_entity(self, entity_id: str) -> bool: ...
    async def get_entities_for_room(self, room_id: str, include_components: bool = False) -> list[Entity]: ...
    async def search_entities_by_name(self, query: str, limit: int = 10) -> list[Entity]: ...

    # components
    async def create_component(self, component: Component) -> bool: ...
    async def get_component(
        self, entity_id: str, type: str, world_id: str | None = None, source_entity_id: str | None = None
    ) -> Component | None: ...
    async def get_components(
        self, entity_id: str, world_id: str | None = None, source_entity_id: str | None = None
    ) -> list[Component]: ...
    async def update_component(self, component: Component) -> bool: ...
    async def delete_component(self, component_id: str) -> bool: ...

    # relationships
    async def create_relationship(
        self,
        source_entity_id: str,
        target_entity_id: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: RelationshipMetadata | None = None,
    ) -> bool: ...
    async def update_relationship(self, relationship: Relationship) -> bool: ...
    async def get_relationship(self, source_entity_id: str, target_entity_id: str) -> Relationship | None: ...
    async def get_relationships(self, entity_id: str, tags: Sequence[str] | None = None) -> list[Relationship]: ...


@runtime_checkable
class RoomStore(StoreScope, Protocol):
    """Worlds, their rooms, and who takes part in each room."""

    # worlds
    async def create_world(self, world: World) -> str: ...
    async def get_world(self, world_id: str) -> World | None: ...
    async def get_all_worlds(self) -> list[World]: ...
    async def get_worlds_with_settings(self) -> list[World]: ...
    async def update_world(self, world: World) -> bool: ...
    async def remove_world(self, world_id: str) -> bool: ...

    # rooms
    async def create_rooms(self, rooms: Sequence[Room]) -> list[str]: ...
    async def get_room(self, room_id: str) -> Room | None: ...
    async def get_rooms_by_ids(self, room_ids: Sequence[str]) -> list[Room]: ...
    async def get_rooms_by_world(self, world_id: str) -> list[Room]: ...
    async def update_room(self, room: Room) -> bool: ...
    async def delete_room(self, room_id: str) -> bool: ...
    async def get_rooms_for_participant(self, entity_id: str) -> list[str]: ...
    async def get_rooms_for_participants(self, entity_ids: Sequence[str]) -> list[str]: ...

    # participants
    async def add_participant(self, entity_id: str, room_id: str) -> bool: ...
    async def add_participants(self, entity_ids: Sequence[str], room_id: str) -> bool: ...
    async def remove_participant(self, entity_id: str, room_id: str) -> bool: ...
    async def get_participants_for_room(self, room_id: str) -> list[str]: ...
    async def is_room_participant(self, room_id: str, entity_id: str) -> bool: ...
    async def get_participant_state(self, room_id: str, entity_id: str) -> RoomState | None: ...
    async def set_participant_state(self, room_id: str, entity_id: str, state: RoomState | None) -> bool: ...


@runtime_checkable
class MemoryStore(StoreScope, Protocol):
    """Memories and their embeddings: write, read, count, and search by vector or by text."""

    # embedding dimension
    async def ensure_embedding_dimension(self, dim: int) -> None: ...
    async def get_embedding_dimension(self) -> int: ...

    # memories
    async def create_memory(self, memory: Memory, table: str, unique: bool | None = None) -> str: ...
    async def create_memories(
        self, memories: Sequence[Memory], table: str, unique: bool | None = None
    ) -> list[str]: ...
    async def update_memory(
        self,
        memory_id: str,
        *,
        content: Content | None = None,
        metadata: MemoryMetadata | None = None,
        embedding: Sequence[float] | None = None,
    ) -> bool: ...
    async def delete_memory(self, memory_id: str) -> bool: ...
    async def delete_many_memories(self, memory_ids: Sequence[str]) -> int: ...
    async def delete_all_memories(self, room_id: str, table: str) -> int: ...
    async def get_memories(
        self,
        *,
        table: str,
        room_id: str | None = None,
        entity_id: str | None = None,
        world_id: str | None = None,
        count: int | None = None,
        offset: int | None = None,
        unique: bool | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> list[Memory]: ...
    async def get_memory(self, memory_id: str) -> Memory | None: ...
    async def get_memories_by_ids(self, memory_ids: Sequence[str], table: str | None = None) -> list[Memory]: ...
    async def get_memories_by_room_ids(
        self, *, table: str, room_ids: Sequence[str], limit: int | None = None
    ) -> list[Memory]: ...
    async def get_recent_memory_ids(self, *, table: str, room_id: str, limit: int) -> list[str]: ...
    async def count_memories(self, room_id: str, table: str, unique: bool = True) -> int: ...

    # search
    async def search_memories(
        self,
        embedding: Sequence[float],
        table: str,
        *,
        match_threshold: float | None = None,
        count: int = 10,
        unique: bool | None = None,
        room_id: str | None = None,
        world_id: str | None = None,
        entity_id: str | None = None,
    ) -> list[Memory]: ...
    async def search_memories_by_text(
        self,
        query: str,
        table: str,
        *,
        count: int = 10,
        unique: bool | None = None,
        room_id: str | None = None,
        world_id: str | None = None,
        entity_id: str | None = None,
    ) -> list[Memory]: ...


@runtime_checkable
class CacheStore(StoreScope, Protocol):
    """The agent's key-value cache of JSON values."""

    # cache
    async def get_cache(self, key: str) -> JSONValue: ...
    async def set_cache(self, key: str, value: JSONValue, *, expires_at: int | None = None) -> bool: ...
    async def delete_cache(self, key: str) -> bool: ...
    async def prune_cache(self) -> int: ...


@runtime_checkable
class LogStore(StoreScope, Protocol):
    """Log entries, written now or queued for the background writer."""

    # logs
    async def log(self, body: Mapping[str, object], entity_id: str, room_id: str, type: str) -> str: ...
    def queue_log(self, body: Mapping[str, object], entity_id: str, room_id: str, type: str) -> str: ...
    async def get_logs(
        self,
        *,
        entity_id: str | None = None,
        room_id: str | None = None,
        type: str | None = None,
        count: int = 10,
        offset: int = 0,
    ) -> list[LogEntry]: ...
    async def delete_log(self, log_id: str) -> bool: ...
    async def prune_logs(self, before: int) -> int: ...


@runtime_checkable
class TraceStore(StoreScope, Protocol):
    """How each message the agent heard ended, and why (``troupe why``): one trace per message."""

    # message traces
    async def record_trace(self, trace: MessageTrace) -> bool: ...
    async def get_trace(self, message_id: str) -> MessageTrace | None: ...
    async def get_traces(
        self,
        *,
        room_id: str | None = None,
        entity_id: str | None = None,
        status: Status | None = None,
        limit: int = 20,
    ) -> list[MessageTrace]: ...
    async def find_traces(self, query: TraceQuery, *, limit: int = 20) -> list[MessageTrace]: ...
    async def prune_traces(self, before: int) -> int: ...


@runtime_checkable
class TaskStore(StoreScope, Protocol):
    """The agent's stored tasks."""

    # tasks
    async def create_task(self, task: Task) -> str: ...
    async def get_tasks(
        self,
        *,
        room_id: str | None = None,
        tags: Sequence[str] | None = None,
        entity_id: str | None = None,
    ) -> list[Task]: ...
    async def get_task(self, task_id: str) -> Task | None: ...
    async def get_tasks_by_name(self, name: str) -> list[Task]: ...
    async def update_task(self, task_id: str, changes: Mapping[str, Any]) -> bool: ...
    async def delete_task(self, task_id: str) -> bool: ...


@runtime_checkable
class ClaimStore(StoreScope, Protocol):
    """Exactly once: claims on each platform message's answer, and the inbox of received events."""

    # exactly once: where the answer to each platform message stands
    async def claim_message(
        self, memory_id: str, room_id: str, created_at: int, *, retries: int = 1, claimant: str = ""
    ) -> Claim: ...
    async def mark_message(
        self, memory_id: str, status: Handling, outcome: str | None = None, *, claimant: str = ""
    ) -> bool: ...
    async def expire_message(self, memory_id: str) -> bool: ...
    async def clock_ms(self) -> int: ...
    async def get_message_handling(self, memory_id: str) -> MessageHandling | None: ...
    async def release_message(self, memory_id: str, *, claimant: str = "") -> bool: ...
    async def unfinished_messages(self, *, idle_before: int | None = None) -> list[tuple[str, int, int]]: ...
    async def prune_handled(self, before: int) -> int: ...
    async def inbox_put(self, source: str, event_id: str, payload: str) -> None: ...
    async def inbox_done(self, source: str, event_id: str) -> None: ...
    async def inbox_pending(self, source: str) -> list[tuple[str, str, int]]: ...


@runtime_checkable
class MaintenanceStore(StoreScope, Protocol):
    """Retention (compaction), inspection and export, and forgetting."""

    # retention: compaction, inspection, forgetting
    async def retention_counts(self, table: str, *, before: int | None = None) -> dict[str, tuple[int, int]]: ...
    async def get_oldest_memories(self, table: str, room_id: str, count: int) -> list[Memory]: ...
    async def compact_memories(self, summary: Memory, table: str, replaced_ids: Sequence[str]) -> int: ...
    async def count_memories_by_table(self) -> dict[str, int]: ...
    async def get_rooms_with_counts(self) -> list[tuple[Room, int]]: ...
    async def list_memories(
        self,
        *,
        tables: Sequence[str] | None = None,
        room_id: str | None = None,
        entity_id: str | None = None,
        count: int | None = None,
        offset: int | None = None,
    ) -> list[Memory]: ...
    async def search_all_memories_by_text(
        self,
        query: str,
        *,
        tables: Sequence[str] | None = None,
        room_id: str | None = None,
        entity_id: str | None = None,
        count: int = 10,
    ) -> list[Memory]: ...
    async def export_memories(self, *, room_id: str | None = None, entity_id: str | None = None) -> MemoryExport: ...
    async def forget_room(self, room_id: str, *, dry_run: bool = False) -> Forgotten: ...
    async def forget_entity(self, entity_id: str, *, dry_run: bool = False) -> Forgotten: ...
    async def forget_all(self, *, dry_run: bool = False, knowledge: bool = False) -> Forgotten: ...
    async def forget_knowledge(self, *, dry_run: bool = False) -> Forgotten: ...


@runtime_checkable
class KnowledgeStore(StoreScope, Protocol):
    """Knowledge documents and fragments, in the agent's own scope and the shared one."""

    # knowledge: the agent's own scope and the shared one
    @property
    def knowledge_scopes(self) -> tuple[str, str]: ...
    def lock_shared_knowledge(self) -> AbstractAsyncContextManager[None]: ...
    async def get_knowledge_sources(self, *, shared: bool = False) -> dict[str, KnowledgeSourceRecord]: ...
    async def has_knowledge_document(self, document_id: str, *, shared: bool = False) -> bool: ...
    async def put_knowledge_document(
        self, document: KnowledgeDocument | None, source: KnowledgeSourceRecord, *, shared: bool = False
    ) -> None: ...
    async def forget_knowledge_sources(self, sources: Collection[str], *, shared: bool = False) -> int: ...
    async def knowledge_fragments_without_vectors(
        self, dim: int, *, shared: bool = False, limit: int | None = None
    ) -> list[str]: ...
    async def get_knowledge_texts(self, fragment_ids: Sequence[str]) -> dict[str, str]: ...
    async def set_knowledge_vectors(self, vectors: Sequence[tuple[str, Sequence[float]]]) -> int: ...
    async def count_knowledge(self) -> tuple[int, int]: ...
    async def has_knowledge(self) -> bool: ...
    async def list_knowledge_sources(self) -> list[StoredKnowledgeSource]: ...
    async def search_knowledge(
        self, embedding: Sequence[float], *, count: int = 20, match_threshold: float | None = None
    ) -> list[Memory]: ...
    async def search_knowledge_by_text(self, query: str, *, count: int = 20) -> list[Memory]: ...


@runtime_checkable
class PluginTableStore(StoreScope, Protocol):
    """The tables plugins declare (``PluginMeta.tables``): made and migrated, then each one's rows."""

    # plugins' own tables
    async def ensure_plugin_tables(self, plugin: str, tables: Sequence[Table]) -> TablesReport: ...
    def plugin_table(self, plugin: str, table: Table) -> PluginTable: ...


@runtime_checkable
class Store(
    AgentRecords,
    EntityStore,
    RoomStore,
    MemoryStore,
    CacheStore,
    LogStore,
    TraceStore,
    TaskStore,
    ClaimStore,
    MaintenanceStore,
    KnowledgeStore,
    PluginTableStore,
    Protocol,
):
    """Agent-scoped storage: every role at once. Methods are coroutines but for ``queue_log`` and
    the two context managers; see AgentStore for each one's contract. Code that needs one role
    only (its memories, its claims) can ask for that role's protocol instead."""


@runtime_checkable
class StoreBackend(Protocol):
    """The whole database, shared by every agent: open it once (``async with``), then
    :meth:`for_agent` gives each agent its :class:`Store`. See Database for each one's contract."""

    @property
    def path(self) -> str: ...
    @property
    def is_open(self) -> bool: ...
    @property
    def health(self) -> StoreHealth: ...
    async def open(self) -> None: ...
    async def close(self) -> None: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(self, *exc_info: object) -> None: ...
    def for_agent(self, agent_id: str) -> Store: ...
    async def checkpoint(self) -> bool: ...
    @property
    def leases(self) -> Leases: ...
    async def room_sharing(self) -> list[RoomSharing]: ...
    def bus(self, origin: str) -> Bus: ...
    @property
    def roster(self) -> Roster: ...
