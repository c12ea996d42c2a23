"""Database lifecycle: open/close, misuse, pragmas, sqlite-vec, transactions."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import sqlite_vec

from bot.kernel.errors import StoreError, VectorExtensionError
from bot.kernel.types import AgentRecord
from bot.store import SCHEMA_VERSION, Database
from bot.store._connect import begin_immediate, sqlean

from .conftest import A, R, U, make_memory, seed_agent


async def test_open_creates_parent_directories_and_the_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "troupe.db"
    async with Database(path) as db:
        assert path.exists()
        assert db.is_open
        assert db.schema_version == SCHEMA_VERSION
        assert db.path == str(path)


async def test_connections_use_wal_foreign_keys_busy_timeout_and_normal_sync(db: Database) -> None:
    for pragma, expected in (("journal_mode", "wal"), ("foreign_keys", 1), ("busy_timeout", 5000), ("synchronous", 1)):
        row = await db.fetchone(f"PRAGMA {pragma}")
        assert row is not None and row[0] == expected, pragma
    async with db.transaction() as conn:
        for pragma, expected in (("foreign_keys", 1), ("busy_timeout", 5000), ("synchronous", 1)):
            async with conn.execute(f"PRAGMA {pragma}") as cur:
                row = await cur.fetchone()
                assert row is not None and row[0] == expected, pragma


async def test_vector_backend_is_sqlite_vec_with_versions_reported(db: Database) -> None:
    assert db.vector_backend == "sqlite-vec"
    assert db.sqlite_version.startswith("3.")
    assert tuple(int(p) for p in db.sqlite_version.split(".")[:2]) >= (3, 45)
    assert db.vec_version.startswith("v0.")


async def test_open_twice_raises_runtime_error_naming_the_state(db: Database) -> None:
    with pytest.raises(RuntimeError, match="it is open"):
        await db.open()


async def test_open_after_close_raises_runtime_error_naming_the_state(db_path: Path) -> None:
    db = Database(db_path)
    await db.open()
    await db.close()
    with pytest.raises(RuntimeError, match="it is closed"):
        await db.open()


async def test_use_before_open_raises_runtime_error_naming_the_state(db_path: Path) -> None:
    db = Database(db_path)
    with pytest.raises(RuntimeError, match="not open yet: call open"):
        await db.for_agent(A).get_agents()
    with pytest.raises(RuntimeError, match="not open yet"):
        async with db.transaction():
            pass


async def test_use_after_close_raises_runtime_error_naming_the_state(db_path: Path) -> None:
    db = Database(db_path)
    await db.open()
    store = db.for_agent(A)
    await db.close()
    with pytest.raises(RuntimeError, match="is closed"):
        await store.get_agent()
    with pytest.raises(RuntimeError, match="is closed"):
        await store.create_agent(AgentRecord(id=A, name="a"))


async def test_close_twice_and_close_before_open_are_harmless(db_path: Path) -> None:
    db = Database(db_path)
    await db.close()
    await db.close()
    assert not db.is_open
    db2 = Database(db_path)
    await db2.open()
    await asyncio.gather(db2.close(), db2.close())
    await db2.close()
    assert "closed" in repr(db2)


async def test_close_waits_for_a_running_transaction(db: Database) -> None:
    store = db.for_agent(A)
    order: list[str] = []

    async def writer() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO agents (id, name) VALUES (?, ?)", (A, "a"))
            await asyncio.sleep(0.05)
            order.append("committed")

    task = asyncio.create_task(writer())
    await asyncio.sleep(0.01)
    await db.close()
    order.append("closed")
    await task
    assert order == ["committed", "closed"]
    async with Database(db.path) as again:
        assert await again.for_agent(A).get_agent() is not None
    del store


async def test_in_memory_database_works_with_a_single_connection() -> None:
    async with Database(":memory:") as db:
        store = await seed_agent(db, A, users=(U,), rooms=(R,))
        memory_id = await store.create_memory(make_memory("in memory"), "messages")
        assert (await store.get_memory(memory_id)) is not None
        # A read issued while another coroutine's write transaction is open does not see it.
        started = asyncio.Event()

        async def slow_write() -> None:
            async with db.transaction() as conn:
                await conn.execute("UPDATE agents SET name = 'renamed' WHERE id = ?", (A,))
                started.set()
                await asyncio.sleep(0.02)
                raise RuntimeError("abort")

        task = asyncio.create_task(slow_write())
        await started.wait()
        agent = await store.get_agent()
        assert agent is not None and agent.name != "renamed"
        with pytest.raises(RuntimeError, match="abort"):
            await task


async def test_reads_do_not_wait_for_a_write_transaction(db: Database) -> None:
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    release = asyncio.Event()
    inside = asyncio.Event()

    async def long_write() -> None:
        async with db.transaction() as conn:
            await conn.execute("UPDATE agents SET name = 'uncommitted' WHERE id = ?", (A,))
            inside.set()
            await release.wait()

    task = asyncio.create_task(long_write())
    await inside.wait()
    agent = await asyncio.wait_for(store.get_agent(), timeout=2)  # would hang if reads queued behind writes
    assert agent is not None and agent.name != "uncommitted"
    release.set()
    await task
    agent = await store.get_agent()
    assert agent is not None and agent.name == "uncommitted"


async def test_missing_sqlite_vec_raises_vector_extension_error_saying_what_to_install(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_vec, "loadable_path", lambda: str(db_path.parent / "no-such-vec0"))
    db = Database(db_path)
    with pytest.raises(VectorExtensionError, match="install the 'sqlean-py' and 'sqlite-vec' packages"):
        await db.open()
    assert not db.is_open
    monkeypatch.undo()
    await db.open()  # a failed open leaves the Database unopened, so it can be retried
    await db.close()


async def test_transaction_rolls_back_everything_when_the_block_raises(db: Database) -> None:
    with pytest.raises(RuntimeError, match="midway"):
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO agents (id, name) VALUES (?, ?)", (A, "a"))
            raise RuntimeError("failed midway")
    assert await db.fetchall("SELECT * FROM agents") == []


async def test_transaction_turns_driver_errors_into_store_error_and_rolls_back(db: Database) -> None:
    with pytest.raises(StoreError, match="UNIQUE constraint failed"):
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO agents (id, name) VALUES (?, ?)", (A, "a"))
            await conn.execute("INSERT INTO agents (id, name) VALUES (?, ?)", (A, "again"))
    assert await db.fetchall("SELECT * FROM agents") == []


async def test_cancelled_transaction_rolls_back_and_the_next_one_works(db: Database) -> None:
    inside = asyncio.Event()

    async def write() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO agents (id, name) VALUES (?, ?)", (A, "a"))
            inside.set()
            await asyncio.sleep(10)

    task = asyncio.create_task(write())
    await inside.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await db.fetchall("SELECT * FROM agents") == []
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO agents (id, name) VALUES (?, ?)", (A, "b"))
    assert len(await db.fetchall("SELECT * FROM agents")) == 1


async def test_store_calls_inside_a_transaction_block_raise_instead_of_deadlocking(db: Database) -> None:
    store = db.for_agent(A)
    with pytest.raises(RuntimeError, match="not reentrant"):
        async with db.transaction():
            await store.create_agent(AgentRecord(id=A, name="a"))


async def test_begin_retries_when_the_database_is_locked() -> None:
    class FlakyConnection:
        calls = 0

        async def execute(self, sql: str) -> None:
            FlakyConnection.calls += 1
            if FlakyConnection.calls < 3:
                raise sqlean.OperationalError("database is locked")

    await begin_immediate(FlakyConnection())  # type: ignore[arg-type]
    assert FlakyConnection.calls == 3


async def test_begin_gives_up_after_bounded_retries() -> None:
    class LockedConnection:
        async def execute(self, sql: str) -> None:
            raise sqlean.OperationalError("database is locked")

    with pytest.raises(sqlean.OperationalError, match="locked"):
        await begin_immediate(LockedConnection())  # type: ignore[arg-type]


def test_for_agent_rejects_an_empty_agent_id(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non-empty agent id"):
        Database(tmp_path / "x.db").for_agent("")


async def test_a_file_that_is_not_a_database_raises_store_error_naming_it(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(
        StoreError, match=rf"the database {re.escape(str(db_path))} is corrupt \(file is not a database\)"
    ):
        async with Database(db_path):
            pass


async def test_close_while_opening_raises_runtime_error(db_path: Path) -> None:
    db = Database(db_path)
    opening = asyncio.create_task(db.open())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="while it is opening"):
        await db.close()
    await opening
    await db.close()
