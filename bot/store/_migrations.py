"""Versioned schema migrations, tracked in ``PRAGMA user_version``.

Each migration runs in its own ``BEGIN IMMEDIATE`` transaction together with the version bump, so
a crash leaves the file at the previous version, never half-migrated; two processes opening a
fresh file at once serialise on the write lock and the second finds nothing left to do.
Migrations are append-only: never edit one that has shipped, add the next number instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import aiosqlite

from bot.kernel.errors import SchemaVersionError
from bot.store._connect import begin_immediate
from bot.store._values import SHARED_KNOWLEDGE_ID

__all__ = ["MIGRATIONS", "Migration", "SCHEMA_VERSION", "migrate", "read_version"]

_log = logging.getLogger(__name__)

# Milliseconds since the epoch. Not unixepoch('subsec'): it is NULL before SQLite 3.42.
_NOW_MS = "(CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))"


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema: statements run in order inside one transaction."""

    version: int
    description: str
    statements: tuple[str, ...]


def _sql(*statements: str) -> tuple[str, ...]:
    return tuple(s.replace("NOW_MS", _NOW_MS) for s in statements)


# Deviations from elizaOS's SQL schema, all deliberate:
# - memories has ``seq INTEGER PRIMARY KEY`` and ``id TEXT NOT NULL UNIQUE``: the FTS index keys on
#   the rowid, and only an INTEGER PRIMARY KEY alias keeps rowids stable across VACUUM.
# - idx_memories_agent_type_room (agent_id, type, room_id, created_at) replaces (type, room_id):
#   every query is agent-scoped, a search's room filter must beat the agent-only index even
#   before ANALYZE has run, and "newest messages of a room" then reads in index order.
# - No separate idx_embedding_memory: UNIQUE(memory_id) already creates that index.
# - meta(key, value) holds per-agent settings of the store (the embedding dimension).
_V1 = _sql(
    """CREATE TABLE agents (
        id               TEXT PRIMARY KEY,
        enabled          INTEGER NOT NULL DEFAULT 1,
        owner_id         TEXT,
        created_at       INTEGER NOT NULL DEFAULT NOW_MS,
        updated_at       INTEGER NOT NULL DEFAULT NOW_MS,
        name             TEXT NOT NULL,
        username         TEXT,
        system           TEXT DEFAULT '',
        bio              TEXT DEFAULT '[]',
        message_examples TEXT NOT NULL DEFAULT '[]',
        post_examples    TEXT NOT NULL DEFAULT '[]',
        topics           TEXT NOT NULL DEFAULT '[]',
        adjectives       TEXT NOT NULL DEFAULT '[]',
        knowledge        TEXT NOT NULL DEFAULT '[]',
        plugins          TEXT NOT NULL DEFAULT '[]',
        settings         TEXT NOT NULL DEFAULT '{}',
        style            TEXT NOT NULL DEFAULT '{}'
    )""",
    """CREATE TABLE entities (
        id         TEXT PRIMARY KEY,
        agent_id   TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL DEFAULT NOW_MS,
        names      TEXT NOT NULL DEFAULT '[]',
        metadata   TEXT NOT NULL DEFAULT '{}',
        UNIQUE (id, agent_id)
    )""",
    "CREATE INDEX idx_entities_agent ON entities(agent_id)",
    """CREATE TABLE worlds (
        id                TEXT PRIMARY KEY,
        agent_id          TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        name              TEXT NOT NULL,
        metadata          TEXT,
        server_id         TEXT NOT NULL DEFAULT 'default',
        message_server_id TEXT,
        created_at        INTEGER NOT NULL DEFAULT NOW_MS
    )""",
    "CREATE INDEX idx_worlds_agent ON worlds(agent_id)",
    """CREATE TABLE rooms (
        id                TEXT PRIMARY KEY,
        agent_id          TEXT REFERENCES agents(id) ON DELETE CASCADE,
        source            TEXT NOT NULL,
        type              TEXT NOT NULL,
        server_id         TEXT,
        message_server_id TEXT,
        world_id          TEXT,
        name              TEXT,
        metadata          TEXT,
        channel_id        TEXT,
        created_at        INTEGER NOT NULL DEFAULT NOW_MS
    )""",
    "CREATE INDEX idx_rooms_world ON rooms(world_id)",
    "CREATE INDEX idx_rooms_agent ON rooms(agent_id)",
    """CREATE TABLE participants (
        id         TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL DEFAULT NOW_MS,
        entity_id  TEXT REFERENCES entities(id) ON DELETE CASCADE,
        room_id    TEXT REFERENCES rooms(id)    ON DELETE CASCADE,
        agent_id   TEXT REFERENCES agents(id)   ON DELETE CASCADE,
        room_state TEXT CHECK (room_state IS NULL OR room_state IN ('FOLLOWED','MUTED')),
        UNIQUE (entity_id, room_id, agent_id)
    )""",
    "CREATE INDEX idx_participants_user ON participants(entity_id)",
    "CREATE INDEX idx_participants_room ON participants(room_id)",
    """CREATE TABLE memories (
        seq        INTEGER PRIMARY KEY,
        id         TEXT NOT NULL UNIQUE,
        type       TEXT NOT NULL,
        created_at INTEGER NOT NULL DEFAULT NOW_MS,
        content    TEXT NOT NULL,
        entity_id  TEXT REFERENCES entities(id) ON DELETE CASCADE,
        agent_id   TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        room_id    TEXT REFERENCES rooms(id) ON DELETE CASCADE,
        world_id   TEXT,
        is_unique  INTEGER NOT NULL DEFAULT 1,
        metadata   TEXT NOT NULL DEFAULT '{}',
        CHECK (json_extract(metadata,'$.type') IS NOT 'fragment'
               OR (json_extract(metadata,'$.documentId') IS NOT NULL
                   AND json_extract(metadata,'$.position') IS NOT NULL)),
        CHECK (json_extract(metadata,'$.type') IS NOT 'document'
               OR json_extract(metadata,'$.timestamp') IS NOT NULL)
    )""",
    "CREATE INDEX idx_memories_agent_type_room ON memories(agent_id, type, room_id, created_at)",
    "CREATE INDEX idx_memories_world_id ON memories(world_id)",
    "CREATE INDEX idx_memories_agent_type_time ON memories(agent_id, type, created_at DESC)",
    "CREATE INDEX idx_memories_entity ON memories(entity_id)",
    "CREATE INDEX idx_memories_metadata_type ON memories(json_extract(metadata,'$.type'))",
    "CREATE INDEX idx_memories_document_id ON memories(json_extract(metadata,'$.documentId'))",
    """CREATE INDEX idx_fragments_order
        ON memories(json_extract(metadata,'$.documentId'), json_extract(metadata,'$.position'))""",
    """CREATE TABLE embeddings (
        id         TEXT PRIMARY KEY,
        memory_id  TEXT NOT NULL UNIQUE REFERENCES memories(id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL DEFAULT NOW_MS,
        dim_384  BLOB CHECK (dim_384  IS NULL OR length(dim_384)  = 1536),
        dim_512  BLOB CHECK (dim_512  IS NULL OR length(dim_512)  = 2048),
        dim_768  BLOB CHECK (dim_768  IS NULL OR length(dim_768)  = 3072),
        dim_1024 BLOB CHECK (dim_1024 IS NULL OR length(dim_1024) = 4096),
        dim_1536 BLOB CHECK (dim_1536 IS NULL OR length(dim_1536) = 6144),
        dim_3072 BLOB CHECK (dim_3072 IS NULL OR length(dim_3072) = 12288)
    )""",
    """CREATE TABLE relationships (
        id               TEXT PRIMARY KEY,
        created_at       INTEGER NOT NULL DEFAULT NOW_MS,
        source_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        target_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        agent_id         TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        tags             TEXT NOT NULL DEFAULT '[]',
        metadata         TEXT NOT NULL DEFAULT '{}',
        UNIQUE (source_entity_id, target_entity_id, agent_id)
    )""",
    "CREATE INDEX idx_relationships_users ON relationships(source_entity_id, target_entity_id)",
    "CREATE INDEX idx_relationships_target ON relationships(target_entity_id)",
    """CREATE TABLE components (
        id               TEXT PRIMARY KEY,
        entity_id        TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        agent_id         TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        room_id          TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        world_id         TEXT,
        source_entity_id TEXT REFERENCES entities(id) ON DELETE CASCADE,
        type             TEXT NOT NULL,
        data             TEXT NOT NULL DEFAULT '{}',
        created_at       INTEGER NOT NULL DEFAULT NOW_MS
    )""",
    "CREATE INDEX idx_components_entity_type ON components(entity_id, type)",
    "CREATE INDEX idx_components_source ON components(source_entity_id)",
    """CREATE TABLE cache (
        key        TEXT NOT NULL,
        agent_id   TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        value      TEXT NOT NULL,
        created_at INTEGER NOT NULL DEFAULT NOW_MS,
        expires_at INTEGER,
        PRIMARY KEY (key, agent_id)
    )""",
    """CREATE TABLE logs (
        id         TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL DEFAULT NOW_MS,
        entity_id  TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        body       TEXT NOT NULL,
        type       TEXT NOT NULL,
        room_id    TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE
    )""",
    "CREATE INDEX idx_logs_type_created ON logs(type, created_at)",
    "CREATE INDEX idx_logs_room_created ON logs(room_id, created_at)",
    "CREATE INDEX idx_logs_entity ON logs(entity_id)",
    """CREATE TABLE tasks (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        description TEXT,
        room_id     TEXT,
        world_id    TEXT,
        entity_id   TEXT,
        agent_id    TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        tags        TEXT NOT NULL DEFAULT '[]',
        metadata    TEXT NOT NULL DEFAULT '{}',
        created_at  INTEGER NOT NULL DEFAULT NOW_MS,
        updated_at  INTEGER NOT NULL DEFAULT NOW_MS
    )""",
    "CREATE INDEX idx_tasks_agent_name ON tasks(agent_id, name)",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

# Keyword search over content.text. External content (a view over memories) keeps the text stored
# once; the triggers keep the index in step with every insert, update and delete, including rows
# removed by ON DELETE CASCADE, all inside the writing transaction. 'rebuild' backfills old rows.
_V2 = _sql(
    "CREATE VIEW memories_text AS SELECT seq, json_extract(content, '$.text') AS text FROM memories",
    """CREATE VIRTUAL TABLE memories_fts USING fts5(
        text, content='memories_text', content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, text) VALUES (new.seq, json_extract(new.content, '$.text'));
    END""",
    """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text)
            VALUES ('delete', old.seq, json_extract(old.content, '$.text'));
    END""",
    """CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text)
            VALUES ('delete', old.seq, json_extract(old.content, '$.text'));
        INSERT INTO memories_fts(rowid, text) VALUES (new.seq, json_extract(new.content, '$.text'));
    END""",
    "INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')",
)

# Where each knowledge document came from (bot/store/_knowledge.py): per scope (an agent, or the
# shared-knowledge scope) and per agent whose character lists it, the file's size, mtime and
# content hash as last ingested, so a restart re-reads and re-embeds only what changed.
_V3 = _sql(
    """CREATE TABLE knowledge_sources (
        scope_id     TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        owner_id     TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        source       TEXT NOT NULL,
        document_id  TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        size         INTEGER,
        mtime_ns     INTEGER,
        updated_at   INTEGER NOT NULL DEFAULT NOW_MS,
        PRIMARY KEY (scope_id, owner_id, source)
    ) WITHOUT ROWID""",
    "CREATE INDEX idx_knowledge_sources_document ON knowledge_sources(scope_id, document_id)",
    "CREATE INDEX idx_knowledge_sources_owner ON knowledge_sources(owner_id)",
)

# Exactly once (bot/store/_handling.py): where the answer to each platform message stands.
_V4 = _sql(
    """CREATE TABLE message_handling (
        agent_id   TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        memory_id  TEXT NOT NULL,
        room_id    TEXT NOT NULL,
        status     TEXT NOT NULL,
        attempts   INTEGER NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        outcome    TEXT,
        PRIMARY KEY (agent_id, memory_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX idx_message_handling_status ON message_handling(agent_id, status, created_at)",
    # What a platform delivered and troupe has not finished with, as the platform sent it: a
    # platform that waits for a confirmation (Telegram's getUpdates offset) gets it only once the
    # event is here, so a crash loses nothing; the next start delivers these again.
    """CREATE TABLE inbox (
        agent_id    TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        source      TEXT NOT NULL,
        event_id    TEXT NOT NULL,
        payload     TEXT NOT NULL,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (agent_id, source, event_id)
    ) WITHOUT ROWID""",
)

# KNOWLEDGE_PATH from the environment used to be stored as shared knowledge, seen by every agent
# and never forgotten; which shared items came from it was not recorded. The shared scope is
# emptied (vectors and keyword entries go with its rows): each agent's next sync stores again what
# its character marks shared, and KNOWLEDGE_PATH in its own scope. Costs one re-embedding of
# the truly shared documents.
_V5 = _sql(
    f"DELETE FROM knowledge_sources WHERE scope_id = '{SHARED_KNOWLEDGE_ID}'",
    f"DELETE FROM memories WHERE agent_id = '{SHARED_KNOWLEDGE_ID}'",
)

# A character asked to stay out of a conversation (STOP) keeps to it until named or invited back:
# the state lives with FOLLOWED and MUTED on its participant row. SQLite cannot change a CHECK
# constraint in place, so the table is built again (nothing refers to it) with its rows.
_V6 = _sql(
    """CREATE TABLE participants_v6 (
        id         TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL DEFAULT NOW_MS,
        entity_id  TEXT REFERENCES entities(id) ON DELETE CASCADE,
        room_id    TEXT REFERENCES rooms(id)    ON DELETE CASCADE,
        agent_id   TEXT REFERENCES agents(id)   ON DELETE CASCADE,
        room_state TEXT CHECK (room_state IS NULL OR room_state IN ('FOLLOWED','MUTED','STOPPED')),
        UNIQUE (entity_id, room_id, agent_id)
    )""",
    """INSERT INTO participants_v6 (id, created_at, entity_id, room_id, agent_id, room_state)
        SELECT id, created_at, entity_id, room_id, agent_id, room_state FROM participants""",
    "DROP TABLE participants",
    "ALTER TABLE participants_v6 RENAME TO participants",
    "CREATE INDEX idx_participants_user ON participants(entity_id)",
    "CREATE INDEX idx_participants_room ON participants(room_id)",
)

# Keyword search folds every combining mark, as PostgreSQL's does: FTS5's remove_diacritics only
# knows Latin letters, so "αθηνα" did not find "Αθήνα". The index is fed the text through
# troupe_search_text() (a function every troupe connection registers: bot/store/_connect.py), and
# queries are folded the same way (bot/store/_search.py); the index is built again.
_V7 = _sql(
    "DROP TRIGGER memories_fts_insert",
    "DROP TRIGGER memories_fts_delete",
    "DROP TRIGGER memories_fts_update",
    "DROP VIEW memories_text",
    "CREATE VIEW memories_text AS "
    "SELECT seq, troupe_search_text(json_extract(content, '$.text')) AS text FROM memories",
    """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, text)
            VALUES (new.seq, troupe_search_text(json_extract(new.content, '$.text')));
    END""",
    """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text)
            VALUES ('delete', old.seq, troupe_search_text(json_extract(old.content, '$.text')));
    END""",
    """CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text)
            VALUES ('delete', old.seq, troupe_search_text(json_extract(old.content, '$.text')));
        INSERT INTO memories_fts(rowid, text)
            VALUES (new.seq, troupe_search_text(json_extract(new.content, '$.text')));
    END""",
    "INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')",
)

# Who holds each claim (bot/store/_claims.py): every change of a claim is conditional on it, so a
# deposed daemon's delayed write cannot re-open an answered message. Claims from before: nobody's.
_V8 = _sql("ALTER TABLE message_handling ADD COLUMN claimant TEXT NOT NULL DEFAULT ''")

# Embedding models of any vector length (576, 2560 …): each length without a column of its own is
# kept in one more column, searched exactly among the vectors of the query's length.
_V9 = _sql(
    "ALTER TABLE embeddings ADD COLUMN dim_other BLOB "
    "CHECK (dim_other IS NULL OR (length(dim_other) > 0 AND length(dim_other) % 4 = 0))"
)

# How each message a character heard ended (``troupe why``): one row per (agent, message), pruned
# by retention. Its room and person cascade, as the logs' do.
_V10 = _sql(
    """CREATE TABLE message_traces (
        agent_id   TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        message_id TEXT NOT NULL,
        room_id    TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        entity_id  TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        status     TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        body       TEXT NOT NULL,
        PRIMARY KEY (agent_id, message_id)
    )""",
    "CREATE INDEX idx_message_traces_agent_created ON message_traces(agent_id, created_at)",
    "CREATE INDEX idx_message_traces_room_created ON message_traces(room_id, created_at)",
    "CREATE INDEX idx_message_traces_entity_created ON message_traces(entity_id, created_at)",
)

# The tables plugins declare (bot/store/_plugin_tables.py): which plugin each belongs to, the
# type each of its columns was made with (SQLite's own types do not tell JSON from text), and its
# last declaration (``troupe store copy`` makes the table again in PostgreSQL).
_V11 = _sql(
    """CREATE TABLE plugin_tables (
        name        TEXT PRIMARY KEY,
        plugin      TEXT NOT NULL,
        columns     TEXT NOT NULL,
        declaration TEXT NOT NULL,
        updated_at  INTEGER NOT NULL
    )""",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "core tables", _V1),
    Migration(2, "keyword index over memory text (FTS5)", _V2),
    Migration(3, "knowledge sources", _V3),
    Migration(4, "message handling and inbox (exactly once)", _V4),
    Migration(5, "shared knowledge stored again (KNOWLEDGE_PATH is no longer shared)", _V5),
    Migration(6, "a character asked to stay out of a room stays out (room state STOPPED)", _V6),
    Migration(7, "keyword search folds every accent, not only Latin ones", _V7),
    Migration(8, "the claimant of each message claim (conditional claim changes)", _V8),
    Migration(9, "embeddings of any length (a column for the lengths without one)", _V9),
    Migration(10, "message traces: how each message ended, and why", _V10),
    Migration(11, "the tables plugins declare: whose each is, and its columns' types", _V11),
)

#: The schema version this troupe writes.
SCHEMA_VERSION = MIGRATIONS[-1].version


async def read_version(conn: aiosqlite.Connection) -> int:
    """The schema version recorded in the file (0 for a new file)."""
    async with conn.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


def _too_new(path: str, found: int) -> SchemaVersionError:
    return SchemaVersionError(
        f"database {path} has schema version {found}, but this troupe only knows versions up to "
        f"{SCHEMA_VERSION}: it was written by a newer troupe. Upgrade troupe, or set the database "
        "path to another file."
    )


async def migrate(conn: aiosqlite.Connection, path: str, *, target: int | None = None) -> int:
    """Bring the file behind ``conn`` (autocommit mode) up to ``target``; return the version reached.

    Raises SchemaVersionError if the file is newer than this troupe. ``target`` (default: the
    latest version) exists for tests that build old files.
    """
    if target is None:
        target = SCHEMA_VERSION
    found = await read_version(conn)
    if found > SCHEMA_VERSION:
        raise _too_new(path, found)
    for migration in MIGRATIONS:
        if migration.version > target or migration.version <= found:
            continue
        await begin_immediate(conn)
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
            current = await read_version(conn)
            if current > SCHEMA_VERSION:
                raise _too_new(path, current)
            if current < migration.version:
                for statement in migration.statements:
                    await conn.execute(statement)
                # PRAGMA user_version is part of the transaction: it commits with the DDL or not at all.
                await conn.execute(f"PRAGMA user_version = {migration.version:d}")
                _log.info("migrated %s to schema version %d (%s)", path, migration.version, migration.description)
            await conn.execute("COMMIT")
        except BaseException:
            await conn.execute("ROLLBACK")
            raise
        found = max(found, migration.version)
    return await read_version(conn)
