"""Concurrent writers: many agents on one Database, two Databases and two processes on one file,
and a writer process killed mid-write."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from pathlib import Path

import pytest

from bot.kernel.ids import string_to_uuid
from bot.store import Database, Store
from bot.store._connect import search_text, sqlean

from .conftest import make_memory, seed_agent

WRITER = Path(__file__).with_name("_writer.py")


def _random_vector(rng: random.Random) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(384)]


async def test_five_agents_writing_200_memories_each_at_once_all_land(db: Database) -> None:
    rng = random.Random(1)
    stores: list[tuple[Store, str, str]] = []
    for n in range(5):
        agent = string_to_uuid(f"agent-{n}")
        user, room = string_to_uuid(f"user-{n}"), string_to_uuid(f"room-{n}")
        stores.append((await seed_agent(db, agent, users=(user,), rooms=(room,)), user, room))
    writes = [
        store.create_memory(make_memory(f"m{i}", room=room, entity=user, embedding=_random_vector(rng)), "messages")
        for i in range(200)
        for store, user, room in stores
    ]
    ids = await asyncio.gather(*writes)
    assert len(set(ids)) == 1000
    for store, _, room in stores:
        assert await store.count_memories(room, "messages", unique=False) == 200
    assert (await db.fetchone("SELECT count(*) FROM embeddings"))[0] == 1000  # type: ignore[index]


async def test_two_databases_on_one_file_write_concurrently_without_locking_errors(db_path: Path) -> None:
    a_id, b_id = string_to_uuid("agent-1"), string_to_uuid("agent-2")
    async with Database(db_path) as first, Database(db_path) as second:
        a = await seed_agent(first, a_id, users=("u1",), rooms=("r1",))
        b = await seed_agent(second, b_id, users=("u2",), rooms=("r2",))
        rng = random.Random(2)
        writes = []
        for i in range(150):
            writes.append(
                a.create_memory(make_memory(f"a{i}", room="r1", entity="u1", embedding=_random_vector(rng)), "messages")
            )
            writes.append(
                b.create_memory(make_memory(f"b{i}", room="r2", entity="u2", embedding=_random_vector(rng)), "messages")
            )
        await asyncio.gather(*writes)
        # Each sees the other's rows: they share the file.
        assert await first.for_agent(b_id).count_memories("r2", "messages", unique=False) == 150
        assert await second.for_agent(a_id).count_memories("r1", "messages", unique=False) == 150


async def _spawn_writer(path: Path, tag: str, count: int) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(WRITER),
        str(path),
        string_to_uuid(f"proc-{tag}"),
        f"room-{tag}",
        f"user-{tag}",
        str(count),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_another_process_writing_the_same_file_never_sees_database_is_locked(db_path: Path) -> None:
    async with Database(db_path) as db:
        store = await seed_agent(db, string_to_uuid("parent"), users=("pu",), rooms=("pr",))
        proc = await _spawn_writer(db_path, "child", 300)
        assert proc.stdout is not None
        assert (await asyncio.wait_for(proc.stdout.readline(), timeout=30)).startswith(b"ok")  # child is writing now
        rng = random.Random(3)
        for i in range(150):
            await store.create_memory(
                make_memory(f"p{i}", room="pr", entity="pu", embedding=_random_vector(rng)), "messages"
            )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
        assert proc.returncode == 0, err.decode()
        assert out.decode().splitlines()[-1] == "done"
        assert await store.count_memories("pr", "messages", unique=False) == 150
        child = db.for_agent(string_to_uuid("proc-child"))
        assert len(await child.get_memories(table="messages")) == 300 - len([n for n in range(300) if n % 7 == 3])


def _check_consistent(path: Path) -> int:
    conn = sqlean.connect(str(path))
    # The keyword index reads the text through troupe's folding function, as troupe's connections do.
    conn.create_function("troupe_search_text", 1, search_text, deterministic=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        orphans = conn.execute(
            "SELECT count(*) FROM embeddings e LEFT JOIN memories m ON m.id = e.memory_id WHERE m.id IS NULL"
        ).fetchone()[0]
        assert orphans == 0
        # The keyword index matches the memories exactly ('integrity-check' raises otherwise).
        conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
        indexed = conn.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0]
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        assert indexed == memories
        return int(memories)
    finally:
        conn.close()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("rounds", [3])
async def test_a_writer_killed_mid_write_leaves_a_consistent_file(db_path: Path, rounds: int) -> None:
    survivors = 0
    for round_ in range(rounds):
        # Each round kills the writer at a different moment, on the file the last round left.
        proc = await _spawn_writer(db_path, "victim", 0)
        assert proc.stdout is not None
        committed = 0
        while committed < 40 + 15 * round_:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout=30)
            assert line, (await proc.stderr.read()).decode() if proc.stderr else "writer exited"
            committed = int(line.split()[1])
        await asyncio.sleep(0.01 * round_)
        os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
        assert proc.returncode == -signal.SIGKILL

        before = survivors
        survivors = _check_consistent(db_path)
        assert survivors >= before + committed - len([n for n in range(committed) if n % 7 == 3])

    # The file opens normally afterwards and keeps working.
    async with Database(db_path) as db:
        store = db.for_agent(string_to_uuid("proc-victim"))
        assert len(await store.get_memories(table="messages")) == survivors
        await store.create_memory(make_memory("after", room="room-victim", entity="user-victim"), "messages")
    assert _check_consistent(db_path) == survivors + 1
