"""Embedding vectors: supported dimensions, hygiene, and the float32 BLOB format sqlite-vec reads."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

from bot.errors import EmbeddingDimensionError

__all__ = [
    "DEFAULT_EMBEDDING_DIMENSION",
    "DIMENSION_MAP",
    "check_dimension",
    "clean_vector",
    "decode_vector",
    "encode_vector",
]

#: Vector length -> the ``embeddings`` column that holds vectors of that length.
DIMENSION_MAP: dict[int, str] = {
    384: "dim_384",
    512: "dim_512",
    768: "dim_768",
    1024: "dim_1024",
    1536: "dim_1536",
    3072: "dim_3072",
}

#: The active dimension of an agent that never called ``ensure_embedding_dimension``.
DEFAULT_EMBEDDING_DIMENSION = 384

# Beyond this magnitude ``x * 1e6`` loses the digits the fast rounding relies on.
_FAST_ROUND_LIMIT = 1e9


def check_dimension(dim: int) -> str:
    """The column for vectors of length ``dim``; raises ValueError for an unsupported length."""
    try:
        return DIMENSION_MAP[dim]
    except (KeyError, TypeError):
        supported = ", ".join(str(d) for d in DIMENSION_MAP)
        raise ValueError(f"Unsupported embedding dimension {dim!r}: use one of {supported}") from None


def clean_vector(values: Sequence[float]) -> list[float]:
    """Round every element to 6 decimals and turn NaN/±inf into 0.0 (upstream's vector hygiene)."""
    # A finite sum proves every element is finite, so the common case skips a per-element check.
    if (
        math.isfinite(sum(values))
        and max(values, default=0.0) < _FAST_ROUND_LIMIT
        and min(values, default=0.0) > -_FAST_ROUND_LIMIT
    ):
        # floor(x*1e6 + 0.5)/1e6 is round(x, 6) except possibly on exact decimal ties, and it is six
        # times faster; the result is stored as float32, whose precision is coarser than that anyway.
        floor = math.floor
        return [floor(x * 1e6 + 0.5) / 1e6 for x in values]
    return [round(x, 6) if math.isfinite(x) else 0.0 for x in values]


def encode_vector(values: Sequence[float], expected_dim: int) -> bytes:
    """Clean ``values`` and pack them as little-endian float32; raises EmbeddingDimensionError on a wrong length."""
    if len(values) != expected_dim:
        raise EmbeddingDimensionError(
            f"embedding has {len(values)} dimensions but the active embedding dimension is {expected_dim}: "
            "call ensure_embedding_dimension() with the embedding model's dimension first"
        )
    return struct.pack(f"<{expected_dim}f", *clean_vector(values))


def decode_vector(blob: bytes) -> list[float]:
    """Unpack a float32 BLOB written by :func:`encode_vector`."""
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))
