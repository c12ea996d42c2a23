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

from bot.kernel.errors import StoreError
from bot.kernel.types import Memory, now_ms
from bot.store._dialect import Step, Unit
from bot.store._memories import INSERT_MEMORY, MEMORY_COLUMNS, MEMORY_TABLES, MemoriesMixin, memory_json
from bot.store._rows import row_to_memory
from bot.store._scoped import new_id, validate_count

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
        rows = await self._rows(
            "SELECT room_id, count(*) AS n, count(*) FILTER (WHERE created_at < ?) AS old FROM memories "
            "WHERE agent_id = ? AND type = ? AND room_id IS NOT NULL GROUP BY room_id",
            (-1 if before is None else before, self._agent_id, table),
        )
        return {r["room_id"]: (int(r["n"]), int(r["old"])) for r in rows}

    async def get_oldest_memories(self, table: str, room_id: str, count: int) -> list[Memory]:
        """The oldest ``count`` memories of ``table`` in ``room_id``, oldest first, without embeddings."""
        validate_count(count)
        rows = await self._rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = ? AND m.type = ? AND m.room_id = ? "
            "ORDER BY m.created_at, m.seq LIMIT ?",
            (self._agent_id, table, room_id, count),
        )
        return [row_to_memory(r, self._payloads) for r in rows]

    async def compact_memories(self, summary: Memory, table: str, replaced_ids: Sequence[str]) -> int:
        """Store ``summary`` in ``table`` and delete the memories it replaces, in one transaction.

        Only if every one of ``replaced_ids`` is still one of this agent's memories: otherwise
        nothing is written and 0 is returned (read the batch again). Returns how many memories
        were deleted. ``summary`` is stored as unique, with its embedding if it has one. Raises
        EmbeddingDimensionError for a vector of the wrong length, StoreError if the summary's id
        is stored already, ValueError without ids.
        """
        if not table:
            raise ValueError("a memory table name is required (e.g. 'summaries')")
        ids = list(dict.fromkeys(replaced_ids))
        if not ids:
            raise ValueError("compact_memories needs the ids of the memories the summary replaces")
        dim = await self.get_embedding_dimension()
        vector = self._vector(summary.embedding, dim) if summary.embedding is not None else None
        summary_id = summary.id or new_id()
        now = now_ms()
        row = self._memory_row(summary, table, summary_id, True, now, memory_json(summary, self._to_json))
        wanted = self.dialect.id_list(ids)

        def work() -> Unit[int]:
            # Locked until the commit on PostgreSQL: a forget or an edit by another daemon either
            # finished before (and the batch is found changed) or waits for this one.
            present = yield Step(
                "SELECT id FROM memories WHERE {scan_agent}agent_id = ? AND id {in_list}{for_update}",
                (self._agent_id, wanted),
            )
            if len(present.rows) != len(ids):
                return 0
            if (yield Step(INSERT_MEMORY, row)).rowcount != 1:
                # As SQLite's plain INSERT: the batch stays if the summary cannot be written.
                raise StoreError(f"UNIQUE constraint failed: memories.id ({summary_id} is stored already)")
            if vector is not None:
                yield Step(self._store_vector(dim, replace=False), (new_id(), summary_id, vector, now))
            done = yield Step(
                "DELETE FROM memories WHERE {scan_agent}agent_id = ? AND id {in_list}", (self._agent_id, wanted)
            )
            return done.rowcount

        return await self._write(work, tables=MEMORY_TABLES)
