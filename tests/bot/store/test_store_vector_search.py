"""Vector search: exact cosine through sqlite-vec, filters, thresholds, dimensions, hygiene.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bot.store import AgentStore, Database
from bot.store._vectors import clean_vector

from .conftest import R2, A, B, R, U, make_memory, seed_agent, vec
from .contract.test_vector_search import cosine


async def test_search_is_exact_cosine_computed_by_sqlite_vec(db: Database, store: AgentStore) -> None:
    assert db.vector_backend == "sqlite-vec"
    rng = random.Random(7)
    vectors = {}
    for n in range(60):
        v = [rng.gauss(0, 1) for _ in range(384)]
        memory_id = await store.create_memory(
            make_memory(f"r{n}", room=R if n % 2 else R2, embedding=v), "messages", unique=True
        )
        vectors[memory_id] = clean_vector(v)
    query = [rng.gauss(0, 1) for _ in range(384)]
    expected = sorted(vectors, key=lambda i: cosine(vectors[i], clean_vector(query)), reverse=True)

    statements: list[str] = []
    assert db._reader is not None
    await db._reader.set_trace_callback(statements.append)
    found = await store.search_memories(query, "messages", count=60)
    await db._reader.set_trace_callback(None)

    assert any("vec_distance_cosine" in s for s in statements)
    assert [m.id for m in found] == expected
    for m in found:
        assert m.similarity == pytest.approx(cosine(vectors[m.id], query), abs=1e-5)
    in_room = await store.search_memories(query, "messages", room_id=R, count=10)
    assert [m.id for m in in_room] == [i for i in expected if (await store.get_memory(i)).room_id == R][:10]  # type: ignore[union-attr]


async def test_the_embedding_dimension_is_per_agent_and_persisted(db_path: Path) -> None:
    async with Database(db_path) as db:
        a = await seed_agent(db, A, users=(U,), rooms=(R,))
        await seed_agent(db, B, users=(), rooms=())
        await a.ensure_embedding_dimension(768)
    async with Database(db_path) as db:
        assert await db.for_agent(A).get_embedding_dimension() == 768
        assert await db.for_agent(B).get_embedding_dimension() == 384
        memory_id = await db.for_agent(A).create_memory(make_memory("x", embedding=vec(5, 768)), "facts")
        assert [m.id for m in await db.for_agent(A).search_memories(vec(5, 768), "facts")] == [memory_id]
