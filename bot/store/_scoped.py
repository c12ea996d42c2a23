"""The base every part of ``AgentStore`` builds on: the database, the agent, shared helpers."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from bot.store._connect import Connection, Params

if TYPE_CHECKING:  # Database builds AgentStore, which builds on this module
    from bot.store._database import Database

__all__ = ["AgentScoped", "JSON", "json_list", "new_id", "validate_count"]

_log = logging.getLogger(__name__)

JSON = dict[str, Any]


def new_id() -> str:
    """A fresh random UUID string, for rows the caller gave no id."""
    return str(uuid.uuid4())


def json_list(values: Iterable[str]) -> str:
    """A JSON array bound as one parameter and read with ``json_each``: no variable-count limits."""
    return json.dumps(list(values), ensure_ascii=False)


def validate_count(count: int | None, name: str = "count") -> None:
    """Raise ValueError for a negative count, limit or offset."""
    if count is not None and count < 0:
        raise ValueError(f"{name} must be >= 0, not {count}")


class AgentScoped:
    """Holds the shared :class:`Database` and the agent id every query is scoped to."""

    __slots__ = ("_agent_id", "_db")

    def __init__(self, db: Database, agent_id: str) -> None:
        self._db = db
        self._agent_id = agent_id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} agent_id={self._agent_id!r} db={self._db.path!r}>"

    @property
    def agent_id(self) -> str:
        """The agent every read and write of this store is scoped to."""
        return self._agent_id

    @property
    def database(self) -> Database:
        """The shared SQLite database behind this store: for the backend's own tests, not in ``Store``."""
        return self._db

    def shared_reads(self) -> AbstractContextManager[None]:
        """``with store.shared_reads():`` one unit of work (handling one message): within the block,
        and in tasks started inside it, identical reads of rooms, worlds and room state
        share one query, including one still in flight; a write that may have changed what was
        read ends the sharing, so no read returns rows older than troupe's last write. Nested
        blocks join the outermost one. Costs nothing outside the reads it saves."""
        return self._db.shared_reads()

    async def _write_statement(self, sql: str, params: Params, *, tables: Collection[str] | None) -> int:
        """Run one statement as a write transaction of its own, in one trip; returns its rowcount.

        ``tables``: all it may change, cascades included (None: anything); see ``Database.write``.
        """
        return await self._db.write(lambda conn: conn.execute(sql, params).rowcount, tables=tables)

    async def _write_rows(self, sql: str, rows: Sequence[Params], *, tables: Collection[str]) -> None:
        """Run ``sql`` once per row (``executemany``) as one write transaction, in one trip."""
        await self._db.write(lambda conn: _execute_many(conn, sql, rows), tables=tables)

    def _fail(self, what: str, exc: Exception) -> bool:
        # Row contents never go into logs; the driver's message names only the constraint.
        _log.warning("agent %s: %s failed: %s", self._agent_id, what, exc)
        return False


def _execute_many(conn: Connection, sql: str, rows: Sequence[Params]) -> None:
    conn.executemany(sql, rows)
