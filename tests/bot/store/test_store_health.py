"""The store knows when it cannot write, and why: a real SQLite "database or disk is full"
(``PRAGMA max_page_count`` makes the file full without a small disk), a lock held by another
connection, a corrupt file; one ERROR when writing stops, one INFO when it works again."""

from __future__ import annotations

import asyncio
import errno
import logging
from pathlib import Path

import pytest

from bot.kernel.errors import StoreError
from bot.kernel.types import AgentRecord
from bot.store import Database, StoreHealth, StoreState, classify
from bot.store._connect import sqlean


def _sqlite_error(sql: str, *setup: str) -> sqlean.Error:
    conn = sqlean.connect(":memory:")
    for statement in setup:
        conn.execute(statement)
    try:
        conn.execute(sql)
    except sqlean.Error as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError(f"{sql} did not fail")


def test_the_store_s_own_failures_are_told_apart_from_a_statement_s() -> None:
    full = _sqlite_error(
        "INSERT INTO t SELECT randomblob(4000) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
        "WHERE i < 100) SELECT i FROM n)",
        "CREATE TABLE t (x)",
        "PRAGMA max_page_count = 3",
    )
    assert classify(full) is StoreState.DISK_FULL
    assert classify(StoreError("database write failed: …")) is None
    wrapped = StoreError(f"database write failed: {full}")
    wrapped.__cause__ = full
    assert classify(wrapped) is StoreState.DISK_FULL
    assert classify(sqlean.OperationalError("database is locked")) is StoreState.LOCKED
    assert classify(sqlean.DatabaseError("database disk image is malformed")) is StoreState.CORRUPT
    assert classify(sqlean.DatabaseError("file is not a database")) is StoreState.CORRUPT
    assert classify(OSError(errno.ENOSPC, "No space left on device")) is StoreState.DISK_FULL
    constraint = _sqlite_error("INSERT INTO t VALUES (1)", "CREATE TABLE t (x UNIQUE)", "INSERT INTO t VALUES (1)")
    assert classify(constraint) is None  # one statement's problem, not the store's
    assert classify(RuntimeError("the disk is full")) is None  # only the driver's words count


async def test_a_full_file_is_one_error_until_a_write_works_again_then_one_info(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="bot.store")
    async with Database(tmp_path / "t.db") as db:
        store = db.for_agent("a")
        assert await store.create_agent(AgentRecord(id="a", name="A"))
        await store.inbox_put("test", "small", "{}")
        writer = db._writer
        assert writer is not None
        async with writer.execute("PRAGMA page_count") as cur:
            row = await cur.fetchone()
        assert row is not None
        await writer.execute(f"PRAGMA max_page_count = {row[0]}")  # full: not one more page
        changed: list[tuple[StoreState, StoreState]] = []
        db.health.on_change = lambda new, old: changed.append((new, old))
        caplog.clear()
        for n in range(5):
            with pytest.raises(StoreError):
                await store.inbox_put("test", f"big{n}", "x" * 20_000)
        assert db.health.state is StoreState.DISK_FULL and not db.health.writable
        assert "disk is full" in db.health.reason()
        assert len(await store.inbox_pending("test")) == 1  # reads go on
        await writer.execute("PRAGMA max_page_count = 1073741823")  # space given back
        assert await db.health.wait_writable(0.01) is False  # it knows only from a write that works
        await store.inbox_put("test", "big", "x" * 20_000)
        assert db.health.writable and await db.health.wait_writable(0.01)
        # The disk had filled: the log is copied into the file and emptied, giving back what it can.
        async with asyncio.timeout(10):
            while (tmp_path / "t.db-wal").stat().st_size:
                await asyncio.sleep(0.01)
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "bot.store" and r.levelno >= logging.INFO]
    lines = [line for line in lines if "database" in line[1] and "opened" not in line[1] and "closed" not in line[1]]
    assert [level for level, _ in lines] == [logging.ERROR, logging.INFO], lines
    assert "cannot be written: disk full" in lines[0][1] and "free space" in lines[0][1]
    assert "can be written again" in lines[1][1]
    assert changed == [(StoreState.DISK_FULL, StoreState.OK), (StoreState.OK, StoreState.DISK_FULL)]


async def test_a_write_waits_while_the_store_cannot_write_and_gives_up_on_an_error_of_its_own(tmp_path: Path) -> None:
    async with Database(tmp_path / "t.db") as db:
        tries: list[int] = []

        async def full_twice() -> str:
            tries.append(1)
            if len(tries) <= 2:
                db.health.failed(sqlean.OperationalError("database or disk is full"))
                raise StoreError("database write failed: database or disk is full")
            db.health.succeeded()
            return "kept"

        assert await db.health.retry(full_twice) == "kept"
        assert len(tries) == 3

        async def broken() -> None:
            tries.append(1)
            raise ValueError("not the store's")

        tries.clear()
        with pytest.raises(ValueError):
            await db.health.retry(broken)
        assert len(tries) == 3  # a few tries, then the error is the caller's


def test_a_corrupt_file_is_said_once_with_how_to_recover(caplog) -> None:
    health = StoreHealth("/data/troupe.db")
    for _ in range(3):
        assert health.failed(sqlean.DatabaseError("database disk image is malformed"))
        health.read_failed(sqlean.DatabaseError("database disk image is malformed"))
    health.read_failed(sqlean.OperationalError("no such table: nope"))  # a read's own error says nothing
    assert health.state is StoreState.CORRUPT
    assert health.reason() == "the database cannot be written: corrupt (database disk image is malformed)"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert "the database /data/troupe.db is corrupt (database disk image is malformed)" in errors[0]
    assert "sqlite3 /data/troupe.db '.recover'" in errors[0] and "restore your last backup" in errors[0]
    health.succeeded()  # a write that touched no damaged page: still corrupt
    health.failed(sqlean.OperationalError("database or disk is full"))
    assert health.state is StoreState.CORRUPT and len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
