"""Entities and components, as one agent sees them.

Behaviour every backend must show (the contract)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kernel.record_metadata import EntityMetadata
from bot.kernel.types import Component, Entity
from bot.store import Store, StoreBackend

from ..conftest import BU, R2, A, B, R, U, V, W


async def test_create_entities_normalises_names_and_ignores_existing_ids(store: Store) -> None:
    new = "e-new"
    solo = Entity(id=new, agent_id="ignored", names="Solo", metadata=EntityMetadata.from_json({"k": 1}))  # type: ignore[arg-type]
    assert await store.create_entities([solo])
    assert await store.create_entities([Entity(id=new, agent_id=A, names=["Other"])])
    got = await store.get_entity(new)
    assert got is not None
    assert (got.names, got.metadata.to_json(), got.agent_id) == (["Solo"], {"k": 1}, A)
    assert isinstance(got.created_at, int)


async def test_create_entities_returns_false_on_a_database_error(backend: StoreBackend) -> None:
    # No agent row: the foreign key refuses the entity.
    assert await backend.for_agent("no-such-agent").create_entities([Entity(id="x", agent_id="x")]) is False


async def test_get_entities_by_ids_keeps_the_order_asked_and_attaches_components(store: Store) -> None:
    await store.create_component(Component(id="c1", entity_id=U, agent_id=A, room_id=R, type="profile", data={"a": 1}))
    found = await store.get_entities_by_ids([V, U, "missing", V])
    assert [e.id for e in found] == [V, U]
    assert [c.type for c in found[1].components] == ["profile"]
    assert found[0].components == []
    assert await store.get_entities_by_ids([]) == []


async def test_entities_are_scoped_to_their_agent(store: Store, store_b: Store) -> None:
    assert await store_b.get_entity(U) is None
    assert await store.get_entity(BU) is None
    assert await store_b.update_entity(Entity(id=U, agent_id=B, names=["hijack"])) is False
    assert await store_b.delete_entity(U) is False
    got = await store.get_entity(U)
    assert got is not None and got.names == ["user 0"]


async def test_update_entity_overwrites_names_and_metadata(store: Store) -> None:
    assert await store.update_entity(
        Entity(id=U, agent_id=A, names=["Bob", "bob"], metadata=EntityMetadata.from_json({"discord": {"id": "1"}}))
    )
    got = await store.get_entity(U)
    assert got is not None and (got.names, got.metadata.to_json()) == (["Bob", "bob"], {"discord": {"id": "1"}})
    with pytest.raises(ValueError, match="needs an entity id"):
        await store.update_entity(Entity(id="", agent_id=A))


async def test_delete_entity_removes_its_components_and_those_it_asserted(store: Store) -> None:
    await store.create_component(Component(id="on-u", entity_id=U, agent_id=A, room_id=R, type="profile"))
    await store.create_component(
        Component(id="by-u", entity_id=V, agent_id=A, room_id=R, type="opinion", source_entity_id=U)
    )
    assert await store.delete_entity(U) is True
    assert await store.get_entity(U) is None
    assert await store.get_components(V) == []
    assert await store.get_participants_for_room(R) == [A, V]
    assert await store.delete_entity(U) is False


async def test_get_entities_for_room_lists_participants_with_optional_components(store: Store) -> None:
    await store.create_component(Component(id="c", entity_id=V, agent_id=A, room_id=R, type="profile"))
    plain = await store.get_entities_for_room(R)
    assert {e.id for e in plain} == {A, U, V}
    assert all(e.components == [] for e in plain)
    rich = {e.id: e for e in await store.get_entities_for_room(R, include_components=True)}
    assert [c.id for c in rich[V].components] == ["c"]
    assert await store.get_entities_for_room("no-room") == []


async def test_search_entities_by_name_is_a_unicode_case_insensitive_substring_match(store: Store) -> None:
    await store.create_entities([Entity(id="z", agent_id=A, names=["Zoë Ünïcode", "zoe"])])
    assert [e.id for e in await store.search_entities_by_name("ÜNÏ")] == ["z"]
    assert [e.id for e in await store.search_entities_by_name("USER 1")] == [V]
    assert len(await store.search_entities_by_name("", limit=2)) == 2
    assert await store.search_entities_by_name("nobody") == []


async def test_get_entities_by_names_matches_any_exact_name(store: Store) -> None:
    found = await store.get_entities_by_names(["user 1", "Agent", "user"])
    assert {e.id for e in found} == {A, V}


async def test_components_round_trip_and_filter_by_world_and_source(store: Store) -> None:
    base: dict[str, Any] = dict(entity_id=U, agent_id=B, room_id=R)  # agent_id is forced to the store's agent
    assert await store.create_component(Component(id="p", type="profile", data={"bio": "hi"}, **base))
    assert await store.create_component(Component(id="s", type="settings", world_id=W, source_entity_id=V, **base))
    profile = await store.get_component(U, "profile")
    assert profile is not None and (profile.data, profile.agent_id, profile.world_id) == ({"bio": "hi"}, A, None)
    assert (await store.get_component(U, "settings", world_id=W)) is not None
    assert await store.get_component(U, "settings", world_id="other") is None
    assert [c.id for c in await store.get_components(U)] == ["p", "s"]
    assert [c.id for c in await store.get_components(U, source_entity_id=V)] == ["s"]


async def test_update_and_delete_component(store: Store, store_b: Store) -> None:
    await store.create_component(Component(id="p", entity_id=U, agent_id=A, room_id=R, type="profile"))
    assert await store.update_component(
        Component(id="p", entity_id=U, agent_id=A, room_id=R2, type="profile", data={"x": 2})
    )
    got = await store.get_component(U, "profile")
    assert got is not None and (got.room_id, got.data) == (R2, {"x": 2})
    assert await store.update_component(Component(id="missing", entity_id=U, agent_id=A, room_id=R, type="t")) is False
    assert await store_b.delete_component("p") is False
    assert await store.delete_component("p") is True
    assert await store.get_component(U, "profile") is None


async def test_create_component_returns_false_for_an_unknown_entity(store: Store) -> None:
    assert await store.create_component(Component(id="x", entity_id="ghost", agent_id=A, room_id=R, type="t")) is False
