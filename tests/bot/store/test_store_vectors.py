"""The float32 BLOBs vectors are stored as: hygiene (non-finite to 0.0, clamping) and exact round trips."""

from __future__ import annotations

import math
import random
import struct

import pytest

from bot.kernel.errors import EmbeddingDimensionError
from bot.store._vectors import FLOAT32_MAX, clean_vector, decode_vector, encode_vector

from .contract.test_vector_search import float32


def test_encode_then_decode_gives_each_element_s_nearest_float32() -> None:
    rng = random.Random(3)
    values = [rng.uniform(-2, 2) for _ in range(1536)]
    blob = encode_vector(values, 1536)
    assert blob == struct.pack("<1536f", *values)  # little-endian float32, as sqlite-vec reads it
    assert decode_vector(blob) == [float32(x) for x in values]


def test_encode_keeps_digits_beyond_the_sixth_decimal() -> None:
    assert decode_vector(encode_vector([0.1234567, 1e-7], 2)) == [float32(0.1234567), float32(1e-7)]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("where", [0, 200, 383])
def test_a_non_finite_element_anywhere_is_stored_as_zero(bad: float, where: int) -> None:
    values = [0.5] * 384
    values[where] = bad
    assert decode_vector(encode_vector(values, 384)) == [0.0 if i == where else 0.5 for i in range(384)]


def test_finite_elements_beyond_float32_are_clamped_not_infinite() -> None:
    decoded = decode_vector(encode_vector([1e300, -1e39, 0.25, 1e308, 1e308], 5))
    assert decoded == [FLOAT32_MAX, -FLOAT32_MAX, 0.25, FLOAT32_MAX, FLOAT32_MAX]


def test_bytes_that_look_like_an_infinity_across_two_elements_still_encode_exactly() -> None:
    # A tiny subnormal (bytes 01 00 00 00) then a value starting 80 7f: the packed bytes hold the
    # little-endian pattern of +inf (00 00 80 7f) across the two, though neither is infinite.
    tiny = struct.unpack("<f", bytes([1, 0, 0, 0]))[0]
    near_one = struct.unpack("<f", bytes([0x80, 0x7F, 0x80, 0x3F]))[0]
    assert decode_vector(encode_vector([tiny, near_one], 2)) == [tiny, near_one]


def test_clean_vector_zeroes_non_finite_and_clamps_beyond_float32() -> None:
    assert clean_vector([math.nan, -math.inf, 1e300, -1e300, 0.1234567]) == [
        0.0,
        0.0,
        FLOAT32_MAX,
        -FLOAT32_MAX,
        0.1234567,
    ]


def test_encode_refuses_a_vector_of_the_wrong_length() -> None:
    with pytest.raises(EmbeddingDimensionError, match="has 3 dimensions but the active embedding dimension is 4"):
        encode_vector([0.0, 1.0, 2.0], 4)
