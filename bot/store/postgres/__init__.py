"""The PostgreSQL backend: ``PostgresDatabase`` (a ``StoreBackend``) and its agent-scoped store.

For troupes past one machine: several daemons share one PostgreSQL with the pgvector extension
(``TROUPE_DATABASE_URL=postgresql://…``). It passes the same contract suite as SQLite
(tests/bot/store/contract). psycopg 3 (async) with its connection pool, plain SQL, and numbered
migrations applied under an advisory lock, so daemons starting together migrate once.
"""

from __future__ import annotations

from bot.store._urls import is_postgres_url
from bot.store.postgres._database import PostgresDatabase

__all__ = ["PostgresDatabase", "is_postgres_url"]
