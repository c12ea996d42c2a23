"""Relationships, cache, logs and tasks.

Behaviour every backend must show (the contract)."""

from __future__ import annotations

import asyncio

import pytest

from bot.kernel.errors import StoreError
from bot.kernel.record_metadata import RelationshipMetadata, TaskMetadata
from bot.kernel.types import Relationship, Task, now_ms
from bot.store import Store, StoreBackend

from ..conftest import BR, R2, A, B, R, U, V


async def test_create_relationship_is_directional_and_unique(store: Store) -> None:
    assert (
        await store.create_relationship(
            U, V, tags=["dm_interaction"], metadata=RelationshipMetadata.from_json({"interactions": 1})
        )
        is True
    )
    assert await store.create_relationship(U, V, tags=["dm_interaction"]) is False
    rel = await store.get_relationship(U, V)
    assert rel is not None
    assert (rel.source_entity_id, rel.target_entity_id, rel.agent_id, rel.tags, rel.metadata.to_json()) == (
        U, V, A, ["dm_interaction"], {"interactions": 1},
    )  # fmt: skip
    assert isinstance(rel.created_at, int)
    assert await store.get_relationship(V, U) is None


async def test_get_relationships_matches_either_end_and_any_tag(store: Store) -> None:
    await store.create_relationship(U, V, tags=["dm_interaction"])
    await store.create_relationship(A, U, tags=["group_interaction"])
    assert len(await store.get_relationships(V)) == 1
    assert len(await store.get_relationships(U)) == 2
    assert len(await store.get_relationships(V, tags=["x", "dm_interaction"])) == 1
    assert await store.get_relationships(V, tags=["x"]) == []


async def test_relationships_are_scoped_and_updatable(store: Store, store_b: Store) -> None:
    await store.create_relationship(U, V)
    rel = await store.get_relationship(U, V)
    assert rel is not None
    assert await store_b.get_relationship(U, V) is None
    assert await store_b.get_relationships(U) == []
    changed = Relationship(
        id=rel.id,
        source_entity_id=U,
        target_entity_id=V,
        agent_id=A,
        tags=["t"],
        metadata=RelationshipMetadata.from_json({"n": 2}),
    )
    assert await store_b.update_relationship(changed) is False
    assert await store.update_relationship(changed) is True
    again = await store.get_relationship(U, V)
    assert again is not None and (again.tags, again.metadata.to_json()) == (["t"], {"n": 2})


async def test_create_relationship_with_an_unknown_entity_returns_false(store: Store) -> None:
    assert await store.create_relationship(U, "ghost") is False


@pytest.mark.parametrize("value", ["text", 42, 1.5, True, [1, "two"], {"a": [1, 2], "é": None}])
async def test_cache_stores_any_json_value(store: Store, value: object) -> None:
    assert await store.set_cache("k", value) is True  # type: ignore[arg-type]
    assert await store.get_cache("k") == value


async def test_cache_overwrites_deletes_and_is_per_agent(store: Store, store_b: Store) -> None:
    assert await store.get_cache("k") is None
    await store.set_cache("k", {"a": [1, 2]})
    await store.set_cache("k", "v2")
    assert await store.get_cache("k") == "v2"
    assert await store_b.get_cache("k") is None
    assert await store.delete_cache("k") is True
    assert await store.get_cache("k") is None
    assert await store.delete_cache("k") is True


async def test_prune_cache_forgets_only_this_agents_values_past_their_time(store: Store, store_b: Store) -> None:
    for scope in (store, store_b):
        assert await scope.set_cache("gone", 1, expires_at=now_ms() - 1000)
        assert await scope.set_cache("fresh", 2, expires_at=now_ms() + 60_000)
        assert await scope.set_cache("always", 3)
    assert await store.prune_cache() == 1
    assert [await store.get_cache(k) for k in ("fresh", "always")] == [2, 3]
    assert await store_b.prune_cache() == 1  # B's was left for B


async def test_set_cache_returns_false_for_values_json_cannot_hold(store: Store) -> None:
    assert await store.set_cache("k", {1, 2}) is False  # type: ignore[arg-type]
    assert await store.set_cache("k", float("nan")) is False


async def test_log_strips_nul_characters_and_cuts_cycles(store: Store) -> None:
    body: dict[str, object] = {"s": "a\x00b", "nested": {"k\x00": "v"}}
    body["self"] = body
    log_id = await store.log(body, entity_id=A, room_id=R, type="action")
    (entry,) = await store.get_logs(type="action")
    assert entry.id == log_id
    assert entry.body == {"s": "ab", "nested": {"k": "v"}, "self": None}
    assert (entry.entity_id, entry.room_id, entry.type) == (A, R, "action")


async def test_get_logs_is_newest_first_filtered_and_paged(store: Store, store_b: Store) -> None:
    for n in range(12):
        await store.log(
            {"n": n}, entity_id=U if n % 2 else V, room_id=R if n < 6 else R2, type="action" if n % 3 else "run_event"
        )
    assert [e.body["n"] for e in await store.get_logs()] == list(range(11, 1, -1))  # default count 10
    assert [e.body["n"] for e in await store.get_logs(count=3, offset=2)] == [9, 8, 7]
    assert {e.body["n"] for e in await store.get_logs(entity_id=U, room_id=R)} == {1, 3, 5}
    assert {e.body["n"] for e in await store.get_logs(type="run_event", count=50)} == {0, 3, 6, 9}
    assert await store_b.get_logs() == []


async def test_delete_log_and_logging_to_unknown_rooms(store: Store, store_b: Store) -> None:
    log_id = await store.log({}, entity_id=A, room_id=R, type="x")
    assert await store_b.delete_log(log_id) is False
    assert await store.delete_log(log_id) is True
    assert await store.delete_log(log_id) is False
    with pytest.raises(StoreError, match="FOREIGN KEY constraint failed"):
        await store.log({}, entity_id=A, room_id="no-room", type="x")


async def test_prune_logs_deletes_the_agents_entries_written_before_a_time(store: Store, store_b: Store) -> None:
    old = await store.log({"n": 0}, entity_id=A, room_id=R, type="x")
    theirs = await store_b.log({"n": 1}, entity_id=B, room_id=BR, type="x")
    await asyncio.sleep(0.005)
    cut = now_ms()
    await asyncio.sleep(0.005)
    queued = store.queue_log({"n": 2}, entity_id=A, room_id=R2, type="useModel:TEXT_SMALL")
    assert await store.prune_logs(0) == 0
    assert await store.prune_logs(cut) == 1
    assert [e.id for e in await store.get_logs()] == [queued] and old != queued
    assert await store.prune_logs(now_ms() + 1000) == 1  # a queued entry too
    assert await store.get_logs() == []
    assert [e.id for e in await store_b.get_logs()] == [theirs]  # another agent's are its own


async def test_queued_logs_are_batched_and_visible_to_the_next_read(store: Store, backend: StoreBackend) -> None:
    ids = [store.queue_log({"n": n}, entity_id=A, room_id=R, type="useModel:TEXT_LARGE") for n in range(3)]
    assert [e.id for e in await store.get_logs(type="useModel:TEXT_LARGE")] == ids[::-1]
    store.queue_log({"n": 3}, entity_id=A, room_id="no-room", type="x")  # rejected: dropped alone
    last = store.queue_log({"n": 4}, entity_id=A, room_id=R, type="x")
    assert await store.delete_log(last) is True  # a queued row can be deleted at once
    assert [e.body["n"] for e in await store.get_logs(count=50)] == [2, 1, 0]


async def test_create_task_without_a_world_and_find_it_by_tags_and_name(store: Store) -> None:
    task_id = await store.create_task(
        Task(
            name="T",
            agent_id="ignored",
            tags=["queue", "repeat"],
            metadata=TaskMetadata.from_json({"updateInterval": 60000}),
        )
    )
    task = await store.get_task(task_id)
    assert task is not None
    assert (task.name, task.agent_id, task.world_id, task.description, task.tags) == (
        "T",
        A,
        None,
        "",
        ["queue", "repeat"],
    )
    assert task.created_at == task.updated_at
    assert [t.id for t in await store.get_tasks(tags=["queue"])] == [task_id]
    assert [t.id for t in await store.get_tasks(tags=["repeat", "queue", "queue"])] == [task_id]
    assert await store.get_tasks(tags=["queue", "repeat", "x"]) == []
    assert len(await store.get_tasks_by_name("T")) == 1


async def test_get_tasks_filters_by_room_and_entity_and_is_scoped(store: Store, store_b: Store) -> None:
    in_r = await store.create_task(Task(name="a", room_id=R, entity_id=U))
    await store.create_task(Task(name="b", room_id=R2))
    assert [t.id for t in await store.get_tasks(room_id=R)] == [in_r]
    assert [t.id for t in await store.get_tasks(entity_id=U)] == [in_r]
    assert len(await store.get_tasks()) == 2
    assert await store_b.get_tasks() == []
    assert await store_b.get_task(in_r) is None
    assert await store_b.delete_task(in_r) is False


async def test_update_task_replaces_given_fields_and_metadata_whole(store: Store) -> None:
    task_id = await store.create_task(
        Task(name="T", tags=["queue"], metadata=TaskMetadata.from_json({"keep": 1, "options": []}))
    )
    assert (
        await store.update_task(
            task_id, {"metadata": TaskMetadata.from_json({"a": 1}), "description": "now with words"}
        )
        is True
    )
    task = await store.get_task(task_id)
    assert task is not None and task.metadata.to_json() == {"a": 1} and task.description == "now with words"
    assert task.tags == ["queue"] and task.updated_at is not None and task.updated_at >= (task.created_at or 0)
    with pytest.raises(ValueError, match="cannot update agent_id"):
        await store.update_task(task_id, {"agent_id": "x"})
    assert await store.update_task("missing", {"name": "x"}) is False
    assert await store.delete_task(task_id) is True
    assert await store.get_task(task_id) is None
