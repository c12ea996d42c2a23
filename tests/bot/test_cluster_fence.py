"""A runtime's fence is bound to the lease epochs it was started under: a daemon that loses a
character and gets it back never lets the runtime left from its old epoch send again."""

from __future__ import annotations

import time
from typing import Any, cast

from bot.cluster.host import _LeaseFence
from bot.cluster.placement import Placement, shard_unit
from bot.store import Lease
from bot.store._leases import LocalLeases

TTL = 60.0


class Host:
    async def serve(self, unit: str, lease: Lease) -> None:
        pass

    async def stop_serving(self, unit: str) -> None:
        pass


async def _round(placement: Placement) -> None:
    await placement.step()
    await placement.settled()


async def test_a_runtime_from_a_lost_epoch_stays_fenced_when_the_daemon_holds_the_character_again() -> None:
    leases = LocalLeases()
    first = Placement(leases, Host(), "d1", ["ada"], ttl_s=TTL)
    await _round(first)
    old = _LeaseFence(first, "ada", home=True)  # the runtime started under epoch 1
    assert old.allows()
    # d1 is paused past its lease (here: it is taken from it), another daemon answers meanwhile;
    # d1 resumes, its renewal fails, it lets ada go — and gets ada back, at a later epoch.
    lease = first.lease_of("ada")
    assert lease is not None and await leases.release(lease)
    await _round(first)
    regained = first.lease_of("ada")
    assert regained is not None and regained.epoch == 2
    assert not old.allows()  # the runtime left from epoch 1 never sends again …
    assert _LeaseFence(first, "ada", home=True).allows()  # … the one started under epoch 2 does


async def test_a_shard_taken_again_at_a_later_epoch_is_refused_until_the_fence_is_bound_again() -> None:
    leases = LocalLeases()
    units = ["ada", shard_unit("ada", 1)]
    placement = Placement(leases, Host(), "d1", units, ttl_s=TTL)
    await _round(placement)
    fence = _LeaseFence(placement, "ada", home=True)
    shard = placement.lease_of(units[1])
    assert fence.allows() and shard is not None
    assert await leases.release(shard)
    await _round(placement)  # lost shard 1 (renewal refused), and took it again at a later epoch
    again = placement.lease_of(units[1])
    assert again is not None and again.epoch > shard.epoch
    assert not fence.allows()  # a shard at another epoch than the runtime knows: refused …
    fence.bind()  # … until the connection has moved to the shards held now
    assert fence.allows()


async def test_moving_shards_never_rebinds_the_home_the_runtime_started_under() -> None:
    leases = LocalLeases()
    placement = Placement(leases, Host(), "d1", ["ada", shard_unit("ada", 1)], ttl_s=TTL)
    await _round(placement)
    fence = _LeaseFence(placement, "ada", home=True)
    home = placement.lease_of("ada")
    assert home is not None and await leases.release(home)
    await _round(placement)  # the home lost and taken again; its runtime's restart is queued …
    fence.bind()  # … behind a move of shards
    assert not fence.allows()


class _HeldHere:
    """What the fence reads of a placement: the character's leases held here, by unit."""

    def __init__(self, held: dict[str, Lease]) -> None:
        self.held = held

    def held_of(self, agent_id: str) -> dict[str, Lease]:
        return dict(self.held)


async def test_a_runtime_started_while_the_home_is_handed_over_is_not_bound_to_it() -> None:
    # The home is handed over (stopped first, released after): the runtime started meanwhile for
    # the shards that stay sees the home among the leases held here, until it is released. Bound
    # to it, that runtime was refused for good once the home had gone (its messages given back,
    # and taken up by its own look again and again).
    deadline = time.monotonic() + TTL
    home, shard = Lease("ada", "d1", 1, deadline), Lease(shard_unit("ada", 1), "d1", 1, deadline)
    placement = _HeldHere({"ada": home, shard.name: shard})
    fence = _LeaseFence(cast(Any, placement), "ada", home=False)
    assert fence.allows()
    del placement.held["ada"]  # released: another daemon is the character's home now
    assert fence.allows()
    fence.bind()  # a later move of shards does not bind it either
    assert fence.allows()
