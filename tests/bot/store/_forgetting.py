"""Forgetting leaves nothing behind: the scenarios and counts every backend shows, each backend's
test giving ``scan`` (every place in its database holding one of the needles)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.kernel.types import RoomState
from bot.store import Forgotten, Store, StoreBackend

from .conftest import BR, BU, R2, A, R, U, V, W, make_memory
from .contract.test_retention import DM, NAME, SECRET_WORD, _rich_world, before_forget_all, before_forget_room

#: Where a backend's database holds any of these texts ("table: needle" for each), [] for nowhere.
Scan = Callable[[list[str]], Awaitable[list[str]]]


async def forget_entity_leaves_nothing(backend: StoreBackend, store: Store, store_b: Store, scan: Scan) -> None:
    ids = await _rich_world(backend, store)
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
    assert await scan([U, *texts]) == []
    assert await store.search_all_memories_by_text(SECRET_WORD) == []

    # What was not about them stays.
    left = {m.content.text for m in await store.list_memories()}
    assert left == {"V greets everyone", "V plays the lute", "V sang a song"}
    [greeting] = await store.get_memories_by_ids([ids["v_group"]])
    assert greeting.content.to_json() == {"text": "V greets everyone", "mentions": []}
    assert greeting.metadata.to_json() == {"type": "message"}
    assert [(r.source_entity_id, r.target_entity_id) for r in await store.get_relationships(V)] == [(V, A)]
    assert [c.id for c in await store.get_components(V)] == ["c-v"]
    world = await store.get_world(W)
    assert world is not None and world.metadata.to_json() == {"ownership": {}, "roles": {V: "NONE"}}
    assert await store.get_cache("unrelated") == {"ok": True}
    assert [t.name for t in await store.get_tasks()] == ["KEEP"]
    assert await store.get_participant_state(R, A) == RoomState.FOLLOWED
    assert [log.body for log in await store.get_logs(room_id=R)] == [{"event": "kept"}]
    # Another agent's memory is its own business.
    assert len(await store_b.get_memories(table="messages")) == 1


async def forget_room_leaves_nothing(store: Store, scan: Scan) -> None:
    await before_forget_room(store)
    done = await store.forget_room(R)
    assert done.rows == {"cache": 1, "embeddings": 1, "logs": 1, "participants": 3, "rooms": 1, "tasks": 1}
    assert await scan([R, "first room"]) == []


async def forget_all_leaves_nothing(backend: StoreBackend, store: Store, store_b: Store, scan: Scan) -> None:
    await before_forget_all(backend, store, store_b)
    done = await store.forget_all()
    assert isinstance(done, Forgotten) and done.rows["entities"] == 2 and done.rows["rooms"] == 3
    assert await scan([U, V, R, R2, DM, SECRET_WORD]) == []
    assert len(await store_b.get_memories(table="messages")) == 1
