"""Reads asked for together go to the reader's thread in one trip; each keeps its own outcome."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from bot.kernel.errors import StoreError
from bot.store import AgentStore, Database
from bot.store._reads import READ_LIMIT

from .conftest import R, U, V


async def test_reads_asked_for_together_share_one_trip(db: Database, store: AgentStore, trips: list[str]) -> None:
    rooms, entities, state = await asyncio.gather(
        store.get_room(R), store.get_entities_by_ids([U, V]), store.get_participant_state(R, U)
    )
    assert rooms is not None and rooms.id == R
    assert sorted(e.id for e in entities) == sorted([U, V])
    assert state is None
    assert trips == ["_run_all"]


async def test_a_long_queue_of_reads_is_split_into_trips_of_at_most_the_limit(db: Database, trips: list[str]) -> None:
    count = 2 * READ_LIMIT + 1
    answers = await asyncio.gather(*(db.fetchone("SELECT ?", (n,)) for n in range(count)))
    assert [row[0] for row in answers if row is not None] == list(range(count))  # each its own, in order
    assert trips == ["_run_all"] * 3


async def test_a_failing_read_fails_alone(db: Database, store: AgentStore) -> None:
    good, bad = await asyncio.gather(
        store.get_room(R), db.fetchall("SELECT * FROM no_such_table"), return_exceptions=True
    )
    assert not isinstance(good, BaseException) and good is not None and good.id == R
    assert isinstance(bad, StoreError)
    assert str(bad) == "database read failed: no such table: no_such_table"


async def test_a_cancelled_reader_leaves_the_others_their_rows(db: Database, store: AgentStore) -> None:
    cancelled = asyncio.create_task(db.fetchall("SELECT 1"))
    kept = asyncio.create_task(store.get_room(R))
    await asyncio.sleep(0)  # both queued, the trip not yet made
    cancelled.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await cancelled
    room = await kept
    assert room is not None and room.id == R
    assert tuple(await db.fetchone("SELECT 2") or ()) == (2,)  # and the next trip goes as usual


async def test_reads_queued_before_close_get_their_rows(store: AgentStore, db: Database) -> None:
    reads = [asyncio.create_task(store.get_room(R)) for _ in range(3)]
    await asyncio.sleep(0)
    await db.close()
    assert all(room is not None and room.id == R for room in await asyncio.gather(*reads))
    with pytest.raises(RuntimeError, match="is closed: it cannot be used"):
        await store.get_room(R)
