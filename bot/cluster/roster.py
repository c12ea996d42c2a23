"""The whole troupe, when several daemons share one database: what each publishes, what status shows.

Each daemon publishes its entry in the store's roster (``bot/store/_roster.py``): host, pid,
start time, version, and per character file a fingerprint and the state of its agent there. It
does so when it starts, after every reload, and at every placement round (its heartbeat), and
removes it when it stops. :func:`troupe_status` puts the roster and the leases together for
``troupe status`` and ``GET /status``: every daemon, who serves which character under which
lease, the characters nobody serves, and the files that differ between daemons.

A file that differs is logged once by the daemon that sees it on starting or reloading (the
daemons that were there first see nothing new until they reload themselves), naming the file
and the daemons, and flagged in the status of every daemon.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot import installed_version
from bot.cluster.placement import AGENT_PREFIX, DAEMON_PREFIX, SHARD_PREFIX, split_unit, unit_of
from bot.config.character import LoadResult
from bot.daemon.control import TroupeCharacter, TroupeDaemon, TroupeStatus
from bot.daemon.hosted import HostedAgent
from bot.kernel.background import next_round
from bot.kernel.errors import StoreError
from bot.kernel.lifecycle import AgentState
from bot.store import CharacterFile, DaemonEntry, DaemonRecord, LeaseRecord, StoreBackend, application_name

__all__ = [
    "Difference",
    "GONE_S",
    "Publisher",
    "differences",
    "entry_for",
    "public_fingerprint",
    "read_troupe",
    "troupe_status",
]

_log = logging.getLogger(__name__)

#: A daemon not seen for this long is taken off the roster.
GONE_S = 3600.0
# How often a daemon looks for the gone to prune (each daemon does: any one is enough).
_PRUNE_EVERY_S = 60.0


def public_fingerprint(result: LoadResult) -> str:
    """What two machines compare of a character file: its definition without its secrets (names
    of the secrets set, not their values), plugins and model preset. Nothing derived from a
    secret reaches the database, so a token rotated on one machine alone is not seen here."""
    character = result.raise_for_problems()
    body = character.model_dump(mode="json", exclude={"secrets"})
    settings = dict(body.get("settings") or {})
    settings.pop("secrets", None)
    body["settings"] = settings
    text = json.dumps([body, sorted(character.secret_keys()), result.plugins, result.model_preset], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def entry_for(
    daemon_id: str, started_at: int, results: Iterable[LoadResult], agents: Mapping[str, HostedAgent]
) -> DaemonEntry:
    """This daemon's entry: its character files, and the state of those it serves."""
    characters: dict[str, CharacterFile] = {}
    for result in results:
        character = result.raise_for_problems()
        agent = agents.get(character.agent_id)
        state = str(agent.state) if agent is not None and agent.state is not AgentState.STOPPED else ""
        characters[character.agent_id] = CharacterFile(
            character.name, str(result.source), public_fingerprint(result), state
        )
    return DaemonEntry(daemon_id, socket.gethostname(), os.getpid(), installed_version(), started_at, characters)


@dataclass(frozen=True, slots=True)
class Difference:
    """A character whose file is not the same on every daemon that has it."""

    agent_id: str
    name: str
    file: str
    #: Every live daemon that has the file, grouped by fingerprint.
    groups: tuple[tuple[str, ...], ...]

    @property
    def daemons(self) -> list[str]:
        return [daemon for group in self.groups for daemon in group]

    def message(self) -> str:
        if all(len(group) == 1 for group in self.groups):
            names = self.daemons
        else:  # say which daemons have the same copy
            names = [
                f"{', '.join(group)} ({'one copy' if n == 0 else 'another'})" for n, group in enumerate(self.groups)
            ]
        who = ", ".join(names[:-1]) + " and " + names[-1]
        return f"{self.file} differs between daemons {who}: reload or deploy the same file on every machine"


def differences(records: Sequence[DaemonRecord], alive: Iterable[str], first: str | None = None) -> list[Difference]:
    """The characters whose fingerprints disagree among the ``alive`` daemons; the file is named
    as daemon ``first`` (this one) names it when it has it."""
    live = set(alive)
    entries = sorted(
        (r.entry for r in records if r.entry.id in live), key=lambda e: (e.id != first, e.id)
    )  # this daemon first
    by_agent: dict[str, dict[str, list[str]]] = {}
    for entry in entries:
        for agent_id, file in entry.characters.items():
            by_agent.setdefault(agent_id, {}).setdefault(file.fingerprint, []).append(entry.id)
    found = []
    for agent_id, groups in sorted(by_agent.items()):
        if len(groups) < 2:
            continue
        holder = next(e for e in entries if agent_id in e.characters)
        file = holder.characters[agent_id]
        found.append(Difference(agent_id, file.name, file.file, tuple(tuple(g) for g in groups.values())))
    return found


def _alive(leases: Iterable[LeaseRecord]) -> set[str]:
    return {r.owner for r in leases if r.name.startswith(DAEMON_PREFIX) and r.expires_in > 0}


class Publisher:
    """Keeps this daemon's entry in the roster, and warns (once each) of files that differ."""

    def __init__(self, backend: StoreBackend, entry: Callable[[], DaemonEntry], interval: float) -> None:
        self._backend = backend
        self._entry = entry
        self.interval = interval
        self._warned: set[Difference] = set()
        self._pruned_at: float | None = None

    async def publish(self) -> DaemonEntry:
        """Publish this daemon's entry now (and return it), and now and then forget the daemons gone for long."""
        entry = self._entry()
        await self._backend.roster.publish(entry)
        now = time.monotonic()
        if self._pruned_at is None or now - self._pruned_at >= _PRUNE_EVERY_S:
            await self._backend.roster.prune(GONE_S)
            self._pruned_at = now
        return entry

    async def compare(self) -> list[Difference]:
        """Publish, then log each file that differs from another live daemon's (once per difference)."""
        daemon_id = (await self.publish()).id
        alive = _alive(await self._backend.leases.records(DAEMON_PREFIX)) | {daemon_id}
        found = differences(await self._backend.roster.records(), alive, first=daemon_id)
        for difference in found:
            if daemon_id in difference.daemons and difference not in self._warned:
                self._warned.add(difference)
                _log.warning("%s", difference.message())
        return found

    async def run(self) -> None:
        """Publish every :attr:`interval` seconds (the heartbeat) until cancelled."""
        failing = False
        while True:
            await next_round(self.interval)
            try:
                await self.publish()
            except StoreError as exc:
                if not failing:  # once per outage, not every few seconds
                    _log.warning("could not publish this daemon's status to the troupe: %s", exc)
                failing = True
            else:
                failing = False

    async def leave(self) -> None:
        """Take this daemon off the roster (it stops)."""
        try:
            await self._backend.roster.remove(self._entry().id)
        except StoreError as exc:
            _log.warning("could not take this daemon off the troupe's roster (%s); it will be pruned", exc)


async def troupe_status(backend: StoreBackend, this: str | None = None) -> TroupeStatus:
    """The whole troupe as the database has it (``this``: the daemon asking, marked as such)."""
    leases = _Leases.of(await backend.leases.records())
    records = await backend.roster.records()
    connections = await backend.roster.connections()
    entries = {r.entry.id: r for r in records}
    daemons = [
        _daemon_row(daemon_id, entries.get(daemon_id), leases, this=this, connections=connections)
        for daemon_id in sorted(leases.alive | set(entries))
    ]
    found = {d.agent_id: d for d in differences(records, leases.alive, first=this)}
    known = _known_files(records, leases.alive, this)
    characters = [
        _character_row(agent_id, leases, entries, known, found) for agent_id in sorted(set(known) | set(leases.agents))
    ]
    characters.sort(key=lambda c: c["name"].casefold())
    return {"daemons": daemons, "characters": characters, "warnings": [d.message() for d in found.values()]}


@dataclass(frozen=True, slots=True)
class _Leases:
    """What the leases say of the troupe now."""

    alive: set[str]
    """The daemons holding their own lease."""
    agents: dict[str, LeaseRecord]
    """Agent id → the lease of the daemon serving it."""
    shards: dict[str, dict[str, str | None]]
    """Agent id → shard → the daemon serving it, or None (sharded Discord bots)."""

    @classmethod
    def of(cls, leases: Sequence[LeaseRecord]) -> _Leases:
        agents = {
            r.name.removeprefix(AGENT_PREFIX): r for r in leases if r.name.startswith(AGENT_PREFIX) and r.expires_in > 0
        }
        shards: dict[str, dict[str, str | None]] = {}
        for r in leases:
            unit = unit_of(r.name) if r.name.startswith(SHARD_PREFIX) else None
            if unit is not None:
                agent_id, shard = split_unit(unit)
                shards.setdefault(agent_id, {})[str(shard)] = r.owner if r.expires_in > 0 else None
        return cls(_alive(leases), agents, shards)


def _daemon_row(
    daemon_id: str,
    record: DaemonRecord | None,
    leases: _Leases,
    *,
    this: str | None,
    connections: Mapping[str, int],
) -> TroupeDaemon:
    """One daemon as status shows it: its roster entry (if it published one) and what it holds."""
    entry = record.entry if record is not None else DaemonEntry(daemon_id, "?", 0, "?", 0)
    return {
        "id": daemon_id,
        "host": entry.host,
        "pid": entry.pid,
        "version": entry.version,
        "started_at": entry.started_at,
        "heartbeat_s": round(record.seen_s, 1) if record is not None else None,
        "alive": daemon_id in leases.alive,
        "this": daemon_id == this,
        "connections": connections.get(application_name(daemon_id)) if connections else None,
        "serves": sum(lease.owner == daemon_id for lease in leases.agents.values()),
        "shards": sum(owner == daemon_id for held in leases.shards.values() for owner in held.values()),
    }


def _known_files(records: Sequence[DaemonRecord], alive: set[str], this: str | None) -> dict[str, CharacterFile]:
    """Each character's file as the daemons know it: this daemon's copy first, then the living's."""
    known: dict[str, CharacterFile] = {}
    for record in sorted(records, key=lambda r: (r.entry.id != this, r.entry.id not in alive, r.entry.id)):
        for agent_id, copy in record.entry.characters.items():
            known.setdefault(agent_id, copy)
    return known


def _character_row(
    agent_id: str,
    leases: _Leases,
    entries: Mapping[str, DaemonRecord],
    known: Mapping[str, CharacterFile],
    found: Mapping[str, Difference],
) -> TroupeCharacter:
    """One character as status shows it: who serves it, under which lease, in what state."""
    lease = leases.agents.get(agent_id)
    owner = entries.get(lease.owner) if lease is not None else None
    served = owner.entry.characters.get(agent_id) if owner is not None else None
    file = served or known.get(agent_id)
    # Its owner's word for it; a lease taken but not published yet is a start under way.
    state = "waiting" if lease is None else (served.state if served else "") or str(AgentState.STARTING)
    return {
        "id": agent_id,
        "name": file.name if file is not None else agent_id,
        "file": file.file if file is not None else "",
        "state": state,
        "daemon": lease.owner if lease is not None else None,
        "epoch": lease.epoch if lease is not None else None,
        "held_s": round(lease.held_for, 1) if lease is not None else None,
        "expires_s": round(lease.expires_in, 1) if lease is not None else None,
        "differs": found[agent_id].daemons if agent_id in found else [],
        "shards": dict(sorted(leases.shards.get(agent_id, {}).items(), key=lambda item: int(item[0]))),
    }


async def read_troupe(backend: StoreBackend, this: str | None = None) -> TroupeStatus:
    """:func:`troupe_status`, or what went wrong reading it (the daemon's own status still answers)."""
    try:
        return await troupe_status(backend, this)
    except StoreError as exc:
        return {"daemons": [], "characters": [], "warnings": [], "error": str(exc)}
