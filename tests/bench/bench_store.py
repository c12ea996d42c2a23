"""Benchmark of bot.store: bulk insert, vector search, keyword search, size, memory.

Not a test. Run it from the repository root::

    .venv/bin/python tests/bench/bench_store.py                      # full size: 100k x 1536 dims
    .venv/bin/python tests/bench/bench_store.py --count 2000 --dims 384   # quick smoke run

It fills a fresh database with ``--count`` 'messages' memories with random float32 embeddings,
spread over ``--rooms`` rooms owned round-robin by ``--agents`` agents, through the public API
(``AgentStore.create_memories`` in batches, with ``unique=True`` so the fill skips the per-row
similarity check), then times searches through the public API and prints the results.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.kernel.content import Content, MemoryMetadata, MemoryType
from bot.kernel.ids import string_to_uuid
from bot.kernel.types import AgentRecord, ChannelType, Entity, Memory, Room
from bot.store import AgentStore, Database

T = TypeVar("T")

USERS_PER_AGENT = 50
VOCABULARY = [f"w{i}" for i in range(5000)] + ["blue", "car", "music", "pizza", "weather", "dragon", "tea"]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def random_vector(dims: int, rng: random.Random) -> list[float]:
    r = rng.random
    return [r() - 0.5 for _ in range(dims)]


def random_text(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(6, 20)))


async def timed(samples: list[float], call: Awaitable[T]) -> T:
    """Await ``call`` and append its wall time in ms to ``samples``."""
    t0 = time.perf_counter()
    result = await call
    samples.append((time.perf_counter() - t0) * 1000)
    return result


def report(label: str, samples: list[float]) -> None:
    print(f"    {label:<44} p50 {percentile(samples, 0.5):8.2f} ms   p95 {percentile(samples, 0.95):8.2f} ms")


async def main(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="troupe-bench-"))
    path = workdir / "bench.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)

    print(
        f"bench_store: {args.count} memories x {args.dims} dims, {args.rooms} rooms, {args.agents} agents, "
        f"batch {args.batch}, {args.queries} queries per kind"
    )
    async with Database(path) as db:
        print(f"  SQLite {db.sqlite_version}, sqlite-vec {db.vec_version}, backend {db.vector_backend}, file {path}")
        stores: list[AgentStore] = []
        users: list[list[str]] = []
        for a in range(args.agents):
            agent_id = string_to_uuid(f"bench-agent-{a}")
            store = db.for_agent(agent_id)
            await store.create_agent(AgentRecord(id=agent_id, name=f"agent {a}"))
            await store.ensure_embedding_dimension(args.dims)
            ids = [string_to_uuid(f"{agent_id}:user-{u}") for u in range(USERS_PER_AGENT)]
            await store.create_entities([Entity(id=agent_id, agent_id=agent_id, names=[f"agent {a}"])])
            await store.create_entities(
                [Entity(id=i, agent_id=agent_id, names=[f"user {n}"]) for n, i in enumerate(ids)]
            )
            stores.append(store)
            users.append(ids)
        rooms: list[tuple[int, str]] = []  # (agent index, room id)
        for r in range(args.rooms):
            a = r % args.agents
            room_id = string_to_uuid(f"bench-room-{r}")
            await stores[a].create_rooms([Room(id=room_id, source="bench", type=ChannelType.GROUP, name=f"room {r}")])
            rooms.append((a, room_id))

        # Fill: each batch is split per agent, so each create_memories call is one agent's
        # transaction. Only the create_memories calls are timed, not making up random vectors.
        fill_s = 0.0
        written = 0
        base_ms = 1_700_000_000_000
        while written < args.count:
            n = min(args.batch, args.count - written)
            by_agent: dict[int, list[Memory]] = {}
            for k in range(n):
                a, room_id = rooms[rng.randrange(len(rooms))]
                by_agent.setdefault(a, []).append(
                    Memory(
                        entity_id=rng.choice(users[a]),
                        room_id=room_id,
                        content=Content(text=random_text(rng), source="bench"),
                        embedding=random_vector(args.dims, rng),
                        created_at=base_ms + written + k,
                        metadata=MemoryMetadata(type=MemoryType.MESSAGE),
                    )
                )
            t0 = time.perf_counter()
            for a, batch in by_agent.items():
                await stores[a].create_memories(batch, "messages", unique=True)
            fill_s += time.perf_counter() - t0
            written += n
            if args.progress and written % (args.batch * 10) == 0:
                print(f"  ... {written} written", flush=True)
        print(
            f"  insert (create_memories, {args.batch} per batch split by agent): "
            f"{args.count / fill_s:,.0f} memories/s ({fill_s:.1f} s)"
        )

        await measure(db, stores, users, rooms, args, rng, "right after the fill (the OS is still writing it back)")

    # As after a daemon restart: the WAL is checkpointed and the planner has statistics.
    async with Database(path) as db:
        stores = [db.for_agent(store.agent_id) for store in stores]
        await measure(db, stores, users, rooms, args, rng, "after closing and reopening the database")

    size = sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal", "-shm") if os.path.exists(f"{path}{s}"))
    print(f"  database size: {size / 1e6:,.1f} MB")
    print(f"  peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
    if not args.keep:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        if not args.dir:
            workdir.rmdir()


async def measure(
    db: Database,
    stores: list[AgentStore],
    users: list[list[str]],
    rooms: list[tuple[int, str]],
    args: argparse.Namespace,
    rng: random.Random,
    label: str,
) -> None:
    """Time single inserts with dedup, vector searches (room-filtered and agent-wide) and keyword searches."""
    print(f"  {label}:")
    for a, room_id in rooms[:5]:  # warm-up, not timed
        await stores[a].search_memories(random_vector(args.dims, rng), "messages", room_id=room_id)
    single: list[float] = []
    for _ in range(args.queries):
        a, room_id = rooms[rng.randrange(len(rooms))]
        memory = Memory(
            entity_id=rng.choice(users[a]),
            room_id=room_id,
            content=Content(text=random_text(rng)),
            embedding=random_vector(args.dims, rng),
            metadata=MemoryMetadata(type=MemoryType.MESSAGE),
        )
        await timed(single, stores[a].create_memory(memory, "messages"))
    room_search: list[float] = []
    agent_search: list[float] = []
    keyword: list[float] = []
    for _ in range(args.queries):
        a, room_id = rooms[rng.randrange(len(rooms))]
        q = random_vector(args.dims, rng)
        hits = await timed(room_search, stores[a].search_memories(q, "messages", room_id=room_id, count=10))
        assert 0 < len(hits) <= 10, len(hits)
    for _ in range(args.queries):
        a = rng.randrange(args.agents)
        q = random_vector(args.dims, rng)
        await timed(agent_search, stores[a].search_memories(q, "messages", count=10))
    for _ in range(args.queries):
        a, room_id = rooms[rng.randrange(len(rooms))]
        words = " ".join(rng.choice(VOCABULARY) for _ in range(3))
        await timed(keyword, stores[a].search_memories_by_text(words, "messages", count=10))
    report("create_memory with dedup check (1 row)", single)
    report(f"vector top-10, room filter (~{args.count / args.rooms:,.0f} rows)", room_search)
    report(f"vector top-10, agent only (~{args.count / args.agents:,.0f} rows)", agent_search)
    report("keyword top-10 (FTS5 BM25, 3 words, agent)", keyword)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="memories to insert (default 100000)")
    parser.add_argument("--dims", type=int, default=1536, help="embedding dimension (default 1536)")
    parser.add_argument("--rooms", type=int, default=100, help="rooms, owned round-robin by the agents (default 100)")
    parser.add_argument("--agents", type=int, default=5, help="agents (default 5)")
    parser.add_argument("--batch", type=int, default=1000, help="memories per create_memories call (default 1000)")
    parser.add_argument("--queries", type=int, default=50, help="timed queries of each kind (default 50)")
    parser.add_argument("--seed", type=int, default=1, help="random seed")
    parser.add_argument("--dir", help="directory for the database (default: a new temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the database file afterwards")
    parser.add_argument("--progress", action="store_true", help="print progress while filling")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
