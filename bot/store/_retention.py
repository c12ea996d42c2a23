"""Compacting old memories (the core plugin's retention task).

:meth:`RetentionMixin.retention_counts` says how many memories each room holds and how many are
old, :meth:`~RetentionMixin.get_oldest_memories` reads the oldest, and
:meth:`~RetentionMixin.compact_memories` swaps them for one summary in a single transaction — only
if every one of them is still there, so a batch that changed meanwhile (an edit racing a ``troupe
memory forget``) is never half-replaced. Inspecting and forgetting what is stored are
``_inspection`` and ``_forgetting``.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.store._connect import Connection
from bot.store._memories import MEMORY_COLUMNS, MemoriesMixin
from bot.store._rows import row_to_memory
from bot.store._scoped import json_list, new_id, validate_count
from bot.store._vectors import encode_vector
from bot.types import Memory, now_ms

__all__ = ["RetentionMixin"]


class RetentionMixin(MemoriesMixin):
    """Compaction of old memories: counting them per room, reading the oldest, replacing them."""

    __slots__ = ()

    async def retention_counts(self, table: str, *, before: int | None = None) -> dict[str, tuple[int, int]]:
        """Per room of this agent holding memories of ``table``: (how many, how many created before ``before``).

        ``before`` is a time in ms; without it the second number is 0.
        """
        if not table:
            raise ValueError("a memory table name is required (e.g. 'messages')")
        rows = await self._db.fetchall(
            "SELECT room_id, count(*), coalesce(sum(created_at < ?), 0) FROM memories "
            "WHERE agent_id = ? AND type = ? AND room_id IS NOT NULL GROUP BY room_id",
            (-1 if before is None else before, self._agent_id, table),
        )
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    async def get_oldest_memories(self, table: str, room_id: str, count: int) -> list[Memory]:
        """The oldest ``count`` memories of ``table`` in ``room_id``, oldest first, without embeddings."""
        validate_count(count)
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = ? AND m.type = ? AND m.room_id = ? "
            "ORDER BY m.created_at, m.seq LIMIT ?",
            (self._agent_id, table, room_id, count),
        )
        return [row_to_memory(r) for r in rows]

    async def compact_memories(self, summary: Memory, table: str, replaced_ids: Sequence[str]) -> int:
        """Store ``summary`` in ``table`` and delete the memories it replaces, in one transaction.

        Only if every one of ``replaced_ids`` is still one of this agent's memories: otherwise
        nothing is written and 0 is returned (read the batch again). Returns how many memories
        were deleted. ``summary`` is stored as unique, with its embedding if it has one. Raises
        EmbeddingDimensionError for a vector of the wrong length, ValueError without ids.
        """
        if not table:
            raise ValueError("a memory table name is required (e.g. 'summaries')")
        ids = list(dict.fromkeys(replaced_ids))
        if not ids:
            raise ValueError("compact_memories needs the ids of the memories the summary replaces")
        dim, column = await self._active_column()
        blob = encode_vector(summary.embedding, dim) if summary.embedding is not None else None
        summary_id = summary.id or new_id()
        row = self._memory_row(summary, table, summary_id, True, now_ms())
        wanted = json_list(ids)

        def work(conn: Connection) -> int:
            present = conn.execute(
                "SELECT count(*) FROM memories WHERE +agent_id = ? AND id IN (SELECT value FROM json_each(?))",
                (self._agent_id, wanted),
            ).fetchone()[0]
            if present != len(ids):
                return 0
            conn.execute(
                "INSERT INTO memories (id, type, created_at, content, entity_id, agent_id, room_id, world_id, "
                "is_unique, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            if blob is not None:
                conn.execute(
                    f"INSERT INTO embeddings (id, memory_id, {column.name}, created_at) VALUES (?, ?, ?, ?)",
                    (new_id(), summary_id, blob, now_ms()),
                )
            return int(
                conn.execute(
                    "DELETE FROM memories WHERE +agent_id = ? AND id IN (SELECT value FROM json_each(?))",
                    (self._agent_id, wanted),
                ).rowcount
            )

        return await self._db.write(work, tables=("memories", "embeddings", "memories_fts"))
