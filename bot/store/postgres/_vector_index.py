"""HNSW indexes on ``embeddings``: one partial index per agent, memory table and dimension.

Migration 4 (:data:`OWNER_COLUMNS`) copies onto each ``embeddings`` row the agent and the memory
table of its memory (a trigger fills them on insert; neither changes afterwards), so that an
index can cover exactly the vectors one search looks at::

    CREATE INDEX CONCURRENTLY embeddings_hnsw_<hash> ON embeddings
        USING hnsw ((embedding::vector(1536)) vector_cosine_ops)
        WHERE agent_id = '…' AND type = 'messages' AND dim = 1536

An index scan of it yields that agent's nearest vectors of that table only, so filtering by agent
afterwards loses nothing (pgvector 0.6 has no iterative scan: an index over every agent's vectors
filtered afterwards returns fewer than asked, none at all when the nearest are all another
agent's). :class:`VectorIndexes` builds one in the background once a search has had to compare
``threshold`` vectors exactly (``bot/store/postgres/_search.py`` asks for it); below that, exact
search is about as fast and every write stays cheap. Builds run one at a time per daemon on one
pooled connection, outside any transaction (``CONCURRENTLY``: writes go on meanwhile), under an
advisory lock so that two daemons never build the same index; a build that failed or was
cancelled leaves an invalid index, dropped and built again by the next attempt. pgvector 0.6
indexes at most 2,000 dimensions: 3072-dim vectors are always searched exactly.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from psycopg import sql

from bot.kernel.background import BackgroundTasks
from bot.kernel.errors import StoreError

if TYPE_CHECKING:  # the database holds its indexes
    from bot.store.postgres._database import PostgresDatabase

__all__ = [
    "DEFAULT_BUILD_MEMORY",
    "DEFAULT_INDEX_THRESHOLD",
    "MAX_INDEXED_DIM",
    "OWNER_COLUMNS",
    "IndexKey",
    "VectorIndexes",
]

_log = logging.getLogger(__name__)

#: Migration 4: each vector's agent and memory table, on its row, kept by a trigger.
OWNER_COLUMNS = """
ALTER TABLE embeddings ADD COLUMN agent_id text, ADD COLUMN type text;
UPDATE embeddings e SET agent_id = m.agent_id, type = m.type FROM memories m WHERE m.id = e.memory_id;
-- Nullable: a vector of a missing memory fails on its foreign key, with that constraint's message.
CREATE FUNCTION troupe_embedding_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT m.agent_id, m.type INTO NEW.agent_id, NEW.type FROM memories m WHERE m.id = NEW.memory_id;
    RETURN NEW;
END $$;
CREATE TRIGGER embeddings_owner BEFORE INSERT OR UPDATE OF memory_id ON embeddings
    FOR EACH ROW EXECUTE FUNCTION troupe_embedding_owner();
"""

#: Vectors one agent holds in one table (and dimension) before it gets an index. Measured with
#: 1536 dims on two busy cores (tests/bench/bench_vector_search.py, p50 / p95): exact search
#: 11 / 25 ms at 1,000 vectors, 25 / 37 ms at 2,000, 36 / 55 ms at 5,000, 124 / 203 ms at
#: 10,000; the index 6 / 12, 7 / 11, 10 / 15 and 21 / 35 ms. Past ~1,000 exact search misses
#: the 20 ms target; below it an index saves a few ms and makes each write slower (inserts
#: into an indexed table ran ~7 times slower).
DEFAULT_INDEX_THRESHOLD = 1_000
#: ``maintenance_work_mem`` of the session that builds an index: a graph that does not fit builds
#: several times slower (100k vectors of 1536 dims need about 1 GB).
DEFAULT_BUILD_MEMORY = "1GB"
#: pgvector 0.6's HNSW indexes hold at most this many dimensions.
MAX_INDEXED_DIM = 2000
# After a failed attempt or another daemon's build, the same index is not tried again for this long.
_RETRY_S = 60.0


@dataclass(frozen=True, slots=True)
class IndexKey:
    """The vectors one index covers: an agent's, of one memory table and dimension."""

    agent_id: str
    table: str
    dim: int

    @property
    def name(self) -> str:
        """The index's name: a hash, as agent ids and table names may be long or any text."""
        digest = hashlib.sha256(f"{self.agent_id}\0{self.table}\0{self.dim}".encode()).hexdigest()
        return f"embeddings_hnsw_{digest[:24]}"

    @property
    def lock(self) -> int:
        """The advisory lock key of its build (a bigint)."""
        digest = hashlib.sha256(f"troupe hnsw {self.name}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    @property
    def indexable(self) -> bool:
        return self.dim <= MAX_INDEXED_DIM

    def cast(self, column: str = "e.embedding") -> str:
        """``column`` cast to the dimension: the indexed expression (``dim`` is an int)."""
        return f"{column}::vector({int(self.dim)})"

    def create_sql(self) -> sql.Composed:
        # The predicate's values are literals: an index predicate cannot take parameters.
        return sql.SQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON embeddings "
            "USING hnsw (({cast}) vector_cosine_ops) WHERE agent_id = {agent} AND type = {table} AND dim = {dim}"
        ).format(
            name=sql.Identifier(self.name),
            cast=sql.SQL(self.cast("embedding")),
            agent=sql.Literal(self.agent_id),
            table=sql.Literal(self.table),
            dim=sql.Literal(int(self.dim)),
        )


class VectorIndexes:
    """The HNSW indexes of one :class:`PostgresDatabase`: which are known to be usable, and their
    builds in the background. ``threshold``: vectors of one key before it gets an index."""

    def __init__(
        self,
        db: PostgresDatabase,
        *,
        threshold: int = DEFAULT_INDEX_THRESHOLD,
        build_memory: str = DEFAULT_BUILD_MEMORY,
    ) -> None:
        if threshold < 1:
            raise ValueError(f"the vector index threshold must be at least 1, not {threshold}")
        self._db = db
        self.threshold = threshold
        self._build_memory = build_memory
        self._ready: set[IndexKey] = set()
        self._not_before: dict[IndexKey, float] = {}
        self._builds: dict[IndexKey, asyncio.Task[bool]] = {}
        self._tasks = BackgroundTasks("troupe:hnsw")  # the builds: cancelled by close()
        # One build at a time per daemon: each holds a pooled connection, and builds of the same
        # table wait on each other in the server anyway.
        self._turn = asyncio.Lock()

    def is_ready(self, key: IndexKey) -> bool:
        """Whether ``key``'s index was seen valid (by this daemon; another's build is seen at the
        next :meth:`want`)."""
        return key in self._ready

    def want(self, key: IndexKey, vectors: int) -> None:
        """A search compared ``vectors`` of ``key`` exactly: past the threshold, make sure its
        index exists, in the background (the search does not wait)."""
        if vectors < self.threshold or not key.indexable or key in self._ready or key in self._builds:
            return
        if self._tasks.closed or asyncio.get_running_loop().time() < self._not_before.get(key, 0.0):
            return
        task = self._tasks.start(self.ensure(key), key.name)
        self._builds[key] = task
        task.add_done_callback(lambda _: self._builds.pop(key, None))

    async def ensure(self, key: IndexKey) -> bool:
        """Find or build ``key``'s index; True once it is valid. False if another daemon is building
        it or the build failed (logged; tried again after a while)."""
        if not key.indexable:
            return False
        async with self._turn:
            if key in self._ready:
                return True
            try:
                built = await self._build(key)
            except StoreError as exc:
                _log.warning(
                    "vector index for agent %s (%s, %d dims) not built: %s", key.agent_id, key.table, key.dim, exc
                )
                built = False
            if built:
                self._ready.add(key)
            else:
                self._not_before[key] = asyncio.get_running_loop().time() + _RETRY_S
            return built

    async def _build(self, key: IndexKey) -> bool:
        async with self._db.session() as conn:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (key.lock,))
            row = await cur.fetchone()
            if not row or not row["got"]:
                _log.debug("vector index %s: another daemon is building it", key.name)
                return False
            try:
                cur = await conn.execute(
                    "SELECT i.indisvalid AS valid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
                    "WHERE c.relname = %s",
                    (key.name,),
                )
                found = await cur.fetchone()
                if found and found["valid"]:
                    return True
                if found:  # an earlier build stopped half-way
                    await conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(key.name)))
                started = asyncio.get_running_loop().time()
                await conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (self._build_memory,))
                try:
                    await conn.execute(key.create_sql())
                finally:
                    await conn.execute("RESET maintenance_work_mem")
                _log.info(
                    "built vector index for agent %s (%s, %d dims) in %.1f s",
                    key.agent_id,
                    key.table,
                    key.dim,
                    asyncio.get_running_loop().time() - started,
                )
                return True
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (key.lock,))

    async def close(self) -> None:
        """Before the pool closes: stop builds under way (each leaves an invalid index, which the
        next attempt replaces)."""
        await self._tasks.close()
