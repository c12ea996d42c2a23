"""Where PostgreSQL keeps memories' vectors: the hooks of :class:`~bot.store._memories.MemoriesMixin`.

A memory's vectors are pgvector values in ``embeddings``, one row per memory and dimension
(``dim``, generated from the vector), where SQLite keeps one column per dimension.

The active dimension lives in ``meta`` (the key SQLite uses) and is read by every call that
needs it, inside the statement where it can be: an agent served by this daemon now may have
been served by another one a minute ago, so a copy kept in this process could be stale.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from bot.store._dialect import Step
from bot.store._memories import MemoriesMixin, MemoryFilter, nearest_hits
from bot.store._rows import Row
from bot.store._vectors import DEFAULT_EMBEDDING_DIMENSION, check_dimension, dimension_key, encode_vector
from bot.store.postgres._scoped import PgScoped

__all__ = ["PgMemoriesMixin", "pg_vector", "similarity_hits", "vector_list"]

_log = logging.getLogger(__name__)

#: A vector as the pgvector adapter sends it (float32, cleaned as SQLite's are).
PgVector = np.ndarray[Any, np.dtype[np.float32]]

# The agent's active dimension inside a statement (parameters: the meta key, the default).
_ACTIVE_DIM = "coalesce((SELECT value::integer FROM meta WHERE key = ?), ?)"
# A memory another daemon wrote first (the same message id) keeps its row and vector.
_INSERT_VECTOR = "INSERT INTO embeddings (id, memory_id, embedding, created_at) VALUES (?, ?, ?, ?)"
_CREATE_VECTOR = f"{_INSERT_VECTOR} ON CONFLICT (memory_id, dim) DO NOTHING"
_UPSERT_VECTOR = f"{_INSERT_VECTOR} ON CONFLICT (memory_id, dim) DO UPDATE SET embedding = excluded.embedding"


def pg_vector(values: Sequence[float], dim: int) -> PgVector:
    """``values`` cleaned and checked as SQLite stores them (:func:`encode_vector`), for pgvector.

    Raises EmbeddingDimensionError for a wrong length.
    """
    return np.frombuffer(encode_vector(values, dim), dtype="<f4")


def vector_list(value: Any) -> list[float] | None:
    """A pgvector value read back (``pgvector.Vector``) as the floats of its float32 elements."""
    return None if value is None else list(value.to_list())


def similarity_hits(rows: Sequence[Row], threshold: float | None = None) -> list[tuple[int, float]]:
    """(seq, similarity) of nearest-neighbour rows (``seq``, ``distance``), as :func:`nearest_hits`."""
    pairs = [(r["seq"], None if math.isnan(r["distance"]) else 1.0 - r["distance"]) for r in rows]
    return nearest_hits(pairs, threshold)


class _TemplateFilter(MemoryFilter):
    __slots__ = ()
    UNIQUE = "m.is_unique"


class PgMemoriesMixin(MemoriesMixin, PgScoped):
    """The ``memories`` and ``embeddings`` tables (the keyword index is a column of ``memories``)."""

    __slots__ = ()

    memory_filter = _TemplateFilter

    async def ensure_embedding_dimension(self, dim: int) -> None:
        """Make ``dim`` this agent's active embedding dimension, stored in ``meta`` (see
        :meth:`MemoriesMixin.ensure_embedding_dimension`)."""
        check_dimension(dim)
        changed = await self._db.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value "
            "WHERE meta.value IS DISTINCT FROM excluded.value",
            (dimension_key(self._agent_id), str(dim)),
        )
        if changed:
            _log.info("agent %s: embedding dimension is now %d", self._agent_id, dim)

    async def get_embedding_dimension(self) -> int:
        """This agent's active embedding dimension (384 until ensure_embedding_dimension is called)."""
        row = await self._row(f"SELECT {_ACTIVE_DIM} AS dim", self._dim_params())
        return int(row["dim"]) if row else DEFAULT_EMBEDDING_DIMENSION

    def _dim_params(self) -> tuple[str, int]:
        return dimension_key(self._agent_id), DEFAULT_EMBEDDING_DIMENSION

    def _vector(self, values: Sequence[float], dim: int) -> PgVector:
        return pg_vector(values, dim)

    def _store_vector(self, dim: int, *, replace: bool) -> str:
        return _UPSERT_VECTOR if replace else _CREATE_VECTOR

    async def _vector_join(self) -> tuple[str, Sequence[object]]:
        join = f", e.embedding FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id AND e.dim = {_ACTIVE_DIM}"
        return join, self._dim_params()

    def _read_vector(self, value: object) -> list[float] | None:
        return vector_list(value)

    def _nearest_step(self, vector: object, dim: int, where: MemoryFilter) -> Step:
        return Step(self._nearest_sql(where), (vector, *where.params, dim, 1))

    def _hits(self, rows: Sequence[Row]) -> list[tuple[int, float]]:
        return similarity_hits(rows)

    @staticmethod
    def _nearest_sql(where: MemoryFilter, columns: str = "m.seq") -> str:
        """Exact search (a template): ``columns`` and the cosine ``distance`` of every pre-filtered
        vector of the dimension, best first (parameters: the query, the filter's, the dimension, the count).

        The distance is on the column itself, not on a cast to one dimension as an HNSW index
        would be, so the planner never answers it from an index (see ``_search``). A zero
        vector's distance is NaN, which sorts after every number, as SQLite's NULL similarity does.
        """
        return (
            f"SELECT {columns}, e.embedding <=> ? AS distance FROM memories m "
            f"JOIN embeddings e ON e.memory_id = m.id WHERE {where.where} AND e.dim = ? "
            "ORDER BY distance, m.created_at DESC, m.seq DESC LIMIT ?"
        )
