"""Storage: one SQLite file (WAL, one writer) shared by every agent, with sqlite-vec and FTS5.

Code outside this package uses the protocols only: ``StoreBackend`` (the database) and ``Store``
(one agent's view of it); ``backend_for`` picks the implementation.

::

    async with backend_for("data/troupe.db") as db:   # a StoreBackend
        store = db.for_agent(agent_id)          # a Store: everything scoped to that agent
        await store.create_memory(memory, "messages")
        hits = await store.search_memories(vector, "messages", room_id=room_id, count=10)
"""

from __future__ import annotations

import os

from bot.kernel.errors import StoreError
from bot.store._copy import CopyReport, copy_store, copy_to_postgres
from bot.store._database import Database
from bot.store._health import CORRUPT_RECOVERY, StoreHealth, StoreState, classify
from bot.store._leases import Lease, LeaseRecord, Leases
from bot.store._memories import DEDUP_THRESHOLD
from bot.store._migrations import SCHEMA_VERSION
from bot.store._people import (
    AmbiguousPerson,
    NoSuchPerson,
    PersonMemory,
    find_person,
    forgotten_lines,
    known_people,
    person_label,
    person_name,
    recall_person,
    speaker_names,
)
from bot.store._plugin_tables import PluginTable, TablesReport
from bot.store._protocol import (
    AgentRecords,
    CacheStore,
    ClaimStore,
    EntityStore,
    JSONValue,
    KnowledgeStore,
    LogStore,
    MaintenanceStore,
    MemoryStore,
    PluginTableStore,
    RoomStore,
    Store,
    StoreBackend,
    StoreScope,
    TaskStore,
    TraceStore,
)
from bot.store._roster import CharacterFile, DaemonEntry, DaemonRecord, Roster, application_name
from bot.store._search import fts_query
from bot.store._sharing import RoomSharing
from bot.store._sqlite import AgentStore
from bot.store._trace_lookup import TraceLookup, look_up_traces, newest_first
from bot.store._urls import is_postgres_url, redacted_url
from bot.store._values import (
    DERIVED_TABLES,
    KNOWLEDGE_TABLES,
    SHARED_KNOWLEDGE_ID,
    Forgotten,
    KnowledgeDocument,
    KnowledgeFragment,
    KnowledgeSourceRecord,
    MemoryExport,
    MessageHandling,
    Participation,
    StoredKnowledgeSource,
)
from bot.store._vectors import DEFAULT_EMBEDDING_DIMENSION, DIMENSION_MAP

__all__ = [
    "AgentRecords",
    "AgentStore",
    "AmbiguousPerson",
    "CORRUPT_RECOVERY",
    "CacheStore",
    "CharacterFile",
    "ClaimStore",
    "CopyReport",
    "DEDUP_THRESHOLD",
    "DEFAULT_EMBEDDING_DIMENSION",
    "DERIVED_TABLES",
    "DIMENSION_MAP",
    "DaemonEntry",
    "DaemonRecord",
    "Database",
    "EntityStore",
    "Forgotten",
    "JSONValue",
    "KNOWLEDGE_TABLES",
    "KnowledgeDocument",
    "KnowledgeFragment",
    "KnowledgeSourceRecord",
    "KnowledgeStore",
    "Lease",
    "LeaseRecord",
    "Leases",
    "LogStore",
    "MaintenanceStore",
    "MemoryExport",
    "MemoryStore",
    "MessageHandling",
    "NoSuchPerson",
    "Participation",
    "PersonMemory",
    "PluginTable",
    "PluginTableStore",
    "RoomSharing",
    "RoomStore",
    "Roster",
    "SCHEMA_VERSION",
    "SHARED_KNOWLEDGE_ID",
    "Store",
    "StoreBackend",
    "StoreHealth",
    "StoreScope",
    "StoreState",
    "StoredKnowledgeSource",
    "TablesReport",
    "TaskStore",
    "TraceLookup",
    "TraceStore",
    "application_name",
    "backend_for",
    "classify",
    "copy_store",
    "copy_to_postgres",
    "find_person",
    "forgotten_lines",
    "fts_query",
    "is_postgres_url",
    "known_people",
    "look_up_traces",
    "newest_first",
    "person_label",
    "person_name",
    "recall_person",
    "redacted_url",
    "speaker_names",
]


def backend_for(location: str | os.PathLike[str], *, name: str | None = None) -> StoreBackend:
    """The storage backend at ``location``, not open yet: PostgreSQL for a ``postgresql://`` URL,
    else SQLite (a file path or ``":memory:"``). ``name`` names PostgreSQL connections (their
    ``application_name``, see :func:`application_name`)."""
    if is_postgres_url(location):
        # Imported only here: psycopg is needed only by troupes on PostgreSQL.
        try:
            from bot.store.postgres import PostgresDatabase
        except ImportError as exc:
            raise StoreError(
                f"a PostgreSQL database needs the PostgreSQL driver, which is not installed ({exc.name}): "
                "pip install 'troupe[postgres]' into the Python that runs troupe"
            ) from None

        return PostgresDatabase(location, application_name=name)
    return Database(location)


# Tracebacks and reprs show the public path (httpx does the same).
for _name in ("AgentStore", "Database", "Store", "StoreBackend"):
    globals()[_name].__module__ = __name__
del _name
