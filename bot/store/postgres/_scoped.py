"""``PgScoped``: the base every part of the PostgreSQL agent store builds on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.store._agent_scope import Scoped

if TYPE_CHECKING:  # PostgresDatabase builds PgAgentStore, which builds on this module
    from bot.store.postgres._database import PostgresDatabase  # noqa: F401  # named in the base class below

__all__ = ["PgScoped"]


class PgScoped(Scoped["PostgresDatabase"]):
    """The PostgreSQL store's base: the database and the agent (see :class:`Scoped`)."""

    __slots__ = ()

    async def _write_rows(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        """Run ``sql`` once per row as one transaction (all rows or none), pipelined in one trip."""
        async with self._db.transaction() as conn, conn.cursor() as cur:
            await cur.executemany(sql, rows)
