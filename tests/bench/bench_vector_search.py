"""Benchmark: per-agent top-10 vector search, PostgreSQL (HNSW per agent) beside SQLite (exact).

Not a test. Run it from the repository root::

    .venv/bin/python tests/bench/bench_vector_search.py                    # 100k: 10 agents, then 1 agent
    .venv/bin/python tests/bench/bench_vector_search.py --memories 1000000 --agents 10 --data DIR
    .venv/bin/python tests/bench/bench_vector_search.py --memories 2000 --dims 384 --queries 20  # smoke
    # load and index 1M once (an hour), then measure as often as wanted, on a quiet machine:
    .venv/bin/python tests/bench/bench_vector_search.py --memories 1000000 --agents 10 --data DIR --keep --load-only
    .venv/bin/python tests/bench/bench_vector_search.py --memories 1000000 --agents 10 --data DIR --keep --prewarm

Each case (one per ``--agents`` entry) fills a new PostgreSQL database and a new SQLite file with
the SAME ``--memories`` 'messages' memories, spread evenly over that many agents (so with 10
agents at 100k, each holds 10k), then asks ``--queries`` searches through the store's public
``search_memories`` (top 10, no filter), each against one agent in turn (after ``--warm-up``
other searches, untimed), and prints one line per backend and search kind: p50 and p95 latency
and recall@10 against the exact answer (computed here with numpy). PostgreSQL is measured exact first (no index yet), then each agent's HNSW
index is built through the store's own builder (``VectorIndexes.ensure``, timed) and the same
queries are asked again. Writes are measured too: ``--inserts`` memories through
``create_memories`` for one agent without an index and with one.

The data is synthetic but clustered as embeddings are, not uniform noise (on which every
neighbour is about as far as any other and recall means little): a seeded two-level mixture of
gaussians on the unit sphere, ``--topics`` topic centres, 64 subtopics around each (cosine ~0.7
to their topic), and each vector around one subtopic (cosine ~0.85), normalised. Queries are new
vectors drawn from the same mixture. Every agent draws from all topics, so an agent's nearest
neighbours in the whole table are mostly other agents'.

Loading goes straight into the schema's tables through each store's own database object (COPY
for PostgreSQL, executemany for SQLite): this measures search, not loading. PostgreSQL is
pgserver's (started with its data in ``--data``, default a new temporary directory, removed at
the end, and ``--shared-buffers``: its own 128MB would not hold the indexes of 1M vectors), or
the server ``TROUPE_TEST_DATABASE_URL`` names, as it is configured.

``--keep`` (with ``--data``) keeps what was loaded and indexed, in a database named after the
case, and a later run with the same arguments measures the HNSW searches on it without loading
again: PostgreSQL's HNSW search only (no SQLite, no exact search, no inserts: they would change
the kept data). ``--load-only`` stops once the indexes are built. ``--prewarm`` reads the
indexes and the memories into memory before the HNSW searches are timed, as a server that has
been answering for a while holds them (one just started reads each page from disk the first
time: tens of milliseconds a search at 1M).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from bot.kernel.content import Content
from bot.kernel.types import AgentRecord, ChannelType, Entity, Memory, Room
from bot.store import Database, Store
from bot.store.postgres import PostgresDatabase
from bot.store.postgres._vector_index import IndexKey
from tests.bench._common import percentile
from tests.bench._postgres import drop_database, fresh_database, named_database, postgres_server

TABLE = "messages"
SUBTOPICS = 64
ROOMS_PER_AGENT = 20
TOP = 10
# Rows per COPY / executemany batch.
BATCH = 5_000
BASE_MS = 1_700_000_000_000
_TOPIC_SPREAD, _POINT_SPREAD = 1.0, 0.6


#: A float32 matrix, one vector a row.
Vectors = np.ndarray[Any, np.dtype[np.float32]]


@dataclass(frozen=True)
class Mixture:
    """The two-level mixture: subtopic centres (unit vectors) that every draw is made around."""

    centres: Vectors

    @classmethod
    def make(cls, topics: int, dims: int, seed: int) -> Mixture:
        rng = np.random.default_rng(seed)
        tops = _unit(rng.standard_normal((topics, dims), dtype=np.float32))
        subs = np.repeat(tops, SUBTOPICS, axis=0)
        subs += rng.standard_normal(subs.shape, dtype=np.float32) * (_TOPIC_SPREAD / np.sqrt(dims))
        return cls(_unit(subs))

    def draw(self, n: int, rng: np.random.Generator) -> Vectors:
        dims = self.centres.shape[1]
        points = self.centres[rng.integers(0, len(self.centres), n)]
        points += rng.standard_normal(points.shape, dtype=np.float32) * (_POINT_SPREAD / np.sqrt(dims))
        return _unit(points)


def _unit(x: Vectors) -> Vectors:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@dataclass
class Agent:
    """One agent of a case: its queries and their exact answers (its vectors are not kept)."""

    id: str
    user: str
    rooms: list[str]
    queries: list[Vectors]
    truth: list[set[str]]
    warm_up: list[Vectors]


@dataclass
class Figures:
    latencies: list[float]
    recalls: list[float]

    def line(self, label: str) -> str:
        return (
            f"  {label:<40} p50 {percentile(self.latencies, 0.5):8.2f} ms   p95 {percentile(self.latencies, 0.95):8.2f} ms"
            f"   recall@10 {sum(self.recalls) / max(len(self.recalls), 1):.3f}"
        )


def memory_id(agent: str, i: int) -> str:
    return f"{agent}-m{i}"


def make_agent(a: int, size: int, queries: int, mixture: Mixture, seed: int, warm_up: int = 0) -> tuple[Agent, Vectors]:
    """Agent ``a`` and its ``size`` vectors (row i is memory ``memory_id(agent, i)``), with
    ``queries`` queries and their exact top 10 among those vectors, and ``warm_up`` other queries."""
    agent_id = f"bench-agent-{a:03d}"
    rng = np.random.default_rng([seed, a])
    vectors = mixture.draw(size, rng)
    asked = list(mixture.draw(queries, rng))
    truth = []
    for q in asked:
        best = np.argpartition(-(vectors @ q), TOP)[:TOP]
        truth.append({memory_id(agent_id, int(i)) for i in best})
    rooms = [f"{agent_id}-room-{r}" for r in range(ROOMS_PER_AGENT)]
    warm = list(mixture.draw(warm_up, rng))
    return Agent(agent_id, f"{agent_id}-user", rooms, asked, truth, warm), vectors


async def set_up(store: Store, agent: Agent, dims: int) -> None:
    """The agent, its user and rooms, through the store's API."""
    await store.create_agent(AgentRecord(id=agent.id, name=agent.id))
    await store.ensure_embedding_dimension(dims)
    await store.create_entities(
        [
            Entity(id=agent.id, agent_id=agent.id, names=[agent.id]),
            Entity(id=agent.user, agent_id=agent.id, names=["u"]),
        ]
    )
    await store.create_rooms([Room(id=r, source="bench", type=ChannelType.GROUP, name=r) for r in agent.rooms])


def memory_rows(agent: Agent, start: int, stop: int) -> Iterator[tuple[str, str, int, str, str, str]]:
    """(id, created_at, content, entity, agent, room) of the agent's memories ``start:stop``."""
    for i in range(start, stop):
        mid = memory_id(agent.id, i)
        yield mid, TABLE, BASE_MS + i, json.dumps({"text": f"memory {i}"}), agent.id, agent.rooms[i % len(agent.rooms)]


async def load_postgres(db: PostgresDatabase, agent: Agent, vectors: Vectors) -> None:
    async with db.session() as conn:
        cur = conn.cursor()
        for start in range(0, len(vectors), BATCH):
            stop = min(start + BATCH, len(vectors))
            async with conn.transaction():
                async with cur.copy(
                    "COPY memories (id, type, created_at, content, entity_id, agent_id, room_id) FROM STDIN"
                ) as copy:
                    for mid, table, created, content, agent_id, room in memory_rows(agent, start, stop):
                        await copy.write_row((mid, table, created, content, agent.user, agent_id, room))
                async with cur.copy(
                    "COPY embeddings (id, memory_id, created_at, embedding) FROM STDIN WITH (FORMAT BINARY)"
                ) as copy:
                    copy.set_types(["text", "text", "int8", "vector"])
                    for i in range(start, stop):
                        mid = memory_id(agent.id, i)
                        await copy.write_row((f"e-{mid}", mid, BASE_MS + i, vectors[i]))


async def load_sqlite(db: Database, agent: Agent, vectors: Vectors) -> None:
    column = f"dim_{vectors.shape[1]}"
    for start in range(0, len(vectors), BATCH):
        stop = min(start + BATCH, len(vectors))
        memories = [(m, t, c, j, agent.user, a, r) for m, t, c, j, a, r in memory_rows(agent, start, stop)]
        rows = [
            (f"e-{memory_id(agent.id, i)}", memory_id(agent.id, i), BASE_MS + i, vectors[i].tobytes())
            for i in range(start, stop)
        ]

        def write(conn: Any, memories: list[Any] = memories, rows: list[Any] = rows) -> None:
            conn.executemany(
                "INSERT INTO memories (id, type, created_at, content, entity_id, agent_id, room_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                memories,
            )
            conn.executemany(f"INSERT INTO embeddings (id, memory_id, created_at, {column}) VALUES (?, ?, ?, ?)", rows)

        await db.write(write)


async def measure(stores: Sequence[Store], agents: Sequence[Agent], queries: int) -> Figures:
    """``queries`` searches, agent after agent in turn, timed one by one, after the agents'
    warm-up queries (untimed: a server's caches hold what it is asked often)."""
    for agent, store in zip(agents, stores, strict=True):
        for vector in agent.warm_up:
            await store.search_memories(vector.tolist(), TABLE, count=TOP)
    figures = Figures([], [])
    for n in range(queries):
        a = n % len(agents)
        agent, store = agents[a], stores[a]
        q = n // len(agents)
        t0 = time.perf_counter()
        found = await store.search_memories(agent.queries[q].tolist(), TABLE, count=TOP)
        figures.latencies.append((time.perf_counter() - t0) * 1000)
        figures.recalls.append(len({m.id for m in found} & agent.truth[q]) / TOP)
    return figures


async def prewarm(pg: PostgresDatabase) -> str:
    """Read the HNSW indexes and the memories (with their key index) into memory, as a server
    that has been answering for a while holds them: pg_prewarm where the server has it, else
    the files through the operating system (a server this benchmark started, on this machine)."""
    rows = await pg.fetchall(
        "SELECT c.oid::regclass::text AS name, pg_relation_filepath(c.oid) AS path, pg_relation_size(c.oid) AS size "
        "FROM pg_class c WHERE c.relname LIKE 'embeddings_hnsw_%%' OR c.relname IN ('memories', 'memories_pkey')"
    )
    t0 = time.perf_counter()
    total = sum(int(r["size"]) for r in rows)
    try:
        await pg.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        for row in rows:
            await pg.execute("SELECT pg_prewarm(%s::regclass)", (row["name"],))
        how = "pg_prewarm"
    except Exception:  # noqa: BLE001 - no pg_prewarm in this server: read its files instead
        found = await pg.fetchone("SELECT current_setting('data_directory') AS dir")
        assert found is not None
        base = Path(str(found["dir"]))
        paths = [base / str(r["path"]) for r in rows]

        def read_all() -> None:
            for path in paths:
                for segment in [path, *sorted(path.parent.glob(f"{path.name}.[0-9]*"))]:
                    with segment.open("rb") as f:
                        while f.read(1 << 20):
                            pass

        await asyncio.to_thread(read_all)
        how = "their files read through the operating system"
    return f"prewarmed {len(rows)} relations, {total / 1e9:.1f} GB ({how}) in {time.perf_counter() - t0:.0f} s"


async def timed(call: Awaitable[object]) -> float:
    t0 = time.perf_counter()
    await call
    return time.perf_counter() - t0


async def insert_rate(store: Store, agent: Agent, mixture: Mixture, n: int, label: str) -> str:
    """Memories per second through ``create_memories`` (batches of 50, no near-duplicate check)."""
    rng = np.random.default_rng(99)
    vectors = mixture.draw(n, rng)
    memories = [
        Memory(
            id=f"{agent.id}-{label}-{i}",
            entity_id=agent.user,
            room_id=agent.rooms[0],
            content=Content(text=f"new {i}"),
            embedding=vectors[i].tolist(),
        )
        for i in range(n)
    ]
    seconds = 0.0
    for start in range(0, n, 50):
        batch = memories[start : start + 50]
        seconds += await timed(store.create_memories(batch, TABLE, unique=True))
    return f"{n / seconds:8.0f} memories/s"


async def run_case(admin: str, args: argparse.Namespace, n_agents: int, mixture: Mixture, work: Path) -> None:
    queries = max(args.queries, n_agents)
    per_agent = args.memories // n_agents
    print(f"case: {per_agent * n_agents} memories x {args.dims} dims over {n_agents} agents ({per_agent} each)")
    sqlite_path = work / f"bench-{n_agents}.db"
    if args.keep:
        name = f"troupe_bench_vectors_{args.memories}_{n_agents}_{args.dims}_{args.topics}_s{args.seed}"
        url, kept = named_database(admin, name)
    else:
        url, kept = fresh_database(admin), False
    if kept:
        async with PostgresDatabase(url) as pg:
            finished = await _stage(pg) == "indexed"
        if not finished:
            print("  the kept database was not finished: loading it again")
            drop_database(admin, url)
            url, kept = named_database(admin, name)
    # The threshold is out of reach: indexes are built below, when the benchmark says so.
    async with (
        PostgresDatabase(url, vector_index_threshold=10**9) as pg,
        Database(sqlite_path) as lite,
    ):
        agents: list[Agent] = []
        t0 = time.perf_counter()
        for a in range(n_agents):
            # One agent's vectors in memory at a time (1M x 1536 dims would be 6 GB).
            asked, warm = len(range(a, queries, n_agents)), len(range(a, args.warm_up, n_agents))
            agent, vectors = make_agent(a, per_agent, asked, mixture, args.seed, warm)
            if not kept:
                await set_up(pg.for_agent(agent.id), agent, args.dims)
                await load_postgres(pg, agent, vectors)
                if not args.keep:
                    await set_up(lite.for_agent(agent.id), agent, args.dims)
                    await load_sqlite(lite, agent, vectors)
            agents.append(agent)
            del vectors
        pg_stores = [pg.for_agent(a.id) for a in agents]
        lite_stores = [lite.for_agent(a.id) for a in agents]
        if kept:
            print(f"  kept data: the agents' queries drawn again in {time.perf_counter() - t0:.0f} s")
            for agent in agents:
                assert await pg.vector_indexes.ensure(IndexKey(agent.id, TABLE, args.dims)), "a kept index is gone"
        else:
            await pg.execute("VACUUM ANALYZE embeddings")
            await pg.execute("ANALYZE memories")
            print(f"  loaded in {time.perf_counter() - t0:.0f} s")
            if not (args.keep or args.load_only):
                print((await measure(lite_stores, agents, queries)).line("SQLite (exact, sqlite-vec)"))
            if not (args.skip_exact or args.load_only):
                print((await measure(pg_stores, agents, queries)).line("PostgreSQL exact (no index)"))
            inserts = args.inserts and not args.keep
            if inserts:
                rate = await insert_rate(pg_stores[0], agents[0], mixture, args.inserts, "before")
                print(f"  PostgreSQL inserts without an index          {rate}")
                # Gone again before the searches: the agent's answers are computed without them.
                await pg.execute(
                    "DELETE FROM memories WHERE agent_id = %s AND id LIKE %s", (agents[0].id, "%-before-%")
                )
            builds = []
            for agent in agents:
                key = IndexKey(agent.id, TABLE, args.dims)
                builds.append(await timed(pg.vector_indexes.ensure(key)))
                assert pg.vector_indexes.is_ready(key), f"no index was built for {agent.id}"
            print(
                f"  HNSW builds: {len(builds)} x {per_agent} vectors, {sum(builds):.1f} s in all, "
                f"max {max(builds):.1f} s each"
            )
            if args.keep:
                await pg.execute("CREATE TABLE IF NOT EXISTS bench_stage (stage text)")
                await pg.execute("INSERT INTO bench_stage VALUES ('indexed')")
        if not args.load_only:
            if args.prewarm:
                print(f"  {await prewarm(pg)}")
            print((await measure(pg_stores, agents, queries)).line("PostgreSQL HNSW (per-agent index)"))
        if args.inserts and not args.keep and not args.load_only:
            rate = await insert_rate(pg_stores[0], agents[0], mixture, args.inserts, "after")
            print(f"  PostgreSQL inserts with the agent's index    {rate}")
    if args.keep:
        print(f"  kept: database {urlsplit(url).path.lstrip('/')}")
    else:
        drop_database(admin, url)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{sqlite_path}{suffix}").unlink(missing_ok=True)


async def _stage(pg: PostgresDatabase) -> str | None:
    """How far a kept database got: ``indexed`` once loaded and indexed, else None (a database
    left half-way by an earlier run, or a new one)."""
    row = await pg.fetchone("SELECT to_regclass('bench_stage') IS NOT NULL AS there")
    if not row or not row["there"]:
        return None
    return "indexed" if await pg.fetchall("SELECT stage FROM bench_stage") else None


async def main(args: argparse.Namespace) -> None:
    work = Path(args.data) if args.data else Path(tempfile.mkdtemp(prefix="troupe-bench-vectors-"))
    work.mkdir(parents=True, exist_ok=True)
    mixture = Mixture.make(args.topics, args.dims, args.seed)
    print(
        f"bench_vector_search: {args.memories} memories x {args.dims} dims, top {TOP}, {args.queries} queries per "
        f"case, mixture of {args.topics} topics x {SUBTOPICS} subtopics"
    )
    try:
        with postgres_server(work / "postgres", {"shared_buffers": args.shared_buffers}) as admin:
            for n_agents in args.agents:
                await run_case(admin, args, n_agents, mixture, work)
    finally:
        if not args.data:
            shutil.rmtree(work, ignore_errors=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000, help="memories per case, all agents together")
    parser.add_argument(
        "--agents", type=lambda s: [int(x) for x in s.split(",")], default=[10, 1], help="agents per case, e.g. 10,1"
    )
    parser.add_argument("--dims", type=int, default=1536)
    parser.add_argument("--queries", type=int, default=200, help="searches per case and kind")
    parser.add_argument("--warm-up", type=int, default=50, help="other searches before each timed run, untimed")
    parser.add_argument("--topics", type=int, default=256)
    parser.add_argument("--inserts", type=int, default=1000, help="memories written to time inserts (0: skip)")
    parser.add_argument("--skip-exact", action="store_true", help="do not time PostgreSQL's exact search")
    parser.add_argument(
        "--shared-buffers",
        default="4GB",
        help="shared_buffers of the pgserver it starts (default 4GB; 128MB is its own)",
    )
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--data", help="work folder for PostgreSQL and SQLite (default: a temporary one, removed)")
    parser.add_argument(
        "--keep", action="store_true", help="keep the loaded, indexed data for later runs (needs --data)"
    )
    parser.add_argument(
        "--prewarm", action="store_true", help="read the indexes and memories into memory before timing HNSW searches"
    )
    parser.add_argument("--load-only", action="store_true", help="stop once the data is loaded and indexed")
    args = parser.parse_args(argv)
    if args.keep and not args.data:
        parser.error("--keep needs --data (the folder the kept data stays in)")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
