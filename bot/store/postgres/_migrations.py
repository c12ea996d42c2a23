"""The PostgreSQL schema, as numbered migrations applied in order under an advisory lock.

The tables themselves are in ``_schema``; this module lists the migrations in the order they
apply. A deployment records what it applied in
``troupe_migrations``; a migration never changes once released: a change is a new one.
Daemons starting together wait on the lock, and each then applies only what is missing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import psycopg

from bot.kernel.errors import SchemaVersionError
from bot.store.postgres._bus import SCHEMA as BUS
from bot.store.postgres._leases import SCHEMA as LEASES
from bot.store.postgres._roster import SCHEMA as ROSTER
from bot.store.postgres._schema import TABLES
from bot.store.postgres._vector_index import OWNER_COLUMNS

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]

#: Migration 7: who holds each claim (every change of a claim is conditional on it, see
#: bot/store/_claims.py). Claims from before: nobody's.
CLAIMANT = "ALTER TABLE message_handling ADD COLUMN claimant text NOT NULL DEFAULT '';"

_log = logging.getLogger(__name__)

# One lock for every troupe migration (pg_advisory_xact_lock takes a bigint): "troupe" in ASCII.
_LOCK_KEY = 0x74726F757065

_BASE = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE meta (
    key text PRIMARY KEY,
    value text NOT NULL
);
"""

# A character asked to stay out of a conversation (STOP) keeps to it until named or invited back:
# the state lives with FOLLOWED and MUTED on its participant row.
_STOPPED = """
ALTER TABLE participants DROP CONSTRAINT participants_room_state_check;
ALTER TABLE participants ADD CONSTRAINT participants_room_state_check
    CHECK (room_state IS NULL OR room_state IN ('FOLLOWED', 'MUTED', 'STOPPED'));
"""


# How each message a character heard ended (``troupe why``): one row per (agent, message), pruned
# by retention. Its room and person cascade, as the logs' do.
_TRACES = """
CREATE TABLE message_traces (
    agent_id   text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    message_id text NOT NULL,
    room_id    text NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
    entity_id  text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    status     text NOT NULL,
    created_at bigint NOT NULL,
    body       jsonb NOT NULL,
    PRIMARY KEY (agent_id, message_id)
);
CREATE INDEX idx_message_traces_agent_created ON message_traces(agent_id, created_at);
CREATE INDEX idx_message_traces_room_created ON message_traces(room_id, created_at);
CREATE INDEX idx_message_traces_entity_created ON message_traces(entity_id, created_at);
"""


# The tables plugins declare (bot/store/_plugin_tables.py): which plugin each belongs to, the
# type each of its columns was made with, and its last declaration.
_PLUGIN_TABLES = """
CREATE TABLE plugin_tables (
    name        text PRIMARY KEY,
    plugin      text NOT NULL,
    columns     text NOT NULL,
    declaration text NOT NULL,
    updated_at  bigint NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "base", _BASE),
    Migration(2, "the tables of the store (as SQLite's schema 5)", TABLES),
    Migration(3, "leases: which daemon serves what", LEASES),
    Migration(4, "bus: what one daemon posts for the others", BUS),
    Migration(5, "daemons: the roster troupe status shows", ROSTER),
    Migration(6, "each vector's agent and memory table, for per-agent HNSW indexes", OWNER_COLUMNS),
    Migration(7, "a character asked to stay out of a room stays out (room state STOPPED)", _STOPPED),
    Migration(8, "the claimant of each message claim (conditional claim changes)", CLAIMANT),
    Migration(9, "message traces: how each message ended, and why", _TRACES),
    Migration(10, "the tables plugins declare: whose each is, and its columns' types", _PLUGIN_TABLES),
)

SCHEMA_VERSION = MIGRATIONS[-1].version


async def migrate(conn: psycopg.AsyncConnection[dict[str, Any]]) -> int:
    """Apply what is missing of :data:`MIGRATIONS`, under the advisory lock; the version reached."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS troupe_migrations ("
            "version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        cur = await conn.execute("SELECT coalesce(max(version), 0) AS version FROM troupe_migrations")
        row = await cur.fetchone()
        current = int(row["version"]) if row else 0
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the database has schema version {current}, newer than this troupe's {SCHEMA_VERSION}: "
                "upgrade troupe on this machine"
            )
        for migration in MIGRATIONS:
            if migration.version <= current:
                continue
            await conn.execute(migration.sql.encode())  # several statements: no parameters
            await conn.execute(
                "INSERT INTO troupe_migrations (version, name) VALUES (%s, %s)", (migration.version, migration.name)
            )
            _log.info("applied PostgreSQL migration %d (%s)", migration.version, migration.name)
            current = migration.version
    return current
