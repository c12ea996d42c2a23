"""The errors troupe raises.

::

    TroupeError                      root of everything troupe raises on purpose
    ├── ConfigError                  bad configuration; the daemon exits with status 78
    │   ├── CharacterError           one character file is wrong (file, problems)
    │   └── SecretReferenceError     an ``env:``/``file:``/``credential:`` reference cannot be resolved
    └── StoreError                   the database cannot be used
        ├── SchemaVersionError       the file was written by a newer troupe
        ├── VectorExtensionError     sqlite-vec could not be loaded
        └── EmbeddingDimensionError  a vector of the wrong length for the active column

Messages say what is wrong and what to do. They never contain a secret value.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CharacterError",
    "ConfigError",
    "EXIT_CONFIG",
    "EmbeddingDimensionError",
    "Problem",
    "SchemaVersionError",
    "SecretReferenceError",
    "StoreError",
    "TroupeError",
    "VectorExtensionError",
]

#: ``EX_CONFIG`` from sysexits.h; systemd units use it to stop restart loops.
EXIT_CONFIG = 78


class TroupeError(Exception):
    """Root of every error troupe raises on purpose."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class ConfigError(TroupeError):
    """Configuration that cannot work; the daemon exits with :data:`EXIT_CONFIG`."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a character file."""

    path: str
    """JSON path of the field, such as ``$.settings.secrets.OPENAI_API_KEY``; ``$`` for the file."""
    message: str
    """What is wrong and what to do about it."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class CharacterError(ConfigError):
    """A character file has one or more problems."""

    __slots__ = ("source", "problems")

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{source}:\n{lines}")


class SecretReferenceError(ConfigError):
    """A secret given as a reference (``env:NAME``, ``file:/path``, ``credential:NAME``) cannot be resolved."""

    __slots__ = ("reference",)

    def __init__(self, reference: str, reason: str) -> None:
        self.reference = reference
        super().__init__(f"cannot resolve secret reference {reference!r}: {reason}")


class StoreError(TroupeError):
    """The database cannot be opened or used."""

    __slots__ = ()


class SchemaVersionError(StoreError):
    """The database was written by a newer version of troupe."""

    __slots__ = ()


class VectorExtensionError(StoreError):
    """sqlite-vec could not be loaded into SQLite."""

    __slots__ = ()


class EmbeddingDimensionError(StoreError, ValueError):
    """A vector's length does not match the store's active embedding dimension."""

    __slots__ = ()
