"""The base every part of ``AgentStore`` builds on: the database, the agent, shared helpers."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from bot.store._agent_scope import Scoped
from bot.store._connect import Connection, Params

if TYPE_CHECKING:  # Database builds AgentStore, which builds on this module
    from bot.store._database import Database  # noqa: F401  # named in the base class below, as a string

__all__ = ["AgentScoped", "json_list", "new_id", "validate_count"]


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


class AgentScoped(Scoped["Database"]):
    """The SQLite store's base: :class:`Scoped` and the writer's helpers."""

    __slots__ = ()

    async def _write_statement(self, sql: str, params: Params, *, tables: Collection[str] | None) -> int:
        """Run one statement as a write transaction of its own, in one trip; returns its rowcount.

        ``tables``: all it may change, cascades included (None: anything); see ``Database.write``.
        """
        return await self._db.write(lambda conn: conn.execute(sql, params).rowcount, tables=tables)

    async def _write_rows(self, sql: str, rows: Sequence[Params], *, tables: Collection[str]) -> None:
        """Run ``sql`` once per row (``executemany``) as one write transaction, in one trip."""
        await self._db.write(lambda conn: _execute_many(conn, sql, rows), tables=tables)


def _execute_many(conn: Connection, sql: str, rows: Sequence[Params]) -> None:
    conn.executemany(sql, rows)
