"""Placement: which characters this daemon serves, when several daemons share one troupe.

Every character is leased (``agent:<id>``, see ``bot/store/_leases.py``), and so is every
daemon's own presence (``daemon:<id>``, renewed as its heartbeat). Each round — a third of the
lease time — a daemon:

1. renews its presence; if it cannot, it is cut off from the others and lets every character go;
2. counts the daemons alive and works out its share: the characters divided by the daemons,
   the remainder one each to the first daemons by id, so shares add up and differ by one at most;
3. renews the leases it holds, and stops a character at once when its lease could not be renewed
   (another daemon may take it as soon as it expires);
4. hands over what it holds beyond its share (it stops the character, then releases the lease,
   so the next owner starts as soon as this one has finished), and takes free characters while
   it holds less than its share, preferring the ones whose hash places them nearest to it, so
   daemons do not all reach for the same ones.

With a single daemon (SQLite, or one machine on PostgreSQL) it simply holds everything.
The host (the daemon) starts and stops characters; placement only decides, through
:class:`PlacementHost`, and runs those starts and stops in the background, one after another for
each character, so a start that takes seconds never delays the renewal of a lease. A lease that runs out between rounds (the process was paused) is seen
at the next round, and ``Lease.valid()`` already refuses to act on it before then.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import logging
from collections.abc import Collection, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.background import BackgroundTasks
from bot.store import Lease, Leases

__all__ = ["AGENT_PREFIX", "DAEMON_PREFIX", "Placement", "PlacementHost", "Round"]

_log = logging.getLogger(__name__)

AGENT_PREFIX = "agent:"
DAEMON_PREFIX = "daemon:"


class PlacementHost(Protocol):
    """What placement asks of the daemon."""

    async def serve(self, agent_id: str, lease: Lease) -> None:
        """Start serving ``agent_id`` under ``lease`` (returns once it is started or failed)."""
        ...

    async def stop_serving(self, agent_id: str) -> None:
        """Stop serving ``agent_id`` (returns once it has stopped sending)."""
        ...


class Change(enum.Enum):
    TAKEN = "taken"
    KEPT = "kept"
    LOST = "lost"  # its lease could not be renewed: stopped at once
    HANDED_OVER = "handed over"  # beyond this daemon's share: stopped, then released


@dataclass(slots=True)
class Round:
    """What one round did, for logs and tests."""

    alive: int = 0
    share: int = 0
    changes: dict[str, Change] = field(default_factory=dict)

    def ids(self, change: Change) -> list[str]:
        return sorted(agent for agent, c in self.changes.items() if c is change)


class Placement:
    """This daemon's part of the troupe's characters. Call :meth:`step` every :attr:`interval`
    seconds (:meth:`run` does), and :meth:`leave` when the daemon stops."""

    def __init__(
        self,
        leases: Leases,
        host: PlacementHost,
        daemon_id: str,
        agent_ids: Iterable[str],
        *,
        ttl_s: float = 10.0,
    ) -> None:
        if not ttl_s > 0:
            raise ValueError(f"the lease time must be more than 0 seconds, not {ttl_s!r}")
        self._leases = leases
        self._host = host
        self.daemon_id = daemon_id
        self.agent_ids = sorted(set(agent_ids))
        self.ttl_s = ttl_s
        self._presence: Lease | None = None
        self._held: dict[str, Lease] = {}
        # Handed over, still stopping: its replies in flight may go out until it is released.
        self._leaving: dict[str, Lease] = {}
        # Starting or stopping a character takes seconds (its plugins, its platforms): each runs
        # in the background, after the previous one of the same character, so a round never
        # waits for them and leases are renewed on time however long a start takes.
        self._changes: dict[str, asyncio.Task[None]] = {}
        self._tasks = BackgroundTasks("troupe:placement")

    @property
    def interval(self) -> float:
        """Seconds between rounds: a third of the lease time, so one late round is no loss."""
        return self.ttl_s / 3

    def lease_of(self, agent_id: str) -> Lease | None:
        """The lease this daemon may act on for ``agent_id``: held, or handed over and not yet released."""
        return self._held.get(agent_id) or self._leaving.get(agent_id)

    async def run(self) -> None:
        """Rounds until cancelled; a round that fails (the database is away) is logged and the
        next one tries again while the leases still hold."""
        while True:
            try:
                await self.step()
            except Exception as exc:  # the database is unreachable: leases run out on their own
                _log.warning("placement: this round failed (%s); trying again in %.1f s", exc, self.interval)
                await self._drop_expired()
            await asyncio.sleep(self.interval)

    async def step(self) -> Round:
        """One round (see the module docstring)."""
        result = Round()
        if not await self._keep_presence():
            for agent_id in list(self._held):
                await self._lose(agent_id, result)
            return result
        records = await self._leases.records()
        alive = sorted(
            {r.owner for r in records if r.name.startswith(DAEMON_PREFIX) and r.expires_in > 0} | {self.daemon_id}
        )
        result.alive = len(alive)
        result.share = _share(len(self.agent_ids), alive, self.daemon_id)
        for agent_id, lease in list(self._held.items()):
            renewed = await self._leases.renew(lease, self.ttl_s) if agent_id in self.agent_ids else None
            if renewed is None:
                await self._lose(agent_id, result)
            else:
                self._held[agent_id] = renewed
                result.changes[agent_id] = Change.KEPT
        for agent_id in self._surplus(len(self._held) - result.share):
            await self._hand_over(agent_id, result)
        if len(self._held) < result.share:
            held_elsewhere = {
                r.name.removeprefix(AGENT_PREFIX)
                for r in records
                if r.name.startswith(AGENT_PREFIX) and r.expires_in > 0 and r.owner != self.daemon_id
            }
            for agent_id in self._by_affinity(
                a for a in self.agent_ids if a not in self._held and a not in held_elsewhere
            ):
                if len(self._held) >= result.share:
                    break
                taken = await self._leases.acquire(AGENT_PREFIX + agent_id, self.daemon_id, self.ttl_s)
                if taken is None:
                    continue  # another daemon was quicker
                self._held[agent_id] = taken
                result.changes[agent_id] = Change.TAKEN
                self._then(agent_id, self._host.serve(agent_id, taken))
        if result.changes and any(c is not Change.KEPT for c in result.changes.values()):
            _log.info(
                "placement: %d daemons alive, share %d; serving %d (taken %s, lost %s, handed over %s)",
                result.alive,
                result.share,
                len(self._held),
                result.ids(Change.TAKEN) or "-",
                result.ids(Change.LOST) or "-",
                result.ids(Change.HANDED_OVER) or "-",
            )
        return result

    async def settled(self) -> None:
        """Return once every start and stop asked for so far has finished."""
        while pending := [task for task in self._changes.values() if not task.done()]:
            await asyncio.wait(pending)

    async def leave(self) -> None:
        """Stop serving everything and release every lease (a graceful handover, on SIGTERM)."""
        for agent_id in list(self._held):
            await self._hand_over(agent_id, Round())
        await self.settled()
        await self._tasks.close()
        if self._presence is not None:
            await self._leases.release(self._presence)
            self._presence = None

    # -- helpers ----------------------------------------------------------------------------

    async def _keep_presence(self) -> bool:
        name = DAEMON_PREFIX + self.daemon_id
        if self._presence is not None:
            self._presence = await self._leases.renew(self._presence, self.ttl_s)
        if self._presence is None:
            self._presence = await self._leases.acquire(name, self.daemon_id, self.ttl_s)
        return self._presence is not None

    async def _lose(self, agent_id: str, result: Round) -> None:
        self._held.pop(agent_id, None)
        result.changes[agent_id] = Change.LOST
        _log.warning("placement: lost the lease of %s; stopping it", agent_id)
        self._then(agent_id, self._host.stop_serving(agent_id))  # its fence already stops its sending

    async def _hand_over(self, agent_id: str, result: Round) -> None:
        lease = self._held.pop(agent_id)
        self._leaving[agent_id] = lease
        result.changes[agent_id] = Change.HANDED_OVER

        async def stop_then_release() -> None:
            try:
                await self._host.stop_serving(agent_id)  # stopped first: the next owner never overlaps
            finally:
                self._leaving.pop(agent_id, None)
            await self._leases.release(lease)

        self._then(agent_id, stop_then_release())

    def _then(self, agent_id: str, change: Coroutine[Any, Any, None]) -> None:
        """Run ``change`` in the background once the character's previous change has finished."""
        previous = self._changes.get(agent_id)

        async def in_turn() -> None:
            if previous is not None and not previous.done():
                await asyncio.wait([previous])
            await change

        self._changes[agent_id] = self._tasks.start(in_turn(), f"{agent_id[:8]}")

    async def _drop_expired(self) -> None:
        """After a failed round: stop what can no longer be acted on."""
        for agent_id, lease in list(self._held.items()):
            if not lease.valid():
                await self._lose(agent_id, Round())

    def _surplus(self, count: int) -> list[str]:
        """The ``count`` held characters to hand over: those least attached to this daemon."""
        if count <= 0:
            return []
        return list(reversed(self._by_affinity(self._held)))[:count]

    def _by_affinity(self, agent_ids: Iterable[str] | Collection[str]) -> list[str]:
        """``agent_ids`` nearest to this daemon first (rendezvous hashing): daemons prefer
        different characters, and a character tends to return to the same daemon."""
        return sorted(agent_ids, key=lambda agent_id: _weight(self.daemon_id, agent_id), reverse=True)


def _share(characters: int, alive: list[str], daemon_id: str) -> int:
    """This daemon's share: the characters divided by the daemons alive, the remainder going one
    each to the first daemons by id, so the shares add up and differ by one at most."""
    base, extra = divmod(characters, len(alive))
    return base + (1 if alive.index(daemon_id) < extra else 0)


def _weight(daemon_id: str, agent_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{daemon_id}\x00{agent_id}".encode(), digest_size=8).digest(), "big")
