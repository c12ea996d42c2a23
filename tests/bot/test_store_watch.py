"""While the database cannot write, the daemon says so wherever the operator looks: ``/readyz``
(not ready, with the reason), ``troupe status``, systemd's status line and the metrics; the log
has one ERROR when it starts and one INFO when it ends, however many writes fail between."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.config.character import load_characters
from bot.config.settings import DaemonSettings
from bot.daemon.control import format_status
from bot.daemon.daemon import Daemon
from bot.daemon.systemd import Notifier
from bot.kernel.errors import StoreError

from ..store_faults import DISK_FULL, StoreFault
from .test_daemon import fake_platform, write

__all__ = ["fake_platform"]


class _Recorder(Notifier):
    def __init__(self) -> None:
        super().__init__({})
        self.lines: list[str] = []

    def send(self, *assignments: str) -> bool:
        self.lines += [a.removeprefix("STATUS=") for a in assignments if a.startswith("STATUS=")]
        return True


async def test_a_store_that_cannot_write_is_not_ready_and_says_why_everywhere(
    tmp_path: Path, fake_platform, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    caplog.set_level(logging.INFO)
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    notifier = _Recorder()
    daemon = Daemon(
        DaemonSettings(db_path=tmp_path / "d.db"),
        load_characters([write(tmp_path, "A", ["fakechat"])], environ=environ),
        environ,
        notifier=notifier,
    )
    task = asyncio.create_task(daemon.run())
    async with asyncio.timeout(10):
        while not daemon.readiness()[0]:
            await asyncio.sleep(0.01)
    metrics = daemon.metrics.render()
    assert "troupe_store_writable 1" in metrics and 'troupe_store_state{cause="ok"} 1' in metrics
    store = daemon.runtimes[0].store
    fault = StoreFault(monkeypatch, DISK_FULL)
    fault.failing = True
    for n in range(5):  # five messages' worth of failed writes
        with pytest.raises(StoreError):
            await store.inbox_put("fakechat", str(n), "{}")

    ready, reasons = daemon.readiness()
    assert not ready and reasons == ["the database cannot be written: disk full (database or disk is full)"]
    status = daemon.status()
    assert status["store"] == {"state": "disk full", "detail": "database or disk is full"}
    assert "the database cannot write: disk full (database or disk is full)" in format_status(dict(status))
    assert notifier.lines[-1].startswith("database cannot write (disk full); 1 agent running")
    metrics = daemon.metrics.render()
    assert "troupe_store_writable 0" in metrics
    assert 'troupe_store_state{cause="disk full"} 1' in metrics and 'troupe_store_state{cause="ok"} 0' in metrics

    fault.failing = False
    await store.inbox_put("fakechat", "again", "{}")
    assert daemon.readiness() == (True, [])
    assert daemon.status()["store"] == {"state": "ok", "detail": ""}
    assert not notifier.lines[-1].startswith("database")
    assert "troupe_store_writable 1" in daemon.metrics.render()
    told = [r for r in caplog.records if r.levelno >= logging.WARNING or "written again" in r.getMessage()]
    assert [(r.levelname, r.name) for r in told] == [("ERROR", "bot.store"), ("INFO", "bot.store")]
    daemon.stop()
    assert await asyncio.wait_for(task, 10) == 0
