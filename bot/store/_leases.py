"""Leases: which daemon serves which character (or bot connection) now, and fencing.

Several daemons can share one troupe (PostgreSQL). Each character's bots must be served by
exactly one of them at a time, and a daemon that lost a character — it was paused past its
lease (SIGSTOP), or cut off from the database — must not send anything as that character once
another may have taken over. A lease says who may:

- ``name``: what is leased, e.g. ``agent:<id>`` (or one Discord shard of it);
- ``owner``: the daemon holding it;
- ``epoch``: grows by one each time the lease changes hands, never goes back (a fencing token:
  work stamped with an older epoch is refused);
- an expiry in the *database's* clock, so daemons on machines whose clocks disagree still agree.

The holder also keeps a local deadline on its own monotonic clock, counted from *before* it
asked for the lease or its renewal: the database's expiry is always later than that deadline,
so ``Lease.valid()`` turning false is the last safe moment to stop. The monotonic clock keeps
counting while a process is stopped, so a daemon resuming after a SIGSTOP finds its leases
invalid before it can send anything.

``LocalLeases`` serves a single process (SQLite: one daemon per database file); the PostgreSQL
backend's leases are shared by every daemon (``bot/store/postgres/_leases.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

__all__ = ["Lease", "LeaseRecord", "Leases", "LocalLeases", "validate_ttl"]


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease as its holder sees it."""

    name: str
    owner: str
    epoch: int
    #: On the holder's monotonic clock: before this, nobody else can hold the lease.
    deadline: float

    def valid(self, now: float | None = None) -> bool:
        """Whether the holder may still act on it (strictly before its local deadline)."""
        return (time.monotonic() if now is None else now) < self.deadline

    def remaining(self, now: float | None = None) -> float:
        """Seconds left before :meth:`valid` turns false (0 once it has)."""
        return max(0.0, self.deadline - (time.monotonic() if now is None else now))


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """A lease as the database has it, for ``troupe status``."""

    name: str
    owner: str
    epoch: int
    #: Seconds until it expires, by the database's clock (negative: expired that long ago).
    expires_in: float
    #: Seconds since it last changed hands.
    held_for: float


def validate_ttl(ttl_s: float) -> None:
    if not ttl_s > 0:
        raise ValueError(f"a lease lasts more than 0 seconds, not {ttl_s!r}")


@runtime_checkable
class Leases(Protocol):
    """The leases of one troupe."""

    async def acquire(self, name: str, owner: str, ttl_s: float) -> Lease | None:
        """Take ``name`` for ``owner`` for ``ttl_s`` seconds if nobody holds it (or its holder's
        time ran out); the new holder's epoch is one more than the last. None if someone else
        holds it."""
        ...

    async def renew(self, lease: Lease, ttl_s: float) -> Lease | None:
        """Extend ``lease`` by ``ttl_s`` from now if it is still held, by the same owner, at the
        same epoch, and not expired; None otherwise (the holder must stop acting on it)."""
        ...

    async def release(self, lease: Lease) -> bool:
        """Give ``lease`` up at once (a graceful handover); False if it was no longer held.
        Its epoch stays, so the next holder's is higher."""
        ...

    async def records(self, prefix: str = "") -> list[LeaseRecord]:
        """Every lease whose name starts with ``prefix``, held or not, by name."""
        ...


@dataclass(slots=True)
class _Held:
    owner: str
    epoch: int
    expires: float  # this process's monotonic clock
    since: float


class LocalLeases:
    """Leases within one process: for a database only one daemon uses (SQLite)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[str, _Held] = {}

    async def acquire(self, name: str, owner: str, ttl_s: float) -> Lease | None:
        validate_ttl(ttl_s)
        now = self._clock()
        held = self._held.get(name)
        if held is not None and held.expires > now:
            return None
        epoch = held.epoch + 1 if held is not None else 1
        self._held[name] = _Held(owner, epoch, now + ttl_s, now)
        return Lease(name, owner, epoch, now + ttl_s)

    async def renew(self, lease: Lease, ttl_s: float) -> Lease | None:
        validate_ttl(ttl_s)
        now = self._clock()
        held = self._held.get(lease.name)
        if held is None or (held.owner, held.epoch) != (lease.owner, lease.epoch) or held.expires <= now:
            return None
        held.expires = now + ttl_s
        return replace(lease, deadline=now + ttl_s)

    async def release(self, lease: Lease) -> bool:
        now = self._clock()
        held = self._held.get(lease.name)
        if held is None or (held.owner, held.epoch) != (lease.owner, lease.epoch) or held.expires <= now:
            return False
        held.expires = now
        return True

    async def records(self, prefix: str = "") -> list[LeaseRecord]:
        now = self._clock()
        return [
            LeaseRecord(name, held.owner, held.epoch, held.expires - now, now - held.since)
            for name, held in sorted(self._held.items())
            if name.startswith(prefix)
        ]
