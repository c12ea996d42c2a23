"""Database.write (a transaction in one trip to the writer thread) and Database.shared_reads."""

from __future__ import annotations

import asyncio

import pytest

from bot.kernel.errors import StoreError
from bot.kernel.types import ChannelType, Room, RoomState
from bot.store import Database

from .conftest import A, R, U, make_memory, seed_agent

_INSERT = "INSERT INTO agents (id, name) VALUES (?, ?)"


# -- write -------------------------------------------------------------------------------------


async def test_write_commits_every_statement_and_returns_what_the_work_returns(db: Database) -> None:
    def work(conn) -> int:
        conn.execute(_INSERT, (A, "a"))
        return conn.execute("SELECT count(*) FROM agents").fetchone()[0]

    assert await db.write(work) == 1
    assert [r["name"] for r in await db.fetchall("SELECT name FROM agents")] == ["a"]


async def test_write_rolls_back_everything_when_the_work_raises(db: Database) -> None:
    def work(conn) -> None:
        conn.execute(_INSERT, (A, "a"))
        raise RuntimeError("failed midway")

    with pytest.raises(RuntimeError, match="midway"):
        await db.write(work)
    assert await db.fetchall("SELECT * FROM agents") == []


async def test_write_turns_driver_errors_into_store_error_and_rolls_back(db: Database) -> None:
    def work(conn) -> None:
        conn.execute(_INSERT, (A, "a"))
        conn.execute(_INSERT, (A, "again"))

    with pytest.raises(StoreError, match="UNIQUE constraint failed"):
        await db.write(work)
    assert await db.fetchall("SELECT * FROM agents") == []
    await db.write(lambda conn: conn.execute(_INSERT, (A, "b")))  # the writer is free again
    assert len(await db.fetchall("SELECT * FROM agents")) == 1


async def test_write_inside_a_transaction_block_raises_instead_of_deadlocking(db: Database) -> None:
    with pytest.raises(RuntimeError, match="not reentrant"):
        async with db.transaction():
            await db.write(lambda conn: None)


async def test_a_cancelled_write_keeps_the_writer_until_its_transaction_ended(db: Database) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow(conn) -> None:
        conn.execute(_INSERT, (A, "a"))
        loop.call_soon_threadsafe(started.set)
        asyncio.run_coroutine_threadsafe(release.wait(), loop).result(5)

    task = asyncio.create_task(db.write(slow))
    await started.wait()
    task.cancel()
    await asyncio.sleep(0.01)
    assert not task.done()  # still holding the writer: the transaction is running on the thread
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(await db.fetchall("SELECT * FROM agents")) == 1  # it ran to its end and committed


# -- shared reads ------------------------------------------------------------------------------


async def _count_reads(db: Database, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    queries: list[str] = []
    fetchall = db.fetchall

    async def counting(sql: str, params=()):
        queries.append(sql)
        return await fetchall(sql, params)

    monkeypatch.setattr(db, "fetchall", counting)
    return queries


async def test_identical_reads_in_a_shared_block_run_one_query(db: Database, monkeypatch) -> None:
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    queries = await _count_reads(db, monkeypatch)
    with db.shared_reads():
        rooms = await asyncio.gather(*(store.get_room(R) for _ in range(5)))  # concurrent: one read in flight
        again = await store.get_room(R)
        states = [await store.get_participant_state(R, A) for _ in range(3)]
    assert len(queries) == 2
    assert {r.id if r is not None else None for r in [*rooms, again]} == {R}
    assert len({id(r) for r in [*rooms, again]}) == 6  # every caller gets its own object
    assert states == [None, None, None]


async def test_a_write_ends_the_sharing_of_what_was_read_before_it(db: Database, monkeypatch) -> None:
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    queries = await _count_reads(db, monkeypatch)
    with db.shared_reads():
        assert await store.get_participant_state(R, A) is None
        assert await store.set_participant_state(R, A, RoomState.MUTED)
        assert await store.get_participant_state(R, A) is RoomState.MUTED
        room = await store.get_room(R)
        assert room is not None and room.name == "room 0"
        await store.update_room(Room(R, source="discord", type=ChannelType.GROUP, name="renamed"))
        room = await store.get_room(R)
        assert room is not None and room.name == "renamed"
    assert len(queries) == 4


async def test_writes_of_other_tables_keep_reads_shared(db: Database, monkeypatch) -> None:
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    queries = await _count_reads(db, monkeypatch)
    with db.shared_reads():
        await store.get_room(R)
        await store.create_memory(make_memory("hi"), "messages")  # memories only: the room is current
        store.queue_log({}, entity_id=A, room_id=R, type="x")
        await db.flush_logs()
        await store.get_room(R)
        await db.write(lambda conn: None)  # a write naming no tables may have changed anything
        await store.get_room(R)
    assert len([q for q in queries if "FROM rooms" in q]) == 2


async def test_reads_are_not_shared_outside_the_block_or_after_it(db: Database, monkeypatch) -> None:
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    queries = await _count_reads(db, monkeypatch)
    await store.get_room(R)
    await store.get_room(R)
    with db.shared_reads():
        await store.get_room(R)
        with db.shared_reads():  # nested: joins the outer block
            await store.get_room(R)
    await store.get_room(R)
    assert len(queries) == 4


async def test_a_task_started_in_the_block_stops_sharing_when_the_block_ends(db: Database, monkeypatch) -> None:
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    queries = await _count_reads(db, monkeypatch)
    go = asyncio.Event()

    async def later() -> None:
        await go.wait()
        await store.get_room(R)

    with db.shared_reads():
        await store.get_room(R)
        task = asyncio.create_task(later())
    go.set()
    await task
    assert len(queries) == 2
