"""Embedding vectors: where each length is stored, hygiene, and the float32 BLOB format sqlite-vec reads."""

from __future__ import annotations

import math
import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from bot.kernel.errors import EmbeddingDimensionError

__all__ = [
    "DEFAULT_EMBEDDING_DIMENSION",
    "DIMENSION_MAP",
    "FLOAT32_MAX",
    "MAX_DIMENSION",
    "OTHER_DIMENSIONS",
    "VectorColumn",
    "check_dimension",
    "clean_vector",
    "decode_vector",
    "dimension_key",
    "encode_vector",
]

#: Vector length -> the SQLite ``embeddings`` column that holds vectors of that length only.
DIMENSION_MAP: dict[int, str] = {
    384: "dim_384",
    512: "dim_512",
    768: "dim_768",
    1024: "dim_1024",
    1536: "dim_1536",
    3072: "dim_3072",
}

#: The SQLite ``embeddings`` column of a vector of any other length (schema version 9): searched
#: exactly, among the vectors of the query's length (the BLOB's length tells it).
OTHER_DIMENSIONS = "dim_other"

#: The longest vector stored: pgvector's limit for a ``vector``, so both backends take the same.
MAX_DIMENSION = 16000

#: The active dimension of an agent that never called ``ensure_embedding_dimension``.
DEFAULT_EMBEDDING_DIMENSION = 384

#: The largest finite float32: larger finite values are stored as this, with their sign.
FLOAT32_MAX = 3.4028234663852886e38

_BIG_ENDIAN = sys.byteorder == "big"
# A finite value beyond float32's range packs as an infinity: these bytes reveal one.
_INFINITIES = (struct.pack("<f", math.inf), struct.pack("<f", -math.inf))


@dataclass(frozen=True, slots=True)
class VectorColumn:
    """Where SQLite keeps vectors of one length: a column of their own, or :data:`OTHER_DIMENSIONS`
    shared by every other length (told apart by the BLOB's length)."""

    dim: int
    name: str
    """The ``embeddings`` column a vector of this length is written to."""

    @property
    def shared(self) -> bool:
        return self.name == OTHER_DIMENSIONS

    def value(self, alias: str = "e") -> str:
        """SQL: the vector of this length of row ``alias``, NULL when it has none."""
        column = f"{alias}.{self.name}"
        return f"(CASE WHEN length({column}) = {4 * self.dim:d} THEN {column} END)" if self.shared else column

    def present(self, alias: str = "e") -> str:
        """SQL: whether row ``alias`` holds a vector of this length."""
        column = f"{alias}.{self.name}"
        return f"length({column}) = {4 * self.dim:d}" if self.shared else f"{column} IS NOT NULL"

    def absent(self, alias: str = "e") -> str:
        """SQL: whether row ``alias`` (possibly none, through a LEFT JOIN) has no vector of this length."""
        column = f"{alias}.{self.name}"
        return f"({column} IS NULL OR length({column}) <> {4 * self.dim:d})" if self.shared else f"{column} IS NULL"


def check_dimension(dim: int) -> VectorColumn:
    """Where vectors of length ``dim`` are stored; raises ValueError for a length no store takes.

    Any length from 1 to :data:`MAX_DIMENSION`: those of :data:`DIMENSION_MAP` have a column of
    their own, the others share :data:`OTHER_DIMENSIONS`.
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_DIMENSION:
        raise ValueError(f"Unsupported embedding dimension {dim!r}: use a length from 1 to {MAX_DIMENSION}")
    return VectorColumn(dim, DIMENSION_MAP.get(dim, OTHER_DIMENSIONS))


def dimension_key(agent_id: str) -> str:
    """The ``meta`` key under which a store keeps ``agent_id``'s active embedding dimension."""
    return f"embedding_dimension:{agent_id}"


def clean_vector(values: Sequence[float]) -> list[float]:
    """NaN and ±inf become 0.0 (upstream's vector hygiene); finite values beyond float32 are clamped.

    Upstream also rounds every element to 6 decimals; troupe stores float32 (about 7 significant
    digits) and skips that, which cost a Python float operation per element of every vector.
    """
    return [min(max(x, -FLOAT32_MAX), FLOAT32_MAX) if math.isfinite(x) else 0.0 for x in values]


def encode_vector(values: Sequence[float], expected_dim: int) -> bytes:
    """Clean ``values`` and pack them as little-endian float32; raises EmbeddingDimensionError on a wrong length."""
    if len(values) != expected_dim:
        raise EmbeddingDimensionError(
            f"embedding has {len(values)} dimensions but the active embedding dimension is {expected_dim}: "
            "call ensure_embedding_dimension() with the embedding model's dimension first"
        )
    # The common case at C speed: a finite sum proves every element finite (NaN or an infinity
    # makes it NaN or infinite), and no infinity in the packed bytes proves all fit float32.
    # Otherwise (or on a chance match of those bytes across elements) clean element by element.
    if math.isfinite(sum(values)):
        packed = _pack(values)
        if not any(inf in packed for inf in _INFINITIES):
            return packed
    return _pack(clean_vector(values))


def _pack(values: Sequence[float]) -> bytes:
    packed = array("f", values)
    if _BIG_ENDIAN:
        packed.byteswap()
    return packed.tobytes()


def decode_vector(blob: bytes) -> list[float]:
    """Unpack a float32 BLOB written by :func:`encode_vector`."""
    values = array("f", blob)
    if _BIG_ENDIAN:
        values.byteswap()
    return values.tolist()
