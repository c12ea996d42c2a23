"""The tables of the PostgreSQL store: SQLite's (bot/store/_migrations.py), in PostgreSQL's types.

The same tables, columns and scoping as SQLite, so the two backends read alike and ``troupe
store copy`` moves rows one to one. What differs, deliberately:
- timestamps stay ``bigint`` milliseconds since the epoch, as troupe's types carry them;
- JSON columns are ``jsonb``, read back as JSON text (bot/store/_rows.py parses both alike);
- memories, entities, components, worlds, rooms, participants, relationships, logs and tasks
  have ``seq`` (an identity) only to order rows written in the same millisecond, as SQLite's
  rowid does;
- entities keep ``folded_names``, their names NFKC-normalised and casefolded by Python (as SQLite's
  ``casefold()`` does), so a search by name matches alike whatever the server's locale;
- keyword search is a stored ``tsvector`` of the memory's text with a GIN index, where SQLite
  has an FTS5 table kept in step by triggers;
- a vector is one ``vector`` column (pgvector) on embeddings, whatever its dimension.
"""

from __future__ import annotations

__all__ = ["NOW_MS", "TABLES"]

#: The database's clock in ms since the epoch (what daemons whose clocks disagree compare with).
NOW_MS = "(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)"

TABLES = """
CREATE TABLE agents (
    id               text PRIMARY KEY,
    enabled          boolean NOT NULL DEFAULT true,
    owner_id         text,
    created_at       bigint NOT NULL DEFAULT NOW_MS,
    updated_at       bigint NOT NULL DEFAULT NOW_MS,
    name             text NOT NULL,
    username         text,
    system           text DEFAULT '',
    bio              jsonb DEFAULT '[]',
    message_examples jsonb NOT NULL DEFAULT '[]',
    post_examples    jsonb NOT NULL DEFAULT '[]',
    topics           jsonb NOT NULL DEFAULT '[]',
    adjectives       jsonb NOT NULL DEFAULT '[]',
    knowledge        jsonb NOT NULL DEFAULT '[]',
    plugins          jsonb NOT NULL DEFAULT '[]',
    settings         jsonb NOT NULL DEFAULT '{}',
    style            jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE entities (
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    id           text PRIMARY KEY,
    agent_id     text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    created_at   bigint NOT NULL DEFAULT NOW_MS,
    names        jsonb NOT NULL DEFAULT '[]',
    folded_names text[] NOT NULL DEFAULT '{}',
    metadata     jsonb NOT NULL DEFAULT '{}',
    UNIQUE (id, agent_id)
);
CREATE INDEX idx_entities_agent ON entities(agent_id);

CREATE TABLE worlds (
    seq               bigint GENERATED ALWAYS AS IDENTITY,
    id                text PRIMARY KEY,
    agent_id          text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    name              text NOT NULL,
    metadata          jsonb,
    server_id         text NOT NULL DEFAULT 'default',
    message_server_id text,
    created_at        bigint NOT NULL DEFAULT NOW_MS
);
CREATE INDEX idx_worlds_agent ON worlds(agent_id);

CREATE TABLE rooms (
    seq               bigint GENERATED ALWAYS AS IDENTITY,
    id                text PRIMARY KEY,
    agent_id          text REFERENCES agents(id) ON DELETE CASCADE,
    source            text NOT NULL,
    type              text NOT NULL,
    server_id         text,
    message_server_id text,
    world_id          text,
    name              text,
    metadata          jsonb,
    channel_id        text,
    created_at        bigint NOT NULL DEFAULT NOW_MS
);
CREATE INDEX idx_rooms_world ON rooms(world_id);
CREATE INDEX idx_rooms_agent ON rooms(agent_id);

CREATE TABLE participants (
    seq        bigint GENERATED ALWAYS AS IDENTITY,
    id         text PRIMARY KEY,
    created_at bigint NOT NULL DEFAULT NOW_MS,
    entity_id  text REFERENCES entities(id) ON DELETE CASCADE,
    room_id    text REFERENCES rooms(id)    ON DELETE CASCADE,
    agent_id   text REFERENCES agents(id)   ON DELETE CASCADE,
    room_state text CHECK (room_state IS NULL OR room_state IN ('FOLLOWED', 'MUTED')),
    UNIQUE (entity_id, room_id, agent_id)
);
CREATE INDEX idx_participants_user ON participants(entity_id);
CREATE INDEX idx_participants_room ON participants(room_id);

-- Keyword search (bot/store/postgres/_search.py): English stems without stop words (a search for
-- "and" finds "this and that", as FTS5's porter tokenizer does), over the text with diacritics
-- folded and ASCII punctuation as spaces (FTS5's unicode61 with remove_diacritics: "x@y.com" is
-- the words x, y and com, "café" is "cafe"). A tsvector holds at most 1 MB: a text past 200,000
-- characters keeps its words without their positions, from its first 500,000 characters, so that
-- a long document is stored (and found by those words) where it would otherwise be refused.
-- The functions are IMMUTABLE so a stored column can use them.
CREATE TEXT SEARCH DICTIONARY troupe_stem (TEMPLATE = snowball, LANGUAGE = english);
CREATE TEXT SEARCH CONFIGURATION troupe_text (COPY = english);
ALTER TEXT SEARCH CONFIGURATION troupe_text
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH troupe_stem;
CREATE FUNCTION troupe_search_text(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN regexp_replace(regexp_replace(normalize($1, NFD), '[\\u0300-\\u036f]+', '', 'g'),
                          '[!-/:-@\\[-`{-~]+', ' ', 'g');
CREATE FUNCTION troupe_text_vector(text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN $1 IS NULL THEN ''::tsvector
                WHEN length($1) <= 200000 THEN to_tsvector('troupe_text', troupe_search_text($1))
                ELSE strip(to_tsvector('troupe_text', troupe_search_text(left($1, 500000)))) END;

CREATE TABLE memories (
    seq         bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id          text PRIMARY KEY,
    type        text NOT NULL,
    created_at  bigint NOT NULL DEFAULT NOW_MS,
    content     jsonb NOT NULL,
    entity_id   text REFERENCES entities(id) ON DELETE CASCADE,
    agent_id    text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    room_id     text REFERENCES rooms(id) ON DELETE CASCADE,
    world_id    text,
    is_unique   boolean NOT NULL DEFAULT true,
    metadata    jsonb NOT NULL DEFAULT '{}',
    text_search tsvector GENERATED ALWAYS AS (troupe_text_vector(content->>'text')) STORED,
    CHECK (metadata->>'type' IS DISTINCT FROM 'fragment'
           OR (metadata->>'documentId' IS NOT NULL AND metadata->>'position' IS NOT NULL)),
    CHECK (metadata->>'type' IS DISTINCT FROM 'document' OR metadata->>'timestamp' IS NOT NULL)
);
CREATE INDEX idx_memories_agent_type_room ON memories(agent_id, type, room_id, created_at);
CREATE INDEX idx_memories_world_id ON memories(world_id);
CREATE INDEX idx_memories_agent_type_time ON memories(agent_id, type, created_at DESC);
CREATE INDEX idx_memories_entity ON memories(entity_id);
CREATE INDEX idx_memories_metadata_type ON memories((metadata->>'type'));
CREATE INDEX idx_memories_document_id ON memories((metadata->>'documentId'));
CREATE INDEX idx_fragments_order ON memories((metadata->>'documentId'), (metadata->'position'));
CREATE INDEX idx_memories_text_search ON memories USING gin (text_search);

-- One vector column of any dimension (dim): an agent that changes embedding model keeps its old
-- vectors, invisible until it switches back, as SQLite keeps one column per dimension, and a
-- shared knowledge fragment has one vector per dimension its agents use. Migration 4 adds each
-- vector's agent and table, for per-agent HNSW indexes (bot/store/postgres/_vector_index.py).
CREATE TABLE embeddings (
    id         text PRIMARY KEY,
    memory_id  text NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    created_at bigint NOT NULL DEFAULT NOW_MS,
    embedding  vector NOT NULL,
    dim        integer GENERATED ALWAYS AS (vector_dims(embedding)) STORED,
    UNIQUE (memory_id, dim)
);

CREATE TABLE relationships (
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    id               text PRIMARY KEY,
    created_at       bigint NOT NULL DEFAULT NOW_MS,
    source_entity_id text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_entity_id text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    agent_id         text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    tags             jsonb NOT NULL DEFAULT '[]',
    metadata         jsonb NOT NULL DEFAULT '{}',
    UNIQUE (source_entity_id, target_entity_id, agent_id)
);
CREATE INDEX idx_relationships_users ON relationships(source_entity_id, target_entity_id);
CREATE INDEX idx_relationships_target ON relationships(target_entity_id);

CREATE TABLE components (
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    id               text PRIMARY KEY,
    entity_id        text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    agent_id         text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    room_id          text NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
    world_id         text,
    source_entity_id text REFERENCES entities(id) ON DELETE CASCADE,
    type             text NOT NULL,
    data             jsonb NOT NULL DEFAULT '{}',
    created_at       bigint NOT NULL DEFAULT NOW_MS
);
CREATE INDEX idx_components_entity_type ON components(entity_id, type);
CREATE INDEX idx_components_source ON components(source_entity_id);

CREATE TABLE cache (
    key        text NOT NULL,
    agent_id   text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    value      jsonb NOT NULL,
    created_at bigint NOT NULL DEFAULT NOW_MS,
    expires_at bigint,
    PRIMARY KEY (key, agent_id)
);

CREATE TABLE logs (
    seq        bigint GENERATED ALWAYS AS IDENTITY,
    id         text PRIMARY KEY,
    created_at bigint NOT NULL DEFAULT NOW_MS,
    entity_id  text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    body       jsonb NOT NULL,
    type       text NOT NULL,
    room_id    text NOT NULL REFERENCES rooms(id) ON DELETE CASCADE
);
CREATE INDEX idx_logs_type_created ON logs(type, created_at);
CREATE INDEX idx_logs_room_created ON logs(room_id, created_at);
CREATE INDEX idx_logs_entity ON logs(entity_id);

CREATE TABLE tasks (
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    id          text PRIMARY KEY,
    name        text NOT NULL,
    description text,
    room_id     text,
    world_id    text,
    entity_id   text,
    agent_id    text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    tags        jsonb NOT NULL DEFAULT '[]',
    metadata    jsonb NOT NULL DEFAULT '{}',
    created_at  bigint NOT NULL DEFAULT NOW_MS,
    updated_at  bigint NOT NULL DEFAULT NOW_MS
);
CREATE INDEX idx_tasks_agent_name ON tasks(agent_id, name);

CREATE TABLE knowledge_sources (
    scope_id     text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    owner_id     text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    source       text NOT NULL,
    document_id  text NOT NULL,
    content_hash text NOT NULL,
    size         bigint,
    mtime_ns     bigint,
    updated_at   bigint NOT NULL DEFAULT NOW_MS,
    PRIMARY KEY (scope_id, owner_id, source)
);
CREATE INDEX idx_knowledge_sources_document ON knowledge_sources(scope_id, document_id);
CREATE INDEX idx_knowledge_sources_owner ON knowledge_sources(owner_id);

CREATE TABLE message_handling (
    agent_id   text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    memory_id  text NOT NULL,
    room_id    text NOT NULL,
    status     text NOT NULL,
    attempts   integer NOT NULL DEFAULT 1,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    outcome    text,
    PRIMARY KEY (agent_id, memory_id)
);
CREATE INDEX idx_message_handling_status ON message_handling(agent_id, status, created_at);

CREATE TABLE inbox (
    agent_id    text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    source      text NOT NULL,
    event_id    text NOT NULL,
    payload     text NOT NULL,
    received_at bigint NOT NULL,
    PRIMARY KEY (agent_id, source, event_id)
);
""".replace("NOW_MS", NOW_MS)
