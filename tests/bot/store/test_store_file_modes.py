"""The database is private to its owner whatever the umask: other local users must not read messages."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.kernel.errors import StoreError
from bot.store import Database

from .conftest import A, R, U, make_memory, seed_agent


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)  # the usual login umask, under which SQLite makes 0644 files
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


async def test_data_directory_is_0700_and_database_wal_and_shm_are_0600_under_umask_022(
    tmp_path: Path, umask_022: None
) -> None:
    path = tmp_path / "data" / "troupe.db"
    async with Database(path) as db:
        store = await seed_agent(db, A, users=(U,), rooms=(R,))
        await store.create_memory(make_memory("a private message"), "messages")
        assert mode(path.parent) == 0o700
        for name in ("troupe.db", "troupe.db-wal", "troupe.db-shm"):
            assert (path.parent / name).exists(), name
            assert mode(path.parent / name) == 0o600, name


async def test_an_existing_world_readable_database_is_made_private(tmp_path: Path, umask_022: None) -> None:
    path = tmp_path / "troupe.db"
    async with Database(path):
        pass
    os.chmod(path, 0o644)  # what earlier versions left behind
    async with Database(path) as db:
        await seed_agent(db, A, users=(U,), rooms=(R,))
        assert mode(path) == 0o600
        assert mode(tmp_path / "troupe.db-wal") == 0o600


async def test_an_existing_data_directory_keeps_its_mode(tmp_path: Path, umask_022: None) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    async with Database(shared / "troupe.db"):
        pass
    assert mode(shared) == 0o755  # not ours to change (a systemd StateDirectory=, say)
    assert mode(shared / "troupe.db") == 0o600


async def test_a_data_directory_that_cannot_be_created_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match=r"cannot open database .*file/data/troupe\.db: .*File exists"):
        async with Database(blocker / "data" / "troupe.db"):
            pass
