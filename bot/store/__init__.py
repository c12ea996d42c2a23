"""Storage: one SQLite file (WAL, one writer) shared by every agent, with sqlite-vec and FTS5.

::

    async with Database("data/troupe.db") as db:
        store = db.for_agent(agent_id)          # a Store: everything scoped to that agent
        await store.create_memory(memory, "messages")
        hits = await store.search_memories(vector, "messages", room_id=room_id, count=10)
"""

from __future__ import annotations

from bot.store._database import Database
from bot.store._knowledge import SHARED_KNOWLEDGE_ID, KnowledgeDocument, KnowledgeSourceRecord
from bot.store._memories import DEDUP_THRESHOLD, fts_query
from bot.store._migrations import SCHEMA_VERSION
from bot.store._protocol import JSONValue, Store
from bot.store._retention import DERIVED_TABLES, KNOWLEDGE_TABLES, Forgotten, MemoryExport, Participation
from bot.store._sqlite import AgentStore
from bot.store._vectors import DEFAULT_EMBEDDING_DIMENSION, DIMENSION_MAP

__all__ = [
    "AgentStore",
    "DEDUP_THRESHOLD",
    "DEFAULT_EMBEDDING_DIMENSION",
    "DERIVED_TABLES",
    "DIMENSION_MAP",
    "Database",
    "Forgotten",
    "JSONValue",
    "KNOWLEDGE_TABLES",
    "KnowledgeDocument",
    "KnowledgeSourceRecord",
    "MemoryExport",
    "Participation",
    "SCHEMA_VERSION",
    "SHARED_KNOWLEDGE_ID",
    "Store",
    "fts_query",
]

# Tracebacks and reprs show the public path (httpx does the same).
for _name in ("AgentStore", "Database", "Store"):
    globals()[_name].__module__ = __name__
del _name
