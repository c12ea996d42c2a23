"""Placement: daemons sharing a troupe split its characters evenly by lease, take over from a
daemon that died or was paused, and hand over gracefully; one that lost a lease stops at once."""

from __future__ import annotations

import asyncio

import pytest

from bot.placement import Change, Placement, Round
from bot.store import Lease
from bot.store._leases import LocalLeases
from bot.store.postgres import PostgresDatabase

TTL = 10.0
AGENTS = [f"agent-{n}" for n in range(5)]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Host:
    """A daemon's side: which characters it serves, and every start and stop, in order."""

    def __init__(self) -> None:
        self.serving: dict[str, Lease] = {}
        self.events: list[tuple[str, str]] = []

    async def serve(self, agent_id: str, lease: Lease) -> None:
        assert agent_id not in self.serving
        self.serving[agent_id] = lease
        self.events.append(("serve", agent_id))

    async def stop_serving(self, agent_id: str) -> None:
        self.serving.pop(agent_id)
        self.events.append(("stop", agent_id))


async def step(placement: Placement) -> Round:
    """One round, and the starts and stops it asked for (they run in the background)."""
    result = await placement.step()
    await placement.settled()
    return result


def daemon(leases: LocalLeases, name: str, agents: list[str] = AGENTS) -> tuple[Placement, Host]:
    host = Host()
    return Placement(leases, host, name, agents, ttl_s=TTL), host


def assert_each_served_once(*hosts: Host, agents: list[str] = AGENTS) -> None:
    served = [agent for host in hosts for agent in host.serving]
    assert sorted(served) == sorted(agents)


async def test_a_daemon_alone_serves_every_character_and_keeps_them() -> None:
    leases = LocalLeases(Clock())
    placement, host = daemon(leases, "d1")
    first = await step(placement)
    assert (first.alive, first.share) == (1, 5)
    assert first.ids(Change.TAKEN) == AGENTS and sorted(host.serving) == AGENTS
    again = await step(placement)
    assert again.ids(Change.KEPT) == AGENTS and len(host.events) == 5


async def test_a_second_daemon_gets_its_share_by_handover_without_overlap() -> None:
    clock = Clock()
    leases = LocalLeases(clock)
    d1, h1 = daemon(leases, "d1")
    d2, h2 = daemon(leases, "d2")
    await step(d1)
    assert (await step(d2)).ids(Change.TAKEN) == []  # all held: it waits for a handover
    handed = await step(d1)
    assert (handed.alive, handed.share) == (2, 3) and len(handed.ids(Change.HANDED_OVER)) == 2  # d1 sorts first
    taken = await step(d2)
    assert taken.ids(Change.TAKEN) == handed.ids(Change.HANDED_OVER)
    assert_each_served_once(h1, h2)
    assert sorted([len(h1.serving), len(h2.serving)]) == [2, 3]


async def test_three_daemons_end_within_one_of_each_other() -> None:
    agents = [f"agent-{n}" for n in range(10)]
    leases = LocalLeases(Clock())
    daemons = [daemon(leases, f"d{n}", agents) for n in range(3)]
    for _ in range(3):
        for placement, _host in daemons:
            await step(placement)
    counts = sorted(len(host.serving) for _, host in daemons)
    assert counts == [3, 3, 4]
    assert_each_served_once(*(host for _, host in daemons), agents=agents)


async def test_the_characters_of_a_daemon_that_died_are_taken_over_once_its_leases_expire() -> None:
    clock = Clock()
    leases = LocalLeases(clock)
    d1, h1 = daemon(leases, "d1")
    d2, h2 = daemon(leases, "d2")
    for _ in range(2):
        await step(d1)
        await step(d2)
    orphaned = sorted(h1.serving)
    rounds = []
    for _ in range(4):  # d1 is gone (kill -9); d2 goes on with its rounds
        clock.now += TTL / 3
        rounds.append(await step(d2))
    assert [r.ids(Change.TAKEN) for r in rounds[:2]] == [[], []]  # d1's leases still hold
    moved = rounds[2]  # the first round after they expired (TTL after d1's last renewal)
    assert (moved.alive, moved.share) == (1, 5)
    assert moved.ids(Change.TAKEN) == orphaned and sorted(h2.serving) == AGENTS


async def test_a_paused_daemon_stops_what_it_lost_when_it_resumes() -> None:
    clock = Clock()
    leases = LocalLeases(clock)
    d1, h1 = daemon(leases, "d1")
    d2, h2 = daemon(leases, "d2")
    await step(d1)
    stale = dict(h1.serving)
    clock.now += TTL + 1  # d1 is stopped (SIGSTOP) past its leases; d2 takes everything
    await step(d2)
    assert sorted(h2.serving) == AGENTS
    assert not any(lease.valid(now=clock.now) for lease in stale.values())  # d1 may not send meanwhile
    resumed = await step(d1)
    assert resumed.ids(Change.LOST) == AGENTS and h1.serving == {}
    assert_each_served_once(h1, h2)


async def test_leaving_stops_then_releases_so_another_takes_over_at_once() -> None:
    leases = LocalLeases(Clock())
    d1, h1 = daemon(leases, "d1")
    d2, h2 = daemon(leases, "d2")
    await step(d1)
    await d1.leave()
    assert h1.serving == {} and [e for e, _ in h1.events].count("stop") == 5
    taken = await step(d2)
    assert taken.alive == 1 and sorted(h2.serving) == AGENTS  # no wait for any lease to expire


async def test_a_character_handed_over_may_still_send_its_replies_in_flight_until_released() -> None:
    clock = Clock()
    leases = LocalLeases(clock)
    stopping: dict[str, Lease | None] = {}

    class Draining(Host):
        """Stopping drains the replies in flight: they ask the fence, which asks the placement."""

        async def stop_serving(self, agent_id: str) -> None:
            stopping[agent_id] = d1.lease_of(agent_id)
            await super().stop_serving(agent_id)

    d1 = Placement(leases, Draining(), "d1", AGENTS, ttl_s=TTL)
    d2, _ = daemon(leases, "d2")
    await step(d1)
    await step(d2)
    handed = (await step(d1)).ids(Change.HANDED_OVER)
    assert len(handed) == 2
    assert all((lease := stopping[a]) is not None and lease.valid(clock.now) for a in handed)
    assert all(d1.lease_of(a) is None for a in handed)  # released once stopped: no longer its to act on
    await d1.leave()
    assert all(lease is not None for lease in stopping.values()) and len(stopping) == 5


def test_the_lease_time_must_be_positive() -> None:
    with pytest.raises(ValueError, match="the lease time must be more than 0 seconds"):
        Placement(LocalLeases(), Host(), "d1", AGENTS, ttl_s=0)


async def test_on_postgresql_three_daemons_split_a_troupe_and_take_over_from_one_killed(postgres_url: str) -> None:
    agents = [f"agent-{n}" for n in range(7)]
    ttl = 0.6
    daemons = [PostgresDatabase(postgres_url, max_connections=2) for _ in range(3)]
    await asyncio.gather(*(db.open() for db in daemons))
    try:
        hosts = [Host() for _ in daemons]
        placements = [
            Placement(db.leases, host, f"daemon-{n}", agents, ttl_s=ttl)
            for n, (db, host) in enumerate(zip(daemons, hosts, strict=True))
        ]
        for _ in range(3):
            for placement in placements:
                await step(placement)
        assert sorted(len(h.serving) for h in hosts) == [2, 2, 3]
        assert sorted(a for h in hosts for a in h.serving) == agents
        killed = set(hosts[0].serving)  # daemon-0 stops renewing anything (kill -9)
        loop = asyncio.get_running_loop()
        started = loop.time()
        while killed - (set(hosts[1].serving) | set(hosts[2].serving)):
            assert loop.time() - started < ttl + 2 * placements[1].interval + 1, "no takeover in time"
            await asyncio.sleep(placements[1].interval)
            for placement in placements[1:]:
                await step(placement)
        assert sorted(a for h in hosts[1:] for a in h.serving) == agents
        assert sorted(len(h.serving) for h in hosts[1:]) == [3, 4]
    finally:
        await asyncio.gather(*(db.close() for db in daemons))


async def test_a_slow_start_does_not_hold_up_the_renewals() -> None:
    clock = Clock()
    leases = LocalLeases(clock)
    release = asyncio.Event()

    class SlowHost(Host):
        async def serve(self, agent_id: str, lease: Lease) -> None:
            await release.wait()  # a character whose start takes longer than the lease time
            await super().serve(agent_id, lease)

    host = SlowHost()
    placement = Placement(leases, host, "d1", AGENTS, ttl_s=TTL)
    assert (await placement.step()).ids(Change.TAKEN) == AGENTS  # returns while they start
    for _ in range(6):  # two lease times of rounds, the starts still going
        clock.now += TTL / 3
        assert (await placement.step()).ids(Change.KEPT) == AGENTS
    release.set()
    await placement.settled()
    assert sorted(host.serving) == AGENTS and len(host.events) == 5
