"""Compacting old memories on PostgreSQL (the core plugin's retention task), as SQLite's
(``bot/store/_retention.py``): count per room, read the oldest, swap them for one summary in a
single transaction only if every one of them is still there."""

from __future__ import annotations

from collections.abc import Sequence

from bot.errors import StoreError
from bot.store._memories import MEMORY_COLUMNS
from bot.store._rows import row_to_memory
from bot.store._scoped import new_id, validate_count
from bot.store.postgres._memories import CREATE_VECTOR, INSERT_MEMORY, PgMemoriesMixin, json_text, pg_vector
from bot.types import Memory, now_ms

__all__ = ["PgRetentionMixin"]


class PgRetentionMixin(PgMemoriesMixin):
    """Compaction of old memories: counting them per room, reading the oldest, replacing them."""

    __slots__ = ()

    async def retention_counts(self, table: str, *, before: int | None = None) -> dict[str, tuple[int, int]]:
        """As SQLite's: per room, (memories of ``table``, of those created before ``before`` ms or 0)."""
        if not table:
            raise ValueError("a memory table name is required (e.g. 'messages')")
        rows = await self._db.fetchall(
            "SELECT room_id, count(*) AS n, count(*) FILTER (WHERE created_at < %s) AS old FROM memories "
            "WHERE agent_id = %s AND type = %s AND room_id IS NOT NULL GROUP BY room_id",
            (-1 if before is None else before, self._agent_id, table),
        )
        return {r["room_id"]: (int(r["n"]), int(r["old"])) for r in rows}

    async def get_oldest_memories(self, table: str, room_id: str, count: int) -> list[Memory]:
        """As SQLite's: the oldest ``count`` of the room's memories of ``table``, without embeddings."""
        validate_count(count)
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = %s AND m.type = %s AND m.room_id = %s "
            "ORDER BY m.created_at, m.seq LIMIT %s",
            (self._agent_id, table, room_id, count),
        )
        return [row_to_memory(r) for r in rows]

    async def compact_memories(self, summary: Memory, table: str, replaced_ids: Sequence[str]) -> int:
        """As SQLite's: ``summary`` in for ``replaced_ids`` in one transaction, only if every one is
        still there (else 0); how many went. StoreError if the summary's id is taken already."""
        if not table:
            raise ValueError("a memory table name is required (e.g. 'summaries')")
        ids = list(dict.fromkeys(replaced_ids))
        if not ids:
            raise ValueError("compact_memories needs the ids of the memories the summary replaces")
        dim = await self.get_embedding_dimension()
        vector = pg_vector(summary.embedding, dim) if summary.embedding is not None else None
        summary_id = summary.id or new_id()
        now = now_ms()
        row = self._memory_row(
            summary, table, summary_id, True, now, json_text(summary.content or {}), json_text(summary.metadata or {})
        )
        async with self._db.transaction() as conn:
            # Locked until the commit: a forget or an edit by another daemon either finished
            # before (and the batch is found changed) or waits for this one.
            cur = await conn.execute(
                "SELECT id FROM memories WHERE agent_id = %s AND id = ANY(%s) FOR UPDATE", (self._agent_id, ids)
            )
            if len(await cur.fetchall()) != len(ids):
                return 0
            cur = await conn.execute(INSERT_MEMORY, row)
            if cur.rowcount != 1:  # as SQLite's plain INSERT: the batch stays if the summary cannot be written
                raise StoreError(f"UNIQUE constraint failed: memories.id ({summary_id} is stored already)")
            if vector is not None:
                await conn.execute(CREATE_VECTOR, (new_id(), summary_id, vector, now))
            cur = await conn.execute("DELETE FROM memories WHERE agent_id = %s AND id = ANY(%s)", (self._agent_id, ids))
            return cur.rowcount
