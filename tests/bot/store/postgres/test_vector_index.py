"""Per-agent HNSW indexes on PostgreSQL (bot/store/postgres/_vector_index.py and _search.py).

An agent whose vectors of one table pass the threshold gets an index of its own, built once
however many daemons ask; a search through it returns ``count`` results whatever other agents
hold, agrees with exact search on a small clustered set, and falls back to exact search when the
filters leave fewer than ``count`` among the index's candidates.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from bot.store.postgres import PostgresDatabase
from bot.store.postgres._store import PgAgentStore
from bot.store.postgres._vector_index import IndexKey

from ..conftest import make_memory, vec
from .test_memories_search import A, B, cosine, room, seeded, unit, user

THRESHOLD = 50
DIM = 384


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PostgresDatabase]:
    # One connection: the searches and the statistics read below share a server backend.
    async with PostgresDatabase(postgres_url, max_connections=1, vector_index_threshold=THRESHOLD) as database:
        yield database


async def hnsw_indexes(db: PostgresDatabase) -> list[dict[str, object]]:
    """The HNSW indexes on embeddings: name, definition, whether valid, scans so far."""
    return await db.fetchall(
        "SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition, i.indisvalid AS valid, "
        "coalesce(s.idx_scan, 0) AS scans FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_am a ON a.oid = c.relam LEFT JOIN pg_stat_user_indexes s ON s.indexrelid = i.indexrelid "
        "WHERE i.indrelid = 'embeddings'::regclass AND a.amname = 'hnsw' ORDER BY c.relname"
    )


async def index_scans(db: PostgresDatabase, key: IndexKey) -> int:
    """How often ``key``'s index was scanned, searches of ``db``'s (one) connection included: a
    backend publishes its counts once idle, at most once a second unless told to now."""
    await db.execute("SELECT pg_stat_force_next_flush()")
    row = await db.fetchone(
        "SELECT coalesce(idx_scan, 0) AS scans FROM pg_stat_user_indexes WHERE indexrelname = %s", (key.name,)
    )
    return int(row["scans"]) if row else 0


def cluster(rng: random.Random, centre: list[float], spread: float) -> list[float]:
    return unit([c + rng.gauss(0, spread) for c in centre])


async def write(store: PgAgentStore, agent: str, vectors: dict[str, list[float]], *, in_room: str = "") -> None:
    memories = [
        make_memory(i, id=i, room=in_room or room(agent), entity=user(agent), embedding=v) for i, v in vectors.items()
    ]
    await store.create_memories(memories, "facts", unique=True)


def exact(vectors: dict[str, list[float]], query: list[float], count: int) -> list[str]:
    return sorted(vectors, key=lambda i: cosine(vectors[i], query), reverse=True)[:count]


async def wait_for_index(db: PostgresDatabase, key: IndexKey) -> None:
    async with asyncio.timeout(30):
        while not db.vector_indexes.is_ready(key):
            await asyncio.sleep(0.05)


async def test_a_search_that_compares_more_vectors_than_the_threshold_builds_the_agents_index_in_the_background(
    db: PostgresDatabase,
) -> None:
    mine, theirs = await seeded(db, A), await seeded(db, B)
    rng = random.Random(1)
    await write(mine, A, {f"a{n}": unit([rng.gauss(0, 1) for _ in range(DIM)]) for n in range(THRESHOLD)})
    await write(theirs, B, {f"b{n}": unit([rng.gauss(0, 1) for _ in range(DIM)]) for n in range(THRESHOLD - 1)})

    assert len(await mine.search_memories(vec(0), "facts", count=5)) == 5
    assert len(await theirs.search_memories(vec(0), "facts", count=5)) == 5
    await wait_for_index(db, IndexKey(A, "facts", DIM))

    (index,) = await hnsw_indexes(db)  # B, below the threshold, has none
    assert index["name"] == IndexKey(A, "facts", DIM).name and index["valid"] is True
    assert "((embedding)::vector(384)) vector_cosine_ops" in str(index["definition"])
    assert f"(agent_id = '{A}'::text) AND (type = 'facts'::text) AND (dim = {DIM})" in str(index["definition"])
    assert not db.vector_indexes.is_ready(IndexKey(B, "facts", DIM))


async def test_two_daemons_asking_for_the_same_index_at_once_build_it_once(
    postgres_url: str, db: PostgresDatabase
) -> None:
    store = await seeded(db, A)
    rng = random.Random(2)
    await write(store, A, {f"a{n}": unit([rng.gauss(0, 1) for _ in range(DIM)]) for n in range(200)})
    key = IndexKey(A, "facts", DIM)
    async with PostgresDatabase(postgres_url, vector_index_threshold=THRESHOLD) as other:
        built = await asyncio.gather(db.vector_indexes.ensure(key), other.vector_indexes.ensure(key))
        assert True in built  # the other found it building (False) or built (True)
        assert [i["name"] for i in await hnsw_indexes(db)] == [key.name]
        # Whichever did not build it finds it there when it asks again.
        assert await other.vector_indexes.ensure(key) is True
        assert await db.vector_indexes.ensure(key) is True


async def test_an_indexed_search_returns_count_when_another_agents_vectors_are_all_nearer(
    db: PostgresDatabase,
) -> None:
    mine, theirs = await seeded(db, A), await seeded(db, B)
    rng = random.Random(17)
    query = unit([rng.gauss(0, 1) for _ in range(DIM)])
    near = {f"b{n}": cluster(rng, query, 0.01) for n in range(300)}
    own = {
        f"a{n}": cluster(rng, query, 0.08) if n % 2 else unit([rng.gauss(0, 1) for _ in range(DIM)])
        for n in range(1000)
    }
    await write(theirs, B, near)
    await write(mine, A, own)
    for agent in (A, B):
        assert await db.vector_indexes.ensure(IndexKey(agent, "facts", DIM)) is True
    await db.execute("ANALYZE")
    key = IndexKey(A, "facts", DIM)
    before = await index_scans(db, key)

    found = await mine.search_memories(query, "facts", count=10)

    expected = exact(own, query, 10)
    assert [m.id for m in found] == expected
    assert [m.similarity for m in found] == pytest.approx([cosine(own[i], query) for i in expected], abs=1e-5)
    assert found[0].embedding == pytest.approx(own[expected[0]], abs=1e-6)
    assert await index_scans(db, key) > before  # answered by A's own index
    assert len(await theirs.search_memories(query, "facts", count=25)) == 25


async def test_filters_that_leave_fewer_than_count_among_the_index_candidates_fall_back_to_exact(
    db: PostgresDatabase,
) -> None:
    store = await seeded(db, A)
    await db.execute("INSERT INTO rooms (id, agent_id, source, type) VALUES ('far', %s, 'discord', 'GROUP')", (A,))
    rng = random.Random(3)
    query = unit([rng.gauss(0, 1) for _ in range(DIM)])
    # 1000 vectors near the query in the agent's room; 5 far from it in another room: the index's
    # 100 candidates are all from the first room.
    await write(store, A, {f"near{n}": cluster(rng, query, 0.02) for n in range(1000)})
    far = {f"far{n}": unit([rng.gauss(0, 1) for _ in range(DIM)]) for n in range(5)}
    await write(store, A, far, in_room="far")
    key = IndexKey(A, "facts", DIM)
    assert await db.vector_indexes.ensure(key) is True
    await db.execute("ANALYZE")
    before = await index_scans(db, key)

    found = await store.search_memories(query, "facts", count=3, room_id="far")

    assert await index_scans(db, key) > before  # the index was asked first
    assert [m.id for m in found] == exact(far, query, 3)
    assert [m.id for m in await store.search_memories(query, "facts", count=10, room_id="far")] == exact(far, query, 5)


async def test_an_indexed_search_finds_what_exact_search_finds_on_a_small_clustered_set(db: PostgresDatabase) -> None:
    store = await seeded(db, A)
    rng = random.Random(4)
    centres = [unit([rng.gauss(0, 1) for _ in range(DIM)]) for _ in range(20)]
    vectors = {f"m{n}": cluster(rng, centres[n % 20], 0.05) for n in range(1000)}
    await write(store, A, vectors)
    queries = [cluster(rng, centres[q % 20], 0.05) for q in range(40)]
    exact_hits = [await store.search_memories(q, "facts", count=10) for q in queries]
    exact_found = [[m.id for m in hits] for hits in exact_hits]
    assert exact_found == [exact(vectors, q, 10) for q in queries]
    key = IndexKey(A, "facts", DIM)
    assert await db.vector_indexes.ensure(key) is True
    await db.execute("ANALYZE")
    before = await index_scans(db, key)

    indexed_hits = [await store.search_memories(q, "facts", count=10) for q in queries]

    assert await index_scans(db, key) >= before + len(queries)
    assert [[m.id for m in hits] for hits in indexed_hits] == exact_found  # recall 1.0 at this size
    # The same similarities, and each winner's vector, as the exact search gives them.
    for by_index, by_scan in zip(indexed_hits, exact_hits, strict=True):
        assert [round(m.similarity or 0, 6) for m in by_index] == [round(m.similarity or 0, 6) for m in by_scan]
        assert [m.embedding for m in by_index] == [m.embedding for m in by_scan]


async def test_an_index_left_invalid_by_a_stopped_build_is_built_again(postgres_url: str, db: PostgresDatabase) -> None:
    store = await seeded(db, A)
    rng = random.Random(5)
    await write(store, A, {f"a{n}": unit([rng.gauss(0, 1) for _ in range(DIM)]) for n in range(100)})
    key = IndexKey(A, "facts", DIM)
    assert await db.vector_indexes.ensure(key) is True
    # What a build cancelled half-way leaves behind (pgserver's user may write the catalog).
    await db.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", (key.name,))

    async with PostgresDatabase(postgres_url) as other_daemon:
        assert await other_daemon.vector_indexes.ensure(key) is True

    assert [(i["name"], i["valid"]) for i in await hnsw_indexes(db)] == [(key.name, True)]


async def test_vectors_of_more_than_2000_dimensions_get_no_index_and_are_searched_exactly(
    db: PostgresDatabase,
) -> None:
    store = await seeded(db, A)
    await store.ensure_embedding_dimension(3072)
    rng = random.Random(6)
    vectors = {f"a{n}": unit([rng.gauss(0, 1) for _ in range(3072)]) for n in range(THRESHOLD + 10)}
    await write(store, A, vectors)
    query = unit([rng.gauss(0, 1) for _ in range(3072)])

    assert [m.id for m in await store.search_memories(query, "facts", count=5)] == exact(vectors, query, 5)

    assert await db.vector_indexes.ensure(IndexKey(A, "facts", 3072)) is False
    assert await hnsw_indexes(db) == []


async def test_each_vector_carries_its_memorys_agent_and_table(db: PostgresDatabase) -> None:
    mine, theirs = await seeded(db, A), await seeded(db, B)
    await mine.create_memory(make_memory("a", id="ma", room=room(A), entity=user(A), embedding=vec(0)), "facts")
    await theirs.create_memory(make_memory("b", id="mb", room=room(B), entity=user(B), embedding=vec(1)), "messages")
    assert await mine.update_memory("ma", embedding=vec(2)) is True

    rows = await db.fetchall("SELECT memory_id, agent_id, type FROM embeddings ORDER BY memory_id")

    assert [(r["memory_id"], r["agent_id"], r["type"]) for r in rows] == [("ma", A, "facts"), ("mb", B, "messages")]


async def test_a_background_build_that_fails_unexpectedly_is_logged_with_the_index_it_was_for(
    db: PostgresDatabase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = IndexKey(A, "facts", DIM)

    async def broken(key: IndexKey) -> bool:
        raise RuntimeError("a bug in the build")

    monkeypatch.setattr(db.vector_indexes, "_build", broken)
    db.vector_indexes.want(key, THRESHOLD)
    async with asyncio.timeout(60):
        while f"{key.name} failed" not in caplog.text:
            await asyncio.sleep(0.01)

    assert "RuntimeError: a bug in the build" in caplog.text
    assert not db.vector_indexes.is_ready(key)


async def test_asking_for_an_index_after_the_database_closed_starts_no_build(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    database = PostgresDatabase(postgres_url, vector_index_threshold=THRESHOLD)
    await database.open()
    await database.close()

    database.vector_indexes.want(IndexKey(A, "facts", DIM), THRESHOLD)  # no error
    await asyncio.sleep(0.1)  # a build started now would have tried the closed pool by then

    assert "vector index" not in caplog.text
