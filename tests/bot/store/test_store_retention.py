"""Retention and forgetting in the store: compaction is all-or-nothing, and forgetting a person,
a room or everything leaves nothing of it behind — not in any table, the vectors, the keyword
index, nor the bytes of the file.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.store import AgentStore, Database, Forgotten
from bot.types import Memory, RoomState

from .conftest import BR, BU, R2, A, R, U, V, W, make_memory, vec
from .contract.test_retention import DM, NAME, SECRET_WORD, _rich_world, before_forget_all, before_forget_room


async def _count(db: Database, sql: str, *params: Any) -> int:
    row = await db.fetchone(sql, params)
    assert row is not None
    return int(row[0])


async def _scan(db: Database, needles: list[str]) -> list[str]:
    """Every place in the database (any table, any column, FTS shadow tables too) holding a needle."""
    hits = []
    tables = [r[0] for r in await db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        for row in await db.fetchall(f'SELECT * FROM "{table}"'):
            for value in row:
                raw = value if isinstance(value, bytes) else str(value).encode()
                hits += [f"{table}: {needle}" for needle in needles if needle.encode() in raw]
    return hits


async def test_compact_memories_swaps_the_batch_for_a_summary_in_one_go(db: Database, store: AgentStore) -> None:
    ids = [
        await store.create_memory(make_memory(f"m{i}", created_at=1000 + i, embedding=vec(i)), "messages")
        for i in range(4)
    ]
    summary = Memory(
        entity_id=A,
        room_id=R,
        content={"text": "They talked about walruses."},
        created_at=1002,
        embedding=vec(9),
        metadata={"entityIds": [U]},
    )
    assert await store.compact_memories(summary, "summaries", ids[:3]) == 3
    left = await store.get_memories(table="messages")
    assert [m.content["text"] for m in left] == ["m3"]
    [stored] = await store.get_memories(table="summaries")
    assert stored.content["text"] == "They talked about walruses." and stored.unique is True
    assert (await store.search_memories(vec(9), "summaries"))[0].id == stored.id
    assert (await store.search_memories_by_text("walruses", "summaries"))[0].id == stored.id
    assert await _count(db, "SELECT count(*) FROM embeddings") == 2  # m3's and the summary's


async def test_forget_entity_leaves_nothing_behind(
    db: Database, db_path: Path, store: AgentStore, store_b: AgentStore
) -> None:
    ids = await _rich_world(db, store)
    await store_b.create_memory(make_memory(f"B's own {SECRET_WORD}", room=BR, entity=BU), "messages")
    texts = [
        f"my {SECRET_WORD} recipe is secret",
        f"{SECRET_WORD} in private",
        "tell me more",
        "a private answer",
        "likes second breakfast",
        "V moved to Bree",
        f"{NAME} gardens",
        "a long talk about potatoes",
        "sam@shire.test",
    ]

    planned = await store.forget_entity(U, dry_run=True)
    assert await store.get_entity(U) is not None and len(await store.list_memories()) == 11  # nothing deleted yet
    done = await store.forget_entity(U)
    assert done == planned
    assert done.memories == {"facts": 3, "messages": 4, "summaries": 1}
    assert done.rows == {
        "cache": 1,
        "components": 2,
        "embeddings": 5,
        "entities": 1,
        "logs": 2,
        "participants": 4,
        "relationships": 2,
        "rooms": 1,
        "tasks": 1,
    }
    assert done.edited == {"components": 1, "memories": 1, "worlds": 1}

    assert await _scan(db, [U, *texts]) == []
    assert await store.search_all_memories_by_text(SECRET_WORD) == []
    # The keyword index only knows rows that exist, and every vector belongs to one.
    assert await _count(db, "SELECT count(*) FROM memories_fts") == await _count(db, "SELECT count(*) FROM memories")
    assert (
        await _count(
            db, "SELECT count(*) FROM embeddings e LEFT JOIN memories m ON m.id = e.memory_id WHERE m.id IS NULL"
        )
        == 0
    )

    # What was not about them stays.
    left = {m.content["text"] for m in await store.list_memories()}
    assert left == {"V greets everyone", "V plays the lute", "V sang a song"}
    [greeting] = await store.get_memories_by_ids([ids["v_group"]])
    assert greeting.content == {"text": "V greets everyone", "mentions": []}
    assert greeting.metadata == {"type": "message"}
    assert [(r.source_entity_id, r.target_entity_id) for r in await store.get_relationships(V)] == [(V, A)]
    assert [c.id for c in await store.get_components(V)] == ["c-v"]
    world = await store.get_world(W)
    assert world is not None and world.metadata == {"ownership": {}, "roles": {V: "NONE"}}
    assert await store.get_cache("unrelated") == {"ok": True}
    assert [t.name for t in await store.get_tasks()] == ["KEEP"]
    assert await store.get_participant_state(R, A) == RoomState.FOLLOWED
    assert [log.body for log in await store.get_logs(room_id=R)] == [{"event": "kept"}]
    # Another agent's memory is its own business.
    assert len(await store_b.get_memories(table="messages")) == 1

    # Nothing of it in the file's bytes either, once the write-ahead log is checkpointed.
    await store_b.forget_all()
    assert await db.checkpoint() is True
    raw = b"".join(p.read_bytes() for p in db_path.parent.iterdir() if p.name.startswith(db_path.name))
    assert SECRET_WORD.encode() not in raw and b"sam@shire.test" not in raw


async def test_forget_room_leaves_no_row_or_text_of_the_room(db: Database, store: AgentStore) -> None:
    await before_forget_room(store)
    done = await store.forget_room(R)
    assert done.rows == {"cache": 1, "embeddings": 1, "logs": 1, "participants": 3, "rooms": 1, "tasks": 1}
    assert await _scan(db, [R, "first room"]) == []


async def test_forget_all_leaves_no_row_or_text_of_what_it_removed(
    db: Database, store: AgentStore, store_b: AgentStore
) -> None:
    await before_forget_all(db, store, store_b)
    done = await store.forget_all()
    assert isinstance(done, Forgotten) and done.rows["entities"] == 2 and done.rows["rooms"] == 3
    assert await _scan(db, [U, V, R, R2, DM, SECRET_WORD]) == []
    assert len(await store_b.get_memories(table="messages")) == 1
