"""A SQLite store that cannot write, on demand: each write transaction fails as SQLite fails it
when the disk is full (or the file is locked, corrupt …), at the store's boundary, so a test
runs the real daemon and platform paths without a small disk to fill."""

from __future__ import annotations

from typing import Any

import pytest

from bot.store import _access, _connect
from bot.store._batch import Batch
from bot.store._connect import sqlean

__all__ = ["DISK_FULL", "LOCKED", "StoreFault"]

DISK_FULL = "database or disk is full"
LOCKED = "database is locked"


class StoreFault:
    """While :attr:`failing` is set, every write of every SQLite ``Database`` fails with
    ``sqlean.OperationalError(error)``; reads work. :attr:`refused` counts the writes refused."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, error: str = DISK_FULL) -> None:
        self.error = error
        self.failing = False
        self.refused = 0
        transact, begin = _access.DatabaseAccess._transact, _connect.begin_immediate
        fault = self

        async def failing_transact(db: Any, conn: Any, record: Batch) -> None:
            if fault.failing:
                fault.refused += 1
                record.error = sqlean.OperationalError(fault.error)
                return
            await transact(db, conn, record)

        async def failing_begin(conn: Any) -> None:
            if fault.failing:
                fault.refused += 1
                raise sqlean.OperationalError(fault.error)
            await begin(conn)

        monkeypatch.setattr(_access.DatabaseAccess, "_transact", failing_transact)
        monkeypatch.setattr(_access, "begin_immediate", failing_begin)
