"""Agents: create, read, deep-merged settings updates, cascading delete.

Behaviour every backend must show (the contract)."""

from __future__ import annotations

import pytest

from bot.kernel.types import AgentRecord, Task
from bot.store import DEFAULT_EMBEDDING_DIMENSION, StoreBackend

from ..conftest import BR, A, B, R, U, make_memory, seed_agent, vec


async def test_create_agent_returns_true_then_false_for_the_same_id(backend: StoreBackend) -> None:
    store = backend.for_agent(A)
    record = AgentRecord(id=A, name="Ada", bio=["curious"], topics=["tea"], style={"all": ["brief"]})
    assert await store.create_agent(record) is True
    assert await store.create_agent(record) is False
    got = await store.get_agent()
    assert got is not None
    assert (got.name, got.bio, got.topics, got.style) == ("Ada", ["curious"], ["tea"], {"all": ["brief"]})
    assert isinstance(got.created_at, int) and isinstance(got.updated_at, int) and got.created_at > 1_600_000_000_000
    assert got.system is None  # an empty system prompt reads back as None


async def test_create_agent_refuses_a_record_of_another_agent(backend: StoreBackend) -> None:
    with pytest.raises(ValueError, match="not this store's agent"):
        await backend.for_agent(A).create_agent(AgentRecord(id=B, name="Bea"))


async def test_get_agent_reads_any_agent_and_get_agents_lists_all(backend: StoreBackend) -> None:
    await backend.for_agent(A).create_agent(AgentRecord(id=A, name="Ada"))
    await backend.for_agent(B).create_agent(AgentRecord(id=B, name="Bea"))
    other = await backend.for_agent(A).get_agent(B)
    assert other is not None and other.name == "Bea"
    assert await backend.for_agent(A).get_agent("no-such-agent") is None
    assert [a.name for a in await backend.for_agent(B).get_agents()] == ["Ada", "Bea"]


async def test_update_agent_deep_merges_settings(backend: StoreBackend) -> None:
    store = backend.for_agent(A)
    await store.create_agent(
        AgentRecord(id=A, name="Ada", settings={"voice": {"id": "v1", "speed": 2}, "theme": "dark", "list": [1, 2]})
    )
    before = await store.get_agent()
    assert await store.update_agent({"settings": {"voice": {"speed": None}, "model": "gpt", "list": [3]}})
    got = await store.get_agent()
    assert got is not None and before is not None
    assert got.settings == {"voice": {"id": "v1"}, "theme": "dark", "model": "gpt", "list": [3]}
    assert got.updated_at is not None and got.updated_at >= (before.updated_at or 0)
    # Deleting the last key of a nested dict removes the dict; an explicit {} is kept.
    assert await store.update_agent({"settings": {"voice": {"id": None}, "empty": {}}})
    got = await store.get_agent()
    assert got is not None and got.settings == {"theme": "dark", "model": "gpt", "list": [3], "empty": {}}


async def test_update_agent_replaces_other_fields_and_drops_secrets(backend: StoreBackend) -> None:
    store = backend.for_agent(A)
    await store.create_agent(AgentRecord(id=A, name="Ada", bio=["a"], enabled=True))
    assert await store.update_agent(
        {"name": "Ada II", "bio": ["b", "c"], "enabled": False, "settings": {"secrets": {"K": "v"}, "x": 1}}
    )
    got = await store.get_agent()
    assert got is not None
    assert (got.name, got.bio, got.enabled, got.settings) == ("Ada II", ["b", "c"], False, {"x": 1})


async def test_update_agent_rejects_unknown_fields_and_reports_a_missing_agent(backend: StoreBackend) -> None:
    store = backend.for_agent(A)
    with pytest.raises(ValueError, match="cannot update created_at, nickname"):
        await store.update_agent({"nickname": "x", "created_at": 1})
    assert await store.update_agent({"name": "x"}) is False


async def test_upsert_agent_creates_then_updates_with_settings_merged(backend: StoreBackend) -> None:
    store = backend.for_agent(A)
    created = await store.upsert_agent(
        AgentRecord(id=A, name="Ada", bio=["one"], settings={"keep": 1, "secrets": {"K": "v"}})
    )
    assert (created.name, created.bio, created.settings) == ("Ada", ["one"], {"keep": 1})
    updated = await store.upsert_agent(AgentRecord(id=A, name="Ada 2", bio=["two"], settings={"model": "m"}))
    assert (updated.name, updated.bio, updated.settings) == ("Ada 2", ["two"], {"keep": 1, "model": "m"})
    assert updated.created_at == created.created_at
    assert len(await store.get_agents()) == 1
    with pytest.raises(ValueError, match="not this store's agent"):
        await store.upsert_agent(AgentRecord(id=B, name="Bea"))


async def test_delete_agent_removes_everything_it_owns_and_nothing_else(backend: StoreBackend) -> None:
    store = await seed_agent(backend, A, users=(U,), rooms=(R,))
    other = await seed_agent(backend, B, users=(), rooms=(BR,))
    await store.create_memory(make_memory("bye", embedding=vec(1)), "messages")
    await other.create_memory(make_memory("stay", room=BR, entity=B), "messages")
    await store.set_cache("k", 1)
    await store.create_task(Task(name="t"))
    await store.log({"x": 1}, entity_id=A, room_id=R, type="action")
    await store.ensure_embedding_dimension(768)

    assert await store.delete_agent() is True
    assert await store.get_agent() is None and [a.id for a in await other.get_agents()] == [B]
    assert await store.get_entity(U) is None and await store.get_room(R) is None
    assert await store.get_memories(table="messages") == []
    assert await store.search_memories_by_text("bye", "messages") == []
    assert await store.get_cache("k") is None and await store.get_tasks() == []
    assert await store.get_logs() == []
    assert await store.get_embedding_dimension() == DEFAULT_EMBEDDING_DIMENSION
    assert [m.content.text for m in await other.get_memories(table="messages")] == ["stay"]
    assert await store.delete_agent() is False
