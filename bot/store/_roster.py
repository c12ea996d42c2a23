"""The roster: what each daemon of a troupe tells the others about itself, for ``troupe status``.

Several daemons can share one troupe (PostgreSQL). Leases say who serves what
(``bot/store/_leases.py``); the roster says what a lease cannot: each daemon's host, pid, start
time and version, and for each character file it has, the character's name, the file's path on
that machine, a fingerprint of its content and the state of its agent there. A daemon publishes
its entry when it starts, on every reload and at every placement round (which refreshes
``seen_s``, its heartbeat); comparing the fingerprints shows a file that differs between
machines. Rows of daemons gone for long are pruned.

A fingerprint leaves secrets out (see ``bot/cluster/roster.py``): nothing derived from a secret is
written to the database.

``LocalRoster`` serves a single process (SQLite); the PostgreSQL backend's roster is shared by
every daemon (``bot/store/postgres/_roster.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "APPLICATION_PREFIX",
    "CharacterFile",
    "DaemonEntry",
    "DaemonRecord",
    "LocalRoster",
    "Roster",
    "application_name",
]

#: PostgreSQL connections of a daemon are named ``troupe:<daemon id>`` (pg_stat_activity).
APPLICATION_PREFIX = "troupe:"
# PostgreSQL keeps the first NAMEDATALEN - 1 bytes of an application_name.
_NAME_BYTES = 63


def application_name(daemon_id: str) -> str:
    """The ``application_name`` of ``daemon_id``'s connections, as PostgreSQL keeps it (cut to 63 bytes)."""
    return (APPLICATION_PREFIX + daemon_id).encode()[:_NAME_BYTES].decode(errors="ignore")


@dataclass(frozen=True, slots=True)
class CharacterFile:
    """One character file as one daemon has it."""

    name: str
    #: Where the file is on that daemon's machine.
    file: str
    #: The file's content, hashed without its secrets: equal on two machines when the files agree.
    fingerprint: str
    #: The state of its agent on that daemon (``running``, ``failed``…), or "" when it does not serve it.
    state: str = ""


@dataclass(frozen=True, slots=True)
class DaemonEntry:
    """What one daemon publishes about itself."""

    id: str
    host: str
    pid: int
    version: str
    #: When it started, in milliseconds since the epoch (its own clock).
    started_at: int
    #: Its character files, by agent id.
    characters: Mapping[str, CharacterFile] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DaemonRecord:
    """A daemon's entry as the troupe sees it."""

    entry: DaemonEntry
    #: Seconds since it last published (its heartbeat), by the database's clock.
    seen_s: float


@runtime_checkable
class Roster(Protocol):
    """The daemons of one troupe."""

    async def publish(self, entry: DaemonEntry) -> None:
        """Write ``entry`` in place of the daemon's previous one; counts as its heartbeat."""
        ...

    async def records(self) -> list[DaemonRecord]:
        """Every daemon's latest entry, by id."""
        ...

    async def remove(self, daemon_id: str) -> bool:
        """Forget a daemon (it stopped); False if it was not there."""
        ...

    async def prune(self, gone_s: float) -> int:
        """Forget the daemons not seen for ``gone_s`` seconds; how many."""
        ...

    async def connections(self) -> dict[str, int]:
        """Database connections open now per ``application_name`` (see :func:`application_name`);
        empty where the database has no such thing (SQLite)."""
        ...


class LocalRoster:
    """The roster within one process: for a database only one daemon uses (SQLite)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[str, tuple[DaemonEntry, float]] = {}

    async def publish(self, entry: DaemonEntry) -> None:
        self._entries[entry.id] = (entry, self._clock())

    async def records(self) -> list[DaemonRecord]:
        now = self._clock()
        return [DaemonRecord(entry, now - seen) for _, (entry, seen) in sorted(self._entries.items())]

    async def remove(self, daemon_id: str) -> bool:
        return self._entries.pop(daemon_id, None) is not None

    async def prune(self, gone_s: float) -> int:
        now = self._clock()
        gone = [daemon_id for daemon_id, (_, seen) in self._entries.items() if now - seen > gone_s]
        for daemon_id in gone:
            del self._entries[daemon_id]
        return len(gone)

    async def connections(self) -> dict[str, int]:
        return {}
