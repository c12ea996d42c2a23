"""Units of work in the protocol's own terms: shared reads, the shared-knowledge turn, queued logs.

Behaviour every backend must show (the contract); that shared reads save queries is the SQLite
backend's own business (../test_store_write_and_shared_reads.py)."""

from __future__ import annotations

import asyncio

from bot.kernel.types import Room, RoomState
from bot.store import Store, StoreBackend

from ..conftest import B, R, U, seed_agent


async def test_reads_in_a_unit_of_work_see_every_write_made_in_it(store: Store) -> None:
    with store.shared_reads():
        room = await store.get_room(R)
        assert room is not None and await store.get_room(R) == room
        assert await store.update_room(
            Room(id=R, source=room.source, type=room.type, world_id=room.world_id, name="renamed")
        )
        renamed = await store.get_room(R)
        assert renamed is not None and renamed.name == "renamed"
        assert await store.get_participant_state(R, U) is None
        await store.set_participant_state(R, U, RoomState.MUTED)
        assert await store.get_participant_state(R, U) is RoomState.MUTED
        with store.shared_reads():  # nested: joins the outer one
            assert await store.get_participant_state(R, U) is RoomState.MUTED
    assert await store.get_participant_state(R, U) is RoomState.MUTED


async def test_reads_in_a_unit_of_work_stay_scoped_to_their_agent(store: Store, store_b: Store) -> None:
    with store.shared_reads(), store_b.shared_reads():
        assert await store.get_room(R) is not None
        assert await store_b.get_room(R) is None  # agent B's view of that room has another id


async def test_agents_take_turns_at_the_shared_knowledge(backend: StoreBackend, store: Store) -> None:
    other = await seed_agent(backend, B, users=(), rooms=())
    turns: list[str] = []
    async with store.lock_shared_knowledge():
        waiting = asyncio.create_task(_take_turn(other, turns))
        for _ in range(5):
            await asyncio.sleep(0)
        assert turns == []  # still waiting for A to finish
        turns.append("A")
    await waiting
    assert turns == ["A", "B"]


async def _take_turn(store: Store, turns: list[str]) -> None:
    async with store.lock_shared_knowledge():
        turns.append("B")


async def test_a_queued_log_is_visible_to_the_next_read(store: Store) -> None:
    log_id = store.queue_log({"model": "small"}, entity_id=U, room_id=R, type="useModel:TEXT_SMALL")
    logs = await store.get_logs(type="useModel:TEXT_SMALL")
    assert [(e.id, e.body) for e in logs] == [(log_id, {"model": "small"})]
