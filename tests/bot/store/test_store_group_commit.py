"""Group commit: writes queued while the writer is busy share one transaction and one trip,
each in a savepoint of its own; cancellation, ordering with transaction(), close, kill -9."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.kernel.errors import StoreError
from bot.store import AgentStore, Database
from bot.store._batch import BATCH_LIMIT
from bot.store._connect import Connection, sqlean

from .conftest import R, writer_busy

BATCH_WRITER = Path(__file__).with_name("_batch_writer.py")
_INSERT = "INSERT INTO meta (key, value) VALUES (?, ?)"


def insert(key: str) -> Callable[[Connection], str]:
    def work(conn: Connection) -> str:
        conn.execute(_INSERT, (key, "v"))
        return key

    return work


async def keys(db: Database) -> list[str]:
    rows = await db.fetchall("SELECT key FROM meta WHERE value = 'v' ORDER BY rowid")
    return [r[0] for r in rows]


async def settle() -> None:
    """Let every ready task run until it waits (queued writes, lock waiters)."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_writes_queued_while_the_writer_is_busy_commit_together_in_one_trip(
    db: Database, trips: list[str]
) -> None:
    async with writer_busy(db):
        writes = [asyncio.create_task(db.write(insert(f"k{i}"))) for i in range(20)]
        await settle()
        trips.clear()
    assert await asyncio.gather(*writes) == [f"k{i}" for i in range(20)]
    assert trips.count("transact") == 1
    assert await keys(db) == [f"k{i}" for i in range(20)]


async def test_a_failing_work_of_a_batch_raises_to_its_own_caller_and_the_others_commit(
    db: Database, trips: list[str]
) -> None:
    await db.write(insert("taken"))

    def duplicate(conn: Connection) -> None:
        conn.execute(_INSERT, ("fresh", "v"))  # undone with the rest of this work
        conn.execute(_INSERT, ("taken", "v"))

    def midway(conn: Connection) -> None:
        conn.execute(_INSERT, ("half", "v"))
        raise ValueError("gave up midway")

    async with writer_busy(db):
        works: list[Callable[[Connection], Any]] = [insert(f"k{i}") for i in range(6)]
        works[2], works[4] = duplicate, midway
        writes = [asyncio.create_task(db.write(w)) for w in works]
        await settle()
        trips.clear()
    outcomes = await asyncio.gather(*writes, return_exceptions=True)
    assert trips.count("transact") == 1  # one batch
    assert isinstance(outcomes[2], StoreError) and "UNIQUE constraint failed" in str(outcomes[2])
    assert isinstance(outcomes[4], ValueError) and str(outcomes[4]) == "gave up midway"
    assert [outcomes[i] for i in (0, 1, 3, 5)] == ["k0", "k1", "k3", "k5"]
    assert await keys(db) == ["taken", "k0", "k1", "k3", "k5"]


async def test_when_sqlite_ends_the_shared_transaction_no_work_of_the_batch_is_committed(db: Database) -> None:
    def lost(conn: Connection) -> None:
        conn.execute("ROLLBACK")  # what SQLite does itself on a full disk or an I/O error
        raise sqlean.OperationalError("database or disk is full")

    async with writer_busy(db):
        writes = [asyncio.create_task(db.write(w)) for w in (insert("a"), lost, insert("b"))]
        await settle()
    a, failed, b = await asyncio.gather(*writes, return_exceptions=True)
    assert isinstance(failed, StoreError) and "disk is full" in str(failed)
    for other in (a, b):
        assert isinstance(other, StoreError)
        assert "SQLite ended the transaction this write shared: database or disk is full" in str(other)
    assert await keys(db) == []
    assert await db.write(insert("after")) == "after"  # the writer works on


async def test_a_write_cancelled_before_its_batch_starts_is_taken_out_of_the_queue(db: Database) -> None:
    async with writer_busy(db):
        writes = [asyncio.create_task(db.write(insert(k))) for k in ("a", "b", "c")]
        await settle()
        writes[1].cancel()
        await settle()
    assert list(await asyncio.gather(writes[0], writes[2])) == ["a", "c"]
    with pytest.raises(asyncio.CancelledError):
        await writes[1]
    assert await keys(db) == ["a", "c"]


async def test_when_the_caller_committing_gives_up_the_writes_queued_behind_it_are_committed(db: Database) -> None:
    async with writer_busy(db):
        first = asyncio.create_task(db.write(insert("first")))  # nobody commits: this caller will
        await settle()
        behind = [asyncio.create_task(db.write(insert(k))) for k in ("b", "c")]
        await settle()
        first.cancel()
        await settle()
    assert await asyncio.gather(*behind) == ["b", "c"]
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await keys(db) == ["b", "c"]


async def test_batches_and_transaction_blocks_take_the_writer_in_the_order_they_asked(db: Database) -> None:
    in_block, leave = asyncio.Event(), asyncio.Event()
    seen: list[str] = []

    async def block() -> None:
        async with db.transaction() as conn:
            async with conn.execute("SELECT key FROM meta ORDER BY rowid") as cur:
                seen.extend(r[0] for r in await cur.fetchall())
            await conn.execute(_INSERT, ("block", "v"))
            in_block.set()
            await leave.wait()

    async with writer_busy(db):
        first = asyncio.create_task(db.write(insert("first")))
        await settle()
        blocked = asyncio.create_task(block())
        await settle()
    await in_block.wait()
    assert seen == ["first"]  # the write that asked before the block was committed before it
    later = asyncio.create_task(db.write(insert("later")))
    await settle()
    assert not later.done()  # waits for the block
    leave.set()
    await asyncio.gather(first, blocked, later)
    assert await keys(db) == ["first", "block", "later"]


async def test_close_commits_the_writes_queued_before_it(db: Database) -> None:
    async with writer_busy(db):
        writes = [asyncio.create_task(db.write(insert(f"k{i}"))) for i in range(5)]
        await settle()
        closing = asyncio.create_task(db.close())
        await settle()
        with pytest.raises(RuntimeError, match="closing"):
            await db.write(insert("too late"))
    assert await asyncio.gather(*writes) == [f"k{i}" for i in range(5)]
    await closing
    async with Database(db.path) as again:
        assert await keys(again) == [f"k{i}" for i in range(5)]


async def test_a_batch_holds_at_most_the_batch_limit_of_works(db: Database, trips: list[str]) -> None:
    count = 2 * BATCH_LIMIT + 10
    async with writer_busy(db):
        writes = [asyncio.create_task(db.write(insert(f"k{i}"))) for i in range(count)]
        await settle()
        trips.clear()
    await asyncio.gather(*writes)
    assert trips.count("transact") == 3
    assert len(await keys(db)) == count


async def test_shared_reads_see_a_batched_write_of_a_table_they_read(db: Database, store: AgentStore) -> None:
    with store.shared_reads():
        room = await store.get_room(R)
        assert room is not None
        async with writer_busy(db):
            writes = [
                asyncio.create_task(store.set_cache("k", 1)),
                asyncio.create_task(store.update_room(dataclasses.replace(room, name="renamed"))),
                asyncio.create_task(store.set_cache("k2", 2)),
            ]
            await settle()
        await asyncio.gather(*writes)
        again = await store.get_room(R)
    assert again is not None and again.name == "renamed"


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
async def test_no_acknowledged_write_is_lost_when_the_process_is_killed(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(BATCH_WRITER),
        str(db_path),
        "8",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    acknowledged: list[str] = []
    while len(acknowledged) < 400:
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=30)
        assert line, (await proc.stderr.read()).decode()
        acknowledged.append(line.split()[1].decode())
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = await proc.communicate()  # acknowledgements printed before the kill, not yet read
    acknowledged += [line.split()[1].decode() for line in rest.splitlines()]
    assert proc.returncode == -signal.SIGKILL

    conn = sqlean.connect(str(db_path))
    try:
        stored = {r[0] for r in conn.execute("SELECT key FROM meta WHERE value = 'acknowledged'")}
    finally:
        conn.close()
    assert set(acknowledged) <= stored
