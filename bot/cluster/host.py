"""The daemon's side of placement, when several daemons share one troupe (PostgreSQL only).

:class:`~bot.cluster.placement.Placement` decides which *units* this daemon serves: each character, and
each Discord shard (1 and up) of a character split into shards (``DISCORD_SHARD_COUNT``,
:mod:`bot.config.shards`), each leased on its own. :class:`ClusterHost` is the
:class:`~bot.cluster.placement.PlacementHost` that carries those decisions out on the daemon's agents:

- A character runs here as long as this daemon holds any of its units. With the character's own
  unit (its *home*) it connects to every platform and runs what runs once per character (stored
  tasks, knowledge sync); with shards only, it connects to Discord alone, with those shards.
- Gaining or losing the home restarts the agent (its platforms change); gaining or losing a
  shard moves its Discord connection to the shards held now, without a restart.
- Sending as a character is fenced: it is allowed only while this daemon holds every lease of
  it that it serves, in time, and at the epochs its runtime was started under
  (:class:`_LeaseFence`), so a daemon cut off from the database goes quiet before another one
  takes over, and a runtime left from an epoch the daemon lost never sends again, even once the
  daemon holds the character anew (a new runtime does).

It also keeps this daemon's entry in the troupe's roster (``troupe status``) up to date at each
change, and compares this daemon's character files with the other daemons' (a warning for each
that differs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from bot.cluster.placement import Placement, shard_unit, split_unit
from bot.cluster.roster import Publisher, entry_for, read_troupe
from bot.config.character import LoadResult
from bot.config.settings import DaemonSettings
from bot.config.shards import Reshardable, Shards, shard_count
from bot.daemon.hosted import HostedAgent
from bot.daemon.systemd import Notifier
from bot.kernel.background import BackgroundTasks
from bot.kernel.backoff import ExponentialBackoff
from bot.kernel.errors import ConfigError, StoreError
from bot.kernel.logs import agent_context
from bot.runtime.adapters import DISCORD_SERVICE
from bot.runtime.agent import Fence
from bot.store import DaemonEntry, Lease, StoreBackend

__all__ = ["Agents", "ClusterHost", "join_when_able", "units_of"]

# Its lines read as they did when this was part of bot/daemon/daemon.py.
_log = logging.getLogger("bot.daemon.daemon")


class Agents(Protocol):
    """What the cluster host asks of the daemon: its characters and agents, to start and stop one."""

    @property
    def characters(self) -> Sequence[LoadResult]: ...

    @property
    def environ(self) -> Mapping[str, str]: ...

    @property
    def agents(self) -> Mapping[str, HostedAgent]: ...

    async def launch(self, result: LoadResult, *, fence: Fence | None = None, home: bool = True) -> HostedAgent:
        """Start a character's agent (sending only while ``fence`` allows); away from its
        ``home`` only on the platforms that shard."""
        ...

    async def retire(self, agent_id: str) -> None:
        """Stop a running agent (its replies in flight finish, bounded) and forget it."""
        ...


def units_of(results: Iterable[LoadResult], environ: Mapping[str, str]) -> list[str]:
    """What placement leases: each character, and each Discord shard (1 and up) of a sharded
    one (DISCORD_SHARD_COUNT; a bad value is reported when it connects, unsharded here)."""
    units: list[str] = []
    for result in results:
        character = result.raise_for_problems()
        units.append(character.agent_id)
        try:
            count = shard_count(character, environ)
        except ConfigError:
            count = 1
        units += [shard_unit(character.agent_id, k) for k in range(1, count)]
    return units


class ClusterHost:
    """Serves this daemon's share of the troupe on ``daemon``'s agents (``PlacementHost``).

    Args:
        daemon: the daemon whose agents it starts and stops.
        db: the database the troupe shares.
        daemon_id: this daemon's id among the troupe's.
        settings: the daemon's settings (the lease time).
        started_ms: when the daemon started (for the roster).
    """

    def __init__(
        self, daemon: Agents, db: StoreBackend, daemon_id: str, settings: DaemonSettings, started_ms: int
    ) -> None:
        self._daemon = daemon
        self._db = db
        self.daemon_id = daemon_id
        self._started_ms = started_ms
        #: Per character: the units of it this daemon holds (None: its own; k: Discord shard k).
        self._units_held: dict[str, set[int | None]] = {}
        self.placement = Placement(
            db.leases,
            self,
            daemon_id,
            units_of(daemon.characters, daemon.environ),
            ttl_s=settings.lease_s,
            sharing=db,
        )
        # A heartbeat per lease time is enough for status: liveness is the presence lease's.
        self.publisher = Publisher(db, self._roster_entry, settings.lease_s)

    async def join(self, background: BackgroundTasks) -> None:
        """Take this daemon's first share, then keep taking it (and publishing) in ``background``."""
        await self.compare_files()  # before taking characters: the others see this one at once
        await self.placement.step()
        background.start(self.placement.run(), "placement")
        background.start(self.publisher.run(), "roster")

    async def leave(self) -> None:
        """Hand everything over (stop, then release: the others take over at once); call once
        the placement rounds have stopped."""
        await self.placement.leave()
        await self.publisher.leave()

    async def troupe(self) -> Mapping[str, object]:
        """The whole troupe, read from the shared database now (``DaemonView``)."""
        return await read_troupe(self._db, this=self.daemon_id)

    def set_characters(self, results: Iterable[LoadResult]) -> None:
        """What placement may serve from now on (after a reload)."""
        self.placement.units = sorted(units_of(results, self._daemon.environ))

    async def compare_files(self) -> None:
        """Publish this daemon's character files and warn of those that differ on another daemon."""
        try:
            await self.publisher.compare()
        except StoreError as exc:
            _log.warning("could not compare character files with the other daemons: %s", exc)

    async def serve(self, unit: str, lease: Lease) -> None:
        """Start serving a unit this daemon now holds the lease of (``PlacementHost``): a
        character, or one Discord shard of a sharded one (its runtime runs here as long as any
        of its units does; its other platforms only with the character's own unit)."""
        agent_id, shard = split_unit(unit)
        result = self._result_of(agent_id)
        if result is None:
            return
        held = self._units_held.setdefault(agent_id, set())
        held.add(shard)
        agent = self._daemon.agents.get(agent_id)
        name = result.raise_for_problems().name
        _log.info("serving %s%s (lease epoch %d)", name, f" shard {shard}" if shard else "", lease.epoch)
        if agent is None:
            await self.launch(result)
        elif shard is None:  # now its home too: start it again with its other platforms
            await self._daemon.retire(agent_id)
            await self.launch(result)
        else:
            await self._reshard(agent, result)
        await self._republish()

    async def stop_serving(self, unit: str) -> None:
        """Stop serving a unit whose lease this daemon lost or hands over (``PlacementHost``)."""
        agent_id, shard = split_unit(unit)
        held = self._units_held.get(agent_id, set())
        held.discard(shard)
        agent = self._daemon.agents.get(agent_id)
        if agent is None:
            return
        _log.info("no longer serving %s%s", agent.name, f" shard {shard}" if shard else "")
        if not held:
            self._units_held.pop(agent_id, None)
            await self._daemon.retire(agent_id)
        elif shard is None:  # its home went elsewhere; its shards held here stay: Discord only
            await self._daemon.retire(agent_id)
            await self.launch(agent.result)
        else:
            await self._reshard(agent, agent.result)
        await self._republish()

    async def launch(self, result: LoadResult) -> HostedAgent:
        """Launch a character this daemon holds units of, sending only while it holds them."""
        agent_id = result.raise_for_problems().agent_id
        home = None in self._units_held.get(agent_id, set())
        return await self._daemon.launch(result, fence=_LeaseFence(self.placement, agent_id, home=home), home=home)

    def shards_held(self, agent_id: str, count: int) -> Shards:
        """The Discord shards (of ``count``) of ``agent_id``'s bot this daemon serves."""
        held = self._units_held.get(agent_id, set())
        return Shards(count, tuple(sorted(0 if shard is None else shard for shard in held)))

    async def _reshard(self, agent: HostedAgent, result: LoadResult) -> None:
        """Move a running character's Discord connection to the shards this daemon holds now
        (its fence is bound to the shards' epochs held now)."""
        runtime = agent.runtime
        if runtime is not None and isinstance(runtime.fence, _LeaseFence):
            runtime.fence.bind()
        discord = runtime.get_service(DISCORD_SERVICE) if runtime is not None else None
        if runtime is None or not isinstance(discord, Reshardable):
            return  # not connected yet: its connection takes the shards held when it connects
        character = result.raise_for_problems()
        count = shard_count(character, self._daemon.environ)
        if count == 1:
            return
        shards = self.shards_held(character.agent_id, count)
        with agent_context(agent.name):
            try:
                await discord.reshard(shards)
            except ConfigError as exc:
                _log.error("%s: could not move to %s: %s", agent.name, shards, exc)

    async def _republish(self) -> None:
        """Tell the troupe at once what this daemon now serves and how (``troupe status``)."""
        try:
            await self.publisher.publish()
        except StoreError as exc:  # the heartbeat publishes again shortly
            _log.debug("could not publish this daemon's status: %s", exc)

    def _roster_entry(self) -> DaemonEntry:
        return entry_for(self.daemon_id, self._started_ms, self._daemon.characters, self._daemon.agents)

    def _result_of(self, agent_id: str) -> LoadResult | None:
        return next((r for r in self._daemon.characters if r.raise_for_problems().agent_id == agent_id), None)


async def join_when_able(
    cluster: ClusterHost, background: BackgroundTasks, notifier: Notifier, stopped: asyncio.Event, cap_s: float
) -> bool:
    """Take this daemon's first share of the troupe (:meth:`ClusterHost.join`); False if
    ``stopped`` was set first.

    The database answered the open but may fail the first round (a failover, "too many
    clients": the first connection in, the rest refused): that is waited out as the open is,
    with back-off up to ``cap_s`` between attempts, said once in the log and in systemd's
    status — not an exit (78 would leave the unit down for good)."""
    backoff = ExponentialBackoff(1.0, cap_s)
    failing = False
    while True:
        try:
            await cluster.join(background)
        except StoreError as exc:
            delay = backoff.delay()
            if not failing:
                _log.warning("cannot take this daemon's share of the troupe: %s; trying again with back-off", exc)
            failing = True
            notifier.waiting(f"waiting for the database: {exc}", delay + cap_s)
        else:
            if failing:
                _log.info("the database answers again: serving this daemon's share of the troupe")
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopped.wait(), delay)
        if stopped.is_set():
            return False


class _LeaseFence:
    """Sending as a character is allowed while this daemon holds its leases (of the character
    and of the Discord shards it serves here), in time, at the epochs they had when the runtime
    started (or, for shards, when it last moved to the shards held): a runtime is bound to its
    epochs. Asked only "is the lease valid now", a runtime left draining from an epoch this
    daemon lost would send again once the daemon took the character back — the other daemon
    having answered its messages meanwhile."""

    __slots__ = ("_agent_id", "_epochs", "_home", "_placement")

    def __init__(self, placement: Placement, agent_id: str, *, home: bool) -> None:
        self._placement = placement
        self._agent_id = agent_id
        self._home = home
        self._epochs: dict[str, int] = {}
        self.bind()

    def bind(self) -> None:
        """Bind to the epochs of the units held now: at launch, and after a move of shards (the
        home's epoch stays the one the runtime started under: a new home is a new runtime). A
        runtime started without the home is not bound to it, even while the home is still being
        handed over from here (``held_of`` counts it until it is released): bound to it, the
        runtime was refused for good once it was gone."""
        homes = {unit: epoch for unit, epoch in self._epochs.items() if split_unit(unit)[1] is None}
        self._epochs = {
            unit: lease.epoch
            for unit, lease in self._placement.held_of(self._agent_id).items()
            if self._home or split_unit(unit)[1] is not None
        }
        self._epochs.update(homes)

    def allows(self) -> bool:
        held = self._placement.held_of(self._agent_id)
        if not (held and self._epochs) or any(unit not in held for unit in self._epochs if split_unit(unit)[1] is None):
            return False  # its home lost (a shard lost only moves the connection)
        return all(lease.valid() and self._epochs.get(unit, lease.epoch) == lease.epoch for unit, lease in held.items())
