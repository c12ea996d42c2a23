"""Worlds, rooms, participants and the agent's per-room FOLLOWED/MUTED state.

Behaviour every backend must show (the contract)."""

from __future__ import annotations

import pytest

from bot.kernel.ids import string_to_uuid, unique_uuid
from bot.kernel.record_metadata import RoomMetadata, WorldMetadata
from bot.kernel.types import ChannelType, Room, RoomState, World
from bot.store import RoomSharing, Store, StoreBackend

from ..conftest import BR, R2, A, B, R, U, V, W, make_memory, seed_agent


async def test_create_world_returns_the_id_and_leaves_an_existing_world_alone(store: Store) -> None:
    new_id = await store.create_world(World(id="", agent_id=B, name="Fresh"))
    assert len(new_id) == 36
    assert await store.create_world(World(id=W, agent_id=A, name="Renamed?")) == W
    world = await store.get_world(W)
    assert world is not None and (world.name, world.server_id, world.agent_id) == ("Guild", "g1", A)
    fresh = await store.get_world(new_id)
    assert fresh is not None and (fresh.agent_id, fresh.server_id) == (A, "default")


async def test_get_world_is_cross_agent_but_get_all_worlds_is_scoped(store: Store, store_b: Store) -> None:
    assert await store_b.get_world(W) is not None
    assert await store_b.get_all_worlds() == []
    assert [w.id for w in await store.get_all_worlds()] == [W]
    assert await store.get_world("missing") is None


async def test_get_worlds_with_settings_returns_only_this_agents_worlds_that_have_settings(
    store: Store, store_b: Store
) -> None:
    assert await store.get_worlds_with_settings() == []  # the fixture's world has no settings
    configured = World(
        id="",
        agent_id=A,
        name="Configured",
        metadata=WorldMetadata.from_json({"settings": {"GREETING": {"value": "hi"}}}),
    )
    configured_id = await store.create_world(configured)
    await store.create_world(
        World(id="", agent_id=A, name="Plain", metadata=WorldMetadata.from_json({"roles": {U: "OWNER"}}))
    )
    await store_b.create_world(
        World(id="", agent_id=B, name="Theirs", metadata=WorldMetadata.from_json({"settings": {}}))
    )
    assert [w.id for w in await store.get_worlds_with_settings()] == [configured_id]
    assert [w.name for w in await store_b.get_worlds_with_settings()] == ["Theirs"]


async def test_update_and_remove_world(store: Store, store_b: Store) -> None:
    changed = World(
        id=W, agent_id=A, name="New name", server_id="g2", metadata=WorldMetadata.from_json({"roles": {U: "OWNER"}})
    )
    assert await store_b.update_world(changed) is False
    assert await store.update_world(changed) is True
    world = await store.get_world(W)
    assert world is not None and (world.name, world.server_id, world.metadata.to_json()) == (
        "New name",
        "g2",
        {"roles": {U: "OWNER"}},
    )
    assert await store_b.remove_world(W) is False
    assert await store.remove_world(W) is True
    assert await store.get_world(W) is None
    assert len(await store.get_rooms_by_world(W)) == 2  # rooms have no FK to worlds


async def test_create_rooms_forces_the_agent_and_fills_missing_ids(store: Store) -> None:
    ids = await store.create_rooms(
        [
            Room(
                id="",
                source="telegram",
                type=ChannelType.DM,
                agent_id=B,
                channel_id="42",
                metadata=RoomMetadata.from_json({"x": 1}),
            ),
            Room(id=R, source="discord", type=ChannelType.FORUM, name="ignored: exists"),
        ]
    )
    assert ids[1] == R and len(ids[0]) == 36
    dm = await store.get_room(ids[0])
    assert dm is not None
    assert (dm.agent_id, dm.type, dm.source, dm.channel_id, dm.metadata.to_json()) == (
        A,
        ChannelType.DM,
        "telegram",
        "42",
        {"x": 1},
    )
    existing = await store.get_room(R)
    assert existing is not None and existing.type is ChannelType.GROUP


async def test_create_rooms_rejects_an_unknown_channel_type(store: Store) -> None:
    with pytest.raises(ValueError, match="TEXT"):
        await store.create_rooms([Room(id="x", source="discord", type="TEXT")])  # type: ignore[arg-type]


async def test_rooms_are_read_in_the_order_asked_and_scoped(store: Store, store_b: Store) -> None:
    assert [r.id for r in await store.get_rooms_by_ids([R2, "missing", R])] == [R2, R]
    assert await store_b.get_room(R) is None
    assert await store_b.get_rooms_by_ids([R]) == []
    assert [r.id for r in await store.get_rooms_by_world(W)] == [R, R2]
    assert await store_b.get_rooms_by_world(W) == []


async def test_update_room_overwrites_fields_of_own_rooms_only(store: Store, store_b: Store) -> None:
    room = Room(id=R, source="discord", type=ChannelType.THREAD, name="renamed", world_id=W, server_id="g1")
    assert await store_b.update_room(room) is False
    assert await store.update_room(room) is True
    got = await store.get_room(R)
    assert got is not None and (got.type, got.name, got.server_id) == (ChannelType.THREAD, "renamed", "g1")
    with pytest.raises(ValueError, match="needs a room id"):
        await store.update_room(Room(id="", source="x", type=ChannelType.DM))


async def test_delete_room_cascades_to_participants_and_memories(store: Store, store_b: Store) -> None:
    await store.create_memory(make_memory("in R"), "messages")
    assert await store_b.delete_room(R) is False
    assert await store.delete_room(R) is True
    assert await store.get_room(R) is None
    assert await store.get_participants_for_room(R) == []
    assert await store.get_memories(table="messages") == []
    assert await store.delete_room(R) is False
    with pytest.raises(ValueError, match="needs a room id"):
        await store.delete_room("")


async def test_participants_can_be_added_listed_and_removed(store: Store) -> None:
    assert await store.get_participants_for_room(R) == [A, U, V]
    assert await store.is_room_participant(R, U)
    assert await store.remove_participant(U, R) is True
    assert await store.remove_participant(U, R) is False
    assert not await store.is_room_participant(R, U)
    assert await store.add_participant(U, R) is True
    assert await store.add_participant(U, R) is True  # already there: no-op
    assert await store.get_participants_for_room(R) == [A, V, U]


async def test_add_participant_returns_false_for_an_unknown_entity_without_raising(store: Store) -> None:
    assert await store.add_participant("ghost", R) is False
    assert await store.add_participants([U, "ghost"], R2) is False  # all or none
    assert await store.add_participants([], R2) is True


async def test_get_rooms_for_participant_lists_own_rooms_only(store: Store, store_b: Store) -> None:
    assert await store.get_rooms_for_participant(U) == sorted([R, R2])
    assert await store.get_rooms_for_participants([U, V, "ghost"]) == sorted([R, R2])
    assert await store_b.get_rooms_for_participant(U) == []
    assert await store.get_rooms_for_participants([]) == []


async def test_participant_state_cycles_through_muted_followed_and_none(store: Store) -> None:
    assert await store.get_participant_state(R, A) is None
    assert await store.set_participant_state(R, A, RoomState.MUTED) is True
    assert await store.get_participant_state(R, A) is RoomState.MUTED
    assert await store.set_participant_state(R, A, RoomState.FOLLOWED) is True
    assert await store.get_participant_state(R, A) is RoomState.FOLLOWED
    assert await store.set_participant_state(R, A, RoomState.STOPPED) is True  # asked to stay out
    assert await store.get_participant_state(R, A) is RoomState.STOPPED
    assert await store.set_participant_state(R, A, None) is True
    assert await store.get_participant_state(R, A) is None


async def test_participant_state_rejects_unknown_states(store: Store) -> None:
    with pytest.raises(ValueError, match="invalid room state 'FOO'"):
        await store.set_participant_state(R, A, "FOO")  # type: ignore[arg-type]


async def test_participant_state_without_a_participant_row_is_a_no_op(store: Store) -> None:
    await store.remove_participant(A, R2)
    assert await store.set_participant_state(R2, A, RoomState.MUTED) is False
    assert await store.get_participant_state(R2, A) is None


async def test_participant_state_belongs_to_one_agent(store: Store, store_b: Store) -> None:
    await store.set_participant_state(R, A, RoomState.MUTED)
    assert await store_b.get_participant_state(R, A) is None
    assert await store_b.set_participant_state(R, A, RoomState.FOLLOWED) is False
    await store_b.set_participant_state(BR, B, RoomState.FOLLOWED)
    assert await store.get_participant_state(R, A) is RoomState.MUTED
    assert await store_b.get_participant_state(BR, B) is RoomState.FOLLOWED


async def test_room_sharing_pairs_characters_in_the_same_platform_rooms_but_not_private_chats(
    backend: StoreBackend, store: Store, store_b: Store
) -> None:
    """What placement keeps together: a shared group counts; a private chat of the same id (a
    Telegram user's private chat with each bot) and a same id on another platform do not."""
    c = string_to_uuid("agent-c")
    store_c = await seed_agent(backend, c, users=(), rooms=())
    assert await backend.room_sharing() == []

    def room(agent: str, channel: str, kind: ChannelType = ChannelType.GROUP, source: str = "telegram") -> Room:
        return Room(id=unique_uuid(agent, f"{source}:{channel}"), source=source, type=kind, channel_id=channel)

    await store.create_rooms([room(A, "-100"), room(A, "-200"), room(A, "42", ChannelType.DM)])
    await store_b.create_rooms([room(B, "-100"), room(B, "-200"), room(B, "42", ChannelType.DM)])
    await store_c.create_rooms([room(c, "-200", source="discord"), room(c, "-300")])
    expected = RoomSharing.between(A, B, 2)
    assert await backend.room_sharing() == [expected]
    await store_c.create_rooms([room(c, "-100")])
    assert sorted(await backend.room_sharing(), key=lambda s: (s.a, s.b)) == sorted(
        [expected, RoomSharing.between(A, c, 1), RoomSharing.between(B, c, 1)],
        key=lambda s: (s.a, s.b),
    )
