"""The PostgreSQL memories and search: what its design must keep beyond the contract.

Exact per-agent vector search however many nearer vectors other agents hold (pgvector 0.6's HNSW
scan, filtered afterwards, would return fewer), one vector per memory and dimension, and keyword
search that folds text as SQLite's FTS5 does and stores texts too long for one tsvector.
"""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator

import pytest

from bot.kernel.content import Content, MemoryMetadata, MemoryType
from bot.store.postgres import PostgresDatabase
from bot.store.postgres._store import PgAgentStore

from ..conftest import make_memory, vec

A, B = "agent-a", "agent-b"


def room(agent: str) -> str:
    return f"{agent}-room"


def user(agent: str) -> str:
    return f"{agent}-user"


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PostgresDatabase]:
    async with PostgresDatabase(postgres_url) as database:
        yield database


async def seeded(db: PostgresDatabase, agent: str) -> PgAgentStore:
    """An agent with one user in one room, written directly (these tests are about memories)."""
    await db.execute("INSERT INTO agents (id, name) VALUES (%s, %s)", (agent, agent))
    await db.execute(
        "INSERT INTO entities (id, agent_id) VALUES (%s, %s), (%s, %s)", (agent, agent, user(agent), agent)
    )
    await db.execute(
        "INSERT INTO rooms (id, agent_id, source, type) VALUES (%s, %s, 'discord', 'GROUP')", (room(agent), agent)
    )
    return db.for_agent(agent)


def unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in values))
    return [x / norm for x in values]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_an_agents_search_is_exact_when_other_agents_hold_every_nearer_vector(db: PostgresDatabase) -> None:
    mine, theirs = await seeded(db, A), await seeded(db, B)
    rng = random.Random(17)
    query = unit([rng.gauss(0, 1) for _ in range(384)])
    # B's 500 vectors are all closer to the query than any of A's, and A has as many: with an HNSW
    # index on the dimension, the planner picks an index scan of the whole table, which filtered by
    # agent afterwards finds none of A's (seen: [] with the index and the distance written on its
    # expression).
    near = [
        make_memory(f"b{n}", room=room(B), entity=user(B), embedding=[q + rng.gauss(0, 0.01) for q in query])
        for n in range(500)
    ]
    await theirs.create_memories(near, "facts", unique=True)
    own = {
        f"a{n}": [q + rng.gauss(0, 0.08) for q in query] if n % 2 else [rng.gauss(0, 1) for _ in range(384)]
        for n in range(500)
    }
    await mine.create_memories(
        [make_memory(i, id=i, room=room(A), entity=user(A), embedding=v) for i, v in own.items()], "facts", unique=True
    )
    await db.execute("ANALYZE")

    found = await mine.search_memories(query, "facts", count=10)

    expected = sorted(own, key=lambda i: cosine(own[i], query), reverse=True)[:10]
    assert [m.id for m in found] == expected
    assert [m.similarity for m in found] == pytest.approx([cosine(own[i], query) for i in expected], abs=1e-5)
    assert len(await theirs.search_memories(query, "facts", count=25)) == 25


async def test_a_memory_keeps_its_vector_of_each_dimension(db: PostgresDatabase) -> None:
    store = await seeded(db, A)
    memory_id = await store.create_memory(make_memory("both", room=room(A), entity=user(A), embedding=vec(0)), "facts")
    await store.ensure_embedding_dimension(1536)
    assert await store.update_memory(memory_id, embedding=vec(5, 1536)) is True
    got = await store.get_memory(memory_id)
    assert got is not None and got.embedding == vec(5, 1536)

    await store.ensure_embedding_dimension(384)
    got = await store.get_memory(memory_id)
    assert got is not None and got.embedding == vec(0)
    assert [m.id for m in await store.search_memories(vec(0), "facts")] == [memory_id]
    assert await store.update_memory(memory_id, embedding=vec(1)) is True  # replaces the 384 one only
    assert [m.embedding for m in await store.get_memories(table="facts")] == [vec(1)]
    rows = await db.fetchall("SELECT dim FROM embeddings WHERE memory_id = %s ORDER BY dim", (memory_id,))
    assert [r["dim"] for r in rows] == [384, 1536]


async def test_the_active_dimension_is_read_from_the_database_not_a_copy_in_the_process(
    postgres_url: str, db: PostgresDatabase
) -> None:
    store = await seeded(db, A)
    assert await store.get_embedding_dimension() == 384
    async with PostgresDatabase(postgres_url) as other_daemon:
        await other_daemon.for_agent(A).ensure_embedding_dimension(768)
    assert await store.get_embedding_dimension() == 768
    await store.create_memory(make_memory("x", room=room(A), entity=user(A), embedding=vec(0, 768)), "facts")


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("Un café crème, s'il vous plaît", "cafe creme"),
        ("write to bob@example.com today", "example"),
        ("the foo-bar_baz setting", "baz"),
        ("Ångström units", "angstrom"),
    ],
)
async def test_keyword_search_folds_accents_and_punctuation_as_sqlite_does(
    db: PostgresDatabase, text: str, query: str
) -> None:
    store = await seeded(db, A)
    memory_id = await store.create_memory(make_memory(text, room=room(A), entity=user(A)), "messages")
    assert [m.id for m in await store.search_memories_by_text(query, "messages")] == [memory_id]


async def test_a_text_too_long_for_one_tsvector_is_stored_and_found_by_its_words(db: PostgresDatabase) -> None:
    store = await seeded(db, A)
    rng = random.Random(5)
    # ~3.5 MB of distinct words: as positions and lexemes, more than a tsvector's 1 MB.
    words = " ".join(f"{rng.getrandbits(128):032x}" for _ in range(100_000))
    memory_id = await store.create_memory(
        make_memory(
            f"zebra {words}",
            room=room(A),
            entity=user(A),
            metadata=MemoryMetadata(type=MemoryType.DOCUMENT, timestamp=1),
        ),
        "documents",
    )
    assert [m.id for m in await store.search_memories_by_text("zebra", "documents")] == [memory_id]
    got = await store.get_memory(memory_id)
    assert got is not None and (got.content.text or "").endswith(words[-32:])


async def test_a_nul_character_in_a_memory_is_stored_as_the_replacement_character(db: PostgresDatabase) -> None:
    # PostgreSQL's text and jsonb cannot hold U+0000, which a user's message can carry; refusing the
    # whole message would lose it, so the character alone becomes U+FFFD, in keys and values.
    store = await seeded(db, A)
    memory = make_memory(
        "a\x00b",
        room=room(A),
        entity=user(A),
        metadata=MemoryMetadata.from_json({"type": "message", "k\x00": ["\x00"]}),
    )
    memory_id = await store.create_memory(memory, "messages")
    got = await store.get_memory(memory_id)
    assert got is not None and got.content.text == "a\ufffdb" and got.metadata.extra["k�"] == ["\ufffd"]
    assert await store.update_memory(memory_id, content=Content(text="c\x00d \\u0000")) is True
    got = await store.get_memory(memory_id)
    assert got is not None and got.content.to_json() == {
        "text": "c\ufffdd \\u0000"
    }  # an escaped "\u0000" in text stays
