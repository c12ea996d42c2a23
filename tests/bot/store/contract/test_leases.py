"""Leases: one holder at a time, epochs that only grow, renewals only by the holder in time."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.store import Lease, StoreBackend

TTL = 5.0
SHORT = 0.2


async def test_a_free_lease_is_taken_and_then_refused_to_others(backend: StoreBackend) -> None:
    before = time.monotonic()
    lease = await backend.leases.acquire("agent:a", "daemon-1", TTL)
    assert lease is not None and (lease.name, lease.owner, lease.epoch) == ("agent:a", "daemon-1", 1)
    assert before + TTL <= lease.deadline <= time.monotonic() + TTL and lease.valid()
    assert await backend.leases.acquire("agent:a", "daemon-2", TTL) is None
    other = await backend.leases.acquire("agent:b", "daemon-2", TTL)  # another name is another lease
    assert other is not None and other.epoch == 1


async def test_an_expired_lease_goes_to_the_next_with_a_higher_epoch(backend: StoreBackend) -> None:
    first = await backend.leases.acquire("agent:a", "daemon-1", SHORT)
    assert first is not None
    await asyncio.sleep(SHORT + 0.1)
    assert not first.valid()
    second = await backend.leases.acquire("agent:a", "daemon-2", TTL)
    assert second is not None and second.epoch == first.epoch + 1
    assert await backend.leases.renew(first, TTL) is None  # the old holder is fenced off


async def test_the_holder_renews_in_time_and_only_it(backend: StoreBackend) -> None:
    lease = await backend.leases.acquire("agent:a", "daemon-1", SHORT)
    assert lease is not None
    renewed = await backend.leases.renew(lease, TTL)
    assert renewed is not None and renewed.epoch == lease.epoch and renewed.deadline > lease.deadline
    await asyncio.sleep(SHORT + 0.1)
    assert await backend.leases.acquire("agent:a", "daemon-2", TTL) is None  # renewed: still held
    impostor = Lease(lease.name, "daemon-2", lease.epoch, lease.deadline)
    assert await backend.leases.renew(impostor, TTL) is None


async def test_a_released_lease_is_free_at_once_and_its_epoch_still_grows(backend: StoreBackend) -> None:
    lease = await backend.leases.acquire("agent:a", "daemon-1", TTL)
    assert lease is not None
    assert await backend.leases.release(lease) is True
    assert await backend.leases.release(lease) is False  # once
    assert await backend.leases.renew(lease, TTL) is None
    taken = await backend.leases.acquire("agent:a", "daemon-2", TTL)
    assert taken is not None and taken.epoch == lease.epoch + 1


async def test_records_show_every_lease_under_a_prefix(backend: StoreBackend) -> None:
    await backend.leases.acquire("agent:a", "daemon-1", TTL)
    await backend.leases.acquire("agent:b", "daemon-2", TTL)
    await backend.leases.acquire("daemon:daemon-1", "daemon-1", TTL)
    records = await backend.leases.records("agent:")
    assert [(r.name, r.owner, r.epoch) for r in records] == [("agent:a", "daemon-1", 1), ("agent:b", "daemon-2", 1)]
    assert all(0 < r.expires_in <= TTL and r.held_for >= 0 for r in records)


async def test_a_lease_must_last_some_time(backend: StoreBackend) -> None:
    with pytest.raises(ValueError, match="a lease lasts more than 0 seconds"):
        await backend.leases.acquire("agent:a", "daemon-1", 0)


def test_a_lease_is_valid_strictly_before_its_deadline() -> None:
    lease = Lease("agent:a", "daemon-1", 3, deadline=100.0)
    assert lease.valid(now=99.999) and not lease.valid(now=100.0)
    assert lease.remaining(now=98.5) == 1.5 and lease.remaining(now=101) == 0.0
