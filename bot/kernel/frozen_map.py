"""A read-only mapping that copies and pickles: the ``extra`` keys of typed payloads.

``types.MappingProxyType`` is read-only too, but cannot be deep-copied or pickled, and a
payload is both (a test's snapshot, a task handed to a worker).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

__all__ = ["FrozenMap", "NOTHING"]


class FrozenMap(Mapping[str, object]):
    """The keys and values it was made with, never changed in place."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, object] | None = None) -> None:
        self._data = dict(data or ())

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple[type[FrozenMap], tuple[dict[str, object]]]:
        return (FrozenMap, (self._data,))


NOTHING: Final[FrozenMap] = FrozenMap()
