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
   it holds less than its share.

Characters that share rooms (companions, ``bot/cluster/companions.py``) are kept on one daemon where
the shares allow, so the troupe's one decision per message stays within one process: a daemon
takes the companions of what it holds first, then whole groups, and hands over whole groups;
a free character more tied to another daemon that has room is left to that one for a round or
two. Among equals, rendezvous hashing on the group's key makes daemons reach for different
groups and a group tend to return to the same daemon. Where shares split a group, each part
decides for itself.

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
import time
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.cluster.companions import Companions
from bot.kernel.background import BackgroundTasks, next_round
from bot.store import Lease, LeaseRecord, Leases, RoomSharing

__all__ = [
    "AGENT_PREFIX",
    "DAEMON_PREFIX",
    "Placement",
    "PlacementHost",
    "Round",
    "SHARD_PREFIX",
    "lease_name",
    "shard_unit",
    "split_unit",
    "unit_of",
]

_log = logging.getLogger(__name__)

AGENT_PREFIX = "agent:"
SHARD_PREFIX = "shard:"
DAEMON_PREFIX = "daemon:"
_SHARD_MARK = "#"


def shard_unit(agent_id: str, shard: int) -> str:
    """The unit of one Discord shard (1 and up) of a sharded character; the character's own
    unit, its agent id, carries everything else (its runtime's home, other platforms, shard 0)."""
    return f"{agent_id}{_SHARD_MARK}{shard}"


def split_unit(unit: str) -> tuple[str, int | None]:
    """``(agent id, shard)`` of a unit; shard None for the character's own unit."""
    agent_id, mark, shard = unit.partition(_SHARD_MARK)
    return agent_id, int(shard) if mark else None


def lease_name(unit: str) -> str:
    agent_id, shard = split_unit(unit)
    return AGENT_PREFIX + agent_id if shard is None else f"{SHARD_PREFIX}{agent_id}:{shard}"


def unit_of(name: str) -> str | None:
    """The unit a lease name is for; None for other leases (a daemon's presence)."""
    if name.startswith(AGENT_PREFIX):
        return name.removeprefix(AGENT_PREFIX)
    if name.startswith(SHARD_PREFIX):
        agent_id, _, shard = name.removeprefix(SHARD_PREFIX).rpartition(":")
        return shard_unit(agent_id, int(shard)) if shard.isdigit() and agent_id else None
    return None


#: How often the rooms characters share are read again (they change slowly).
_COMPANIONS_EVERY_S = 60.0
#: Rounds a free character is left to a daemon more tied to it before any daemon takes it (that
#: daemon may be slow, or may not have this character's file at all).
_PATIENCE_ROUNDS = 2
#: Rounds a unit stays free, every daemon at its share, before a daemon serves it beyond its share.
_STRAY_ROUNDS = 4


class RoomSharingSource(Protocol):
    """Where placement learns which characters share rooms (the store backend)."""

    async def room_sharing(self) -> list[RoomSharing]: ...


class PlacementHost(Protocol):
    """What placement asks of the daemon."""

    async def serve(self, unit: str, lease: Lease) -> None:
        """Start serving ``unit`` (a character, or one Discord shard of it: :func:`split_unit`)
        under ``lease``; returns once it is started or failed."""
        ...

    async def stop_serving(self, unit: str) -> None:
        """Stop serving ``unit`` (returns once it has stopped sending)."""
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
        units: Iterable[str],
        *,
        ttl_s: float = 10.0,
        sharing: RoomSharingSource | None = None,
    ) -> None:
        if not ttl_s > 0:
            raise ValueError(f"the lease time must be more than 0 seconds, not {ttl_s!r}")
        self._leases = leases
        self._host = host
        self.daemon_id = daemon_id
        #: What this daemon may serve: each character's id, and ``shard_unit(id, k)`` for the
        #: Discord shards 1 and up of a sharded one; each is leased on its own.
        self.units = sorted(set(units))
        self.ttl_s = ttl_s
        self._presence: Lease | None = None
        self._held: dict[str, Lease] = {}
        # Handed over, still stopping: sending stays allowed (the lease is still this daemon's,
        # and renewed) so replies under way finish instead of being left to the next owner.
        self._leaving: dict[str, Lease] = {}
        # Starting or stopping a character takes seconds (its plugins, its platforms): each runs
        # in the background, after the previous one of the same character, so a round never
        # waits for them and leases are renewed on time however long a start takes.
        self._changes: dict[str, asyncio.Task[None]] = {}
        self._tasks = BackgroundTasks("troupe:placement")
        self._sharing = sharing
        self._companions = Companions()
        self._companions_due = 0.0
        self._free_rounds: dict[str, int] = {}  # free characters: for how many rounds in a row
        self._strays: set[str] = set()  # served beyond the share: nobody else took them

    @property
    def interval(self) -> float:
        """Seconds between rounds: a third of the lease time, so one late round is no loss."""
        return self.ttl_s / 3

    def lease_of(self, unit: str) -> Lease | None:
        """The lease this daemon serves ``unit`` under (also while handing it over)."""
        return self._held.get(unit) or self._leaving.get(unit)

    def leases_of(self, agent_id: str) -> list[Lease]:
        """The leases of every unit of ``agent_id`` this daemon serves (also while handing over)."""
        return list(self.held_of(agent_id).values())

    def held_of(self, agent_id: str) -> dict[str, Lease]:
        """By unit, the leases of ``agent_id`` this daemon serves (also while handing over)."""
        return {
            unit: lease
            for held in (self._held, self._leaving)
            for unit, lease in held.items()
            if split_unit(unit)[0] == agent_id
        }

    async def run(self) -> None:
        """Rounds until cancelled; a round that fails (the database is away) is logged and the
        next one tries again while the leases still hold."""
        failing = False
        while True:
            try:
                await self.step()
            except Exception as exc:  # the database is unreachable: leases run out on their own
                # Said once per outage, not every round (a third of the lease time).
                log = _log.debug if failing else _log.warning
                log("placement: this round failed (%s); trying again every %.1f s", exc, self.interval)
                failing = True
                await self._drop_expired()
            else:
                if failing:
                    _log.info("placement: the rounds succeed again")
                failing = False
            await next_round(self.interval)

    async def step(self) -> Round:
        """One round (see the module docstring)."""
        result = Round()
        if not await self._keep_presence():
            self._leaving.clear()  # their stops are under way; sending ends with the renewals
            for unit in list(self._held):
                await self._lose(unit, result)
            return result
        records = await self._leases.records()
        alive = sorted(
            {r.owner for r in records if r.name.startswith(DAEMON_PREFIX) and r.expires_in > 0} | {self.daemon_id}
        )
        result.alive = len(alive)
        result.share = _share(len(self.units), alive, self.daemon_id)
        for unit, lease in list(self._leaving.items()):
            renewed = await self._leases.renew(lease, self.ttl_s)
            if renewed is None:
                del self._leaving[unit]  # its stop is under way; now it must not send either
            else:
                self._leaving[unit] = renewed
        for unit, lease in list(self._held.items()):
            renewed = await self._leases.renew(lease, self.ttl_s) if unit in self.units else None
            if renewed is None:
                await self._lose(unit, result)
            else:
                self._held[unit] = renewed
                result.changes[unit] = Change.KEPT
        await self._refresh_companions()
        for unit in self._surplus(self._balanced() - result.share):
            await self._hand_over(unit, result)
        await self._take(records, alive, result)
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
        for unit in list(self._held):
            await self._hand_over(unit, Round())
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

    async def _lose(self, unit: str, result: Round) -> None:
        self._held.pop(unit, None)
        self._strays.discard(unit)
        result.changes[unit] = Change.LOST
        _log.warning("placement: lost the lease of %s; stopping it", unit)
        self._then(unit, self._host.stop_serving(unit))  # its fence already stops its sending

    async def _hand_over(self, unit: str, result: Round) -> None:
        self._leaving[unit] = self._held.pop(unit)
        self._strays.discard(unit)
        result.changes[unit] = Change.HANDED_OVER

        async def stop_then_release() -> None:
            await self._host.stop_serving(unit)  # stopped first: the next owner never overlaps
            lease = self._leaving.pop(unit, None)
            if lease is not None:
                await self._leases.release(lease)

        self._then(unit, stop_then_release())

    def _then(self, unit: str, change: Coroutine[Any, Any, None]) -> None:
        """Run ``change`` in the background once the character's previous change has finished
        (of any of its units: the host starts, moves and stops a character one step at a time)."""
        agent_id, _ = split_unit(unit)
        previous = self._changes.get(agent_id)

        async def in_turn() -> None:
            if previous is not None and not previous.done():
                await asyncio.wait([previous])
            await change

        self._changes[agent_id] = self._tasks.start(in_turn(), f"{agent_id[:8]}")

    async def _drop_expired(self) -> None:
        """After a failed round: stop what can no longer be acted on."""
        for unit, lease in list(self._held.items()):
            if not lease.valid():
                await self._lose(unit, Round())

    async def _take(self, records: list[LeaseRecord], alive: list[str], result: Round) -> None:
        """Take free characters up to this daemon's share: first those tied to what it holds
        (they share rooms), then whole groups, nearest by hash first. A free character more tied
        to another daemon that has room is left to that one, for a round or two."""
        held_by = self._held_by_others(records, alive)
        held_elsewhere = set().union(*held_by.values())
        free = [a for a in self.units if a not in self._held and a not in self._leaving and a not in held_elsewhere]
        self._free_rounds = {a: self._free_rounds.get(a, 0) + 1 for a in free}
        others_with_room = [
            held
            for daemon, held in held_by.items()
            if daemon != self.daemon_id and daemon in alive and len(held) < _share(len(self.units), alive, daemon)
        ]
        await self._take_share(free, others_with_room, result)
        await self._take_strays(free, result)

    def _held_by_others(self, records: list[LeaseRecord], alive: list[str]) -> dict[str, set[str]]:
        """The units each other daemon holds now (every daemon alive, holding some or none)."""
        held_by: dict[str, set[str]] = {daemon: set() for daemon in alive}
        for r in records:
            unit = unit_of(r.name)
            if unit is not None and r.expires_in > 0 and r.owner != self.daemon_id:
                held_by.setdefault(r.owner, set()).add(unit)
        return held_by

    async def _take_share(self, free: list[str], others_with_room: list[set[str]], result: Round) -> None:
        """Take from ``free`` (taken ones leave it) until this daemon holds its share: the most
        tied to what it holds first, none more tied to another daemon with room (unless free
        for long)."""
        mine = set(self._held)
        companions = self._companions
        while self._balanced() < result.share and free:
            candidates = [
                a
                for a in free
                if self._free_rounds[a] >= _PATIENCE_ROUNDS
                or all(companions.tie(a, held) <= companions.tie(a, mine) for held in others_with_room)
            ]
            if not candidates:
                break
            unit = max(candidates, key=lambda a: (companions.tie(a, mine), _weight(self.daemon_id, companions.key(a))))
            free.remove(unit)
            taken = await self._leases.acquire(lease_name(unit), self.daemon_id, self.ttl_s)
            if taken is None:
                continue  # another daemon was quicker
            mine.add(unit)
            self._serve(unit, taken, result)

    async def _take_strays(self, free: list[str], result: Round) -> None:
        """Free for many rounds while every daemon is at its share: perhaps no other daemon has
        this character's file (shares are counted from each daemon's own files). Served here,
        beyond the share, rather than by nobody; never handed over for balance."""
        for unit in [a for a in free if self._free_rounds[a] >= _STRAY_ROUNDS]:
            taken = await self._leases.acquire(lease_name(unit), self.daemon_id, self.ttl_s)
            if taken is not None:
                _log.warning("placement: serving %s beyond this daemon's share: no other daemon took it", unit)
                self._strays.add(unit)
                self._serve(unit, taken, result)

    def _serve(self, unit: str, lease: Lease, result: Round) -> None:
        """``unit`` is taken under ``lease``: the host starts serving it."""
        self._held[unit] = lease
        result.changes[unit] = Change.TAKEN
        self._then(unit, self._host.serve(unit, lease))

    def _balanced(self) -> int:
        """How many units held here count towards the share (all but the strays)."""
        return len(self._held) - len(self._strays & self._held.keys())

    def _surplus(self, count: int) -> list[str]:
        """The ``count`` held characters to hand over: whole groups of companions where they fit,
        those least attached to this daemon first; the rest, the least tied first."""
        if count <= 0:
            return []
        companions = self._companions
        groups = companions.groups(u for u in self._held if u not in self._strays)
        groups.sort(key=lambda group: (_weight(self.daemon_id, companions.key(group[0])), -len(group)))
        chosen: list[str] = []
        for group in groups:
            if len(group) <= count - len(chosen):
                chosen.extend(group)
        if len(chosen) < count:
            rest = set(self._held) - set(chosen) - self._strays
            chosen.extend(
                sorted(rest, key=lambda a: (companions.tie(a, rest), _weight(self.daemon_id, companions.key(a))))[
                    : count - len(chosen)
                ]
            )
        return chosen

    async def _refresh_companions(self) -> None:
        """Who shares rooms with whom, read again every ``_COMPANIONS_EVERY_S``: it changes slowly."""
        if self._sharing is None or time.monotonic() < self._companions_due:
            return
        self._companions_due = time.monotonic() + _COMPANIONS_EVERY_S
        try:
            self._companions = Companions(await self._sharing.room_sharing())
        except Exception as exc:  # keep the last known ties: they only order choices
            _log.warning("placement: could not read which characters share rooms (%s)", exc)


def _share(characters: int, alive: list[str], daemon_id: str) -> int:
    """This daemon's share: the characters divided by the daemons alive, the remainder going one
    each to the first daemons by id, so the shares add up and differ by one at most."""
    base, extra = divmod(characters, len(alive))
    return base + (1 if alive.index(daemon_id) < extra else 0)


def _weight(daemon_id: str, unit: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{daemon_id}\x00{unit}".encode(), digest_size=8).digest(), "big")
