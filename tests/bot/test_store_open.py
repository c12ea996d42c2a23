"""Opening the database at start: a file another process holds locked (a backup, ``sqlite3`` at a
shell) is waited for up to TROUPE_STORE_WAIT_S, not exit 78 — systemd never restarts a unit
after 78 —; past the bound the daemon exits 75 (systemd starts it again) and says why; a corrupt
file says so and how to recover, in one message, exit 78, no traceback."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config.character import load_characters
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from bot.kernel.errors import EXIT_CONFIG, EXIT_TEMPFAIL
from bot.store import Database
from bot.store._connect import sqlean

from .test_daemon import fake_platform, write

__all__ = ["fake_platform"]


async def _locked(path: Path) -> sqlean.Connection:
    """The database at ``path``, made, then held write-locked by another connection (as ``sqlite3``
    at a shell holds it inside ``BEGIN IMMEDIATE``)."""
    async with Database(path):
        pass
    holder = sqlean.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO meta (key, value) VALUES ('held', 'by a backup')")
    return holder


def _daemon(tmp_path: Path, **settings: float) -> Daemon:
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    results = load_characters([write(tmp_path, "A", ["fakechat"])], environ=environ)
    return Daemon(DaemonSettings(db_path=tmp_path / "d.db", **settings), results, environ)


async def test_a_database_locked_at_start_is_waited_for_then_the_daemon_starts(
    tmp_path: Path, fake_platform, caplog
) -> None:
    caplog.set_level(logging.INFO)
    holder = await _locked(tmp_path / "d.db")
    daemon = _daemon(tmp_path, store_wait_s=120)
    task = asyncio.create_task(daemon.run())
    async with asyncio.timeout(30):
        while "is locked by another process" not in caplog.text:
            await asyncio.sleep(0.02)
    assert not task.done()
    holder.execute("COMMIT")  # the backup is done
    holder.close()
    async with asyncio.timeout(60):
        while daemon.state != "running":
            assert not task.done(), task.result()
            await asyncio.sleep(0.02)
    assert "waiting for it up to 120 s (TROUPE_STORE_WAIT_S)" in caplog.text
    assert "the database is no longer locked; starting" in caplog.text
    daemon.stop()
    assert await asyncio.wait_for(task, 10) == 0


async def test_a_lock_held_past_the_bound_exits_75_and_says_what_to_do(tmp_path: Path, fake_platform, caplog) -> None:
    holder = await _locked(tmp_path / "d.db")
    try:
        assert await asyncio.wait_for(_daemon(tmp_path, store_wait_s=0.5).run(), 60) == EXIT_TEMPFAIL
    finally:
        holder.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "still locked after 0.5 s (TROUPE_STORE_WAIT_S)" in errors[0]
    assert "fuser" in errors[0] and not any(r.exc_info for r in caplog.records)


def test_a_corrupt_database_says_so_and_how_to_recover(
    tmp_path: Path, fake_platform, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "d.db"
    db.write_bytes(b"this is not what troupe wrote " * 400)
    monkeypatch.setenv("TROUPE_DB_PATH", str(db))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    monkeypatch.chdir(tmp_path)
    assert main(["start", str(write(tmp_path, "A", ["fakechat"]))]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"the database {db} is corrupt" in err
    assert "restore your last backup" in err and f"sqlite3 {db} '.recover' | sqlite3 {db}.new" in err
    assert "Traceback" not in err
