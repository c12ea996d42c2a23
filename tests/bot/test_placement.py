"""Placement: daemons sharing a troupe split its characters evenly by lease, take over from a
daemon that died or was paused, and hand over gracefully; one that lost a lease stops at once."""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest

from bot.cluster.placement import Change, Placement, Round, lease_name, shard_unit, split_unit, unit_of
from bot.kernel.ids import string_to_uuid
from bot.kernel.types import AgentRecord, ChannelType, Room
from bot.store import Lease, RoomSharing
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


class Sharing:
    """Which characters share rooms, as the store would say."""

    def __init__(self, *groups: str) -> None:
        """``Sharing("abc", "de")``: a, b, c share a room, and so do d and e."""
        self.pairs = [RoomSharing(x, y, 1) for group in groups for x, y in itertools.combinations(sorted(group), 2)]

    async def room_sharing(self) -> list[RoomSharing]:
        return self.pairs


def daemon(
    leases: LocalLeases, name: str, agents: list[str] = AGENTS, sharing: Sharing | None = None
) -> tuple[Placement, Host]:
    host = Host()
    return Placement(leases, host, name, agents, ttl_s=TTL, sharing=sharing), host


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


async def test_while_handing_over_the_lease_stays_valid_and_renewed_until_the_character_has_stopped() -> None:
    """A graceful handover lets the replies under way finish (the daemon still holds the lease)
    rather than fencing them off and leaving them to the next owner as if it had crashed."""
    clock = Clock()
    leases = LocalLeases(clock)
    stopping = asyncio.Event()
    stop = asyncio.Event()

    class SlowStop(Host):
        async def stop_serving(self, agent_id: str) -> None:
            stopping.set()
            await stop.wait()  # draining the replies under way
            await super().stop_serving(agent_id)

    host = SlowStop()
    d1 = Placement(leases, host, "d1", AGENTS, ttl_s=TTL)
    d2, h2 = daemon(leases, "d2")
    await step(d1)
    await step(d2)
    handed = (await d1.step()).ids(Change.HANDED_OVER)
    await stopping.wait()
    leaving = handed[0]
    before = d1.lease_of(leaving)
    assert before is not None and before.valid(now=clock.now)  # replies under way may still be sent
    clock.now += TTL * 2 / 3
    await d1.step()  # a round during the stop renews it
    after = d1.lease_of(leaving)
    assert after is not None and after.deadline > before.deadline
    assert (await step(d2)).ids(Change.TAKEN) == []  # not free until stopped
    stop.set()
    await d1.settled()
    assert d1.lease_of(leaving) is None
    assert sorted((await step(d2)).ids(Change.TAKEN)) == sorted(handed)
    assert_each_served_once(host, h2)


def test_the_lease_time_must_be_positive() -> None:
    with pytest.raises(ValueError, match="the lease time must be more than 0 seconds"):
        Placement(LocalLeases(), Host(), "d1", AGENTS, ttl_s=0)


async def test_on_postgresql_three_daemons_split_a_troupe_and_take_over_from_one_killed(postgres_url: str) -> None:
    agents = [f"agent-{n}" for n in range(7)]
    ttl = 1.5  # short, but long enough for a busy machine to renew in time
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


# -- companions: characters that share rooms stay together where the shares allow ----------------


def groups_of(*hosts: Host) -> list[str]:
    return sorted("".join(sorted(host.serving)) for host in hosts)


async def test_a_joining_daemon_takes_a_whole_group_of_companions() -> None:
    sharing = Sharing("abc", "def")
    leases = LocalLeases(Clock())
    d1, h1 = daemon(leases, "d1", list("abcdef"), sharing)
    d2, h2 = daemon(leases, "d2", list("abcdef"), sharing)
    await step(d1)
    for _ in range(2):
        await step(d2)
        await step(d1)
    await step(d2)
    assert groups_of(h1, h2) == ["abc", "def"]


async def test_three_daemons_each_serve_one_pair_of_companions() -> None:
    sharing = Sharing("ab", "cd", "ef")
    leases = LocalLeases(Clock())
    daemons = [daemon(leases, f"d{n}", list("abcdef"), sharing) for n in range(3)]
    for _ in range(4):
        for placement, _host in daemons:
            await step(placement)
    assert groups_of(*(host for _, host in daemons)) == ["ab", "cd", "ef"]


async def test_a_free_character_is_left_to_the_daemon_its_companions_are_on_for_a_round_or_two() -> None:
    clock = Clock()
    leases = LocalLeases(clock)
    sharing = Sharing("abc")
    d1, h1 = daemon(leases, "d1", list("abcde"), sharing)
    d2, h2 = daemon(leases, "d2", list("abcde"), sharing)
    await step(d1)  # d1 alone takes everything; then d2 comes, and d1's share is 3
    for agent in "cde":
        await d1._hand_over(agent, Round())  # as if c, d, e had been on a daemon that died
    await d1.settled()
    first = await step(d2)  # d2 runs its round first: c is tied to d1, which has room for it
    assert (first.share, first.ids(Change.TAKEN)) == (2, ["d", "e"])
    assert (await step(d1)).ids(Change.TAKEN) == ["c"]
    assert groups_of(h1, h2) == ["abc", "de"]


async def test_a_daemon_that_never_takes_its_companion_does_not_strand_it() -> None:
    leases = LocalLeases(Clock())
    sharing = Sharing("abc")
    d2, h2 = daemon(leases, "d2", list("abcd"), sharing)
    ghost = await leases.acquire("daemon:d1", "d1", TTL)  # d1 is alive, holds a, but is stuck
    held = await leases.acquire("agent:a", "d1", TTL)
    assert ghost is not None and held is not None
    rounds = [await step(d2) for _ in range(2)]
    assert rounds[0].ids(Change.TAKEN) == ["d"]  # b and c wait for d1 (tied, with room) …
    assert len(rounds[1].ids(Change.TAKEN)) == 1  # … one round more, then d2 takes its share
    assert len(h2.serving) == 2


async def test_groups_larger_than_a_share_are_split_and_the_spread_stays_within_one() -> None:
    rng = random.Random(7)
    for trial in range(30):
        agents = [f"c{n:02}" for n in range(rng.randint(2, 14))]
        shuffled = rng.sample(agents, len(agents))
        cuts = sorted(rng.sample(range(1, len(agents)), rng.randint(0, len(agents) - 1)))
        groups = ["".join(x) for x in _split(shuffled, cuts)]
        sharing = Sharing()
        sharing.pairs = [
            RoomSharing.between(x, y, 1)
            for group in _split(shuffled, cuts)
            for x, y in itertools.combinations(group, 2)
        ]
        leases = LocalLeases(Clock())
        daemons = [daemon(leases, f"d{n}", agents, sharing) for n in range(rng.randint(1, 4))]
        for _ in range(6):
            for placement, _host in rng.sample(daemons, len(daemons)):
                await step(placement)
        counts = [len(host.serving) for _, host in daemons]
        assert max(counts) - min(counts) <= 1, (trial, groups, counts)
        assert_each_served_once(*(host for _, host in daemons), agents=agents)


def _split(items: list[str], cuts: list[int]) -> list[list[str]]:
    bounds = [0, *cuts, len(items)]
    return [items[a:b] for a, b in itertools.pairwise(bounds) if b > a]


async def test_on_postgresql_characters_that_met_in_a_group_are_placed_on_one_daemon(postgres_url: str) -> None:
    """The ties come from the store: characters with rooms for the same Telegram group."""
    names = ["ada", "bo", "cy", "di", "ed", "flo"]
    agents = {name: string_to_uuid(name) for name in names}
    daemons = [PostgresDatabase(postgres_url, max_connections=2) for _ in range(3)]
    await asyncio.gather(*(db.open() for db in daemons))
    try:
        for group, members in {"-100": ["ada", "cy", "ed"], "-200": ["bo", "di", "flo"]}.items():
            for name in members:
                store = daemons[0].for_agent(agents[name])
                await store.create_agent(AgentRecord(id=agents[name], name=name))
                room = Room(id="", source="telegram", type=ChannelType.GROUP, channel_id=group)
                await store.create_rooms([room])
        hosts = [Host() for _ in daemons[:2]]
        placements = [
            Placement(db.leases, host, f"daemon-{n}", agents.values(), ttl_s=TTL, sharing=db)
            for n, (db, host) in enumerate(zip(daemons, hosts, strict=False))
        ]
        for _ in range(3):
            for placement in placements:
                await step(placement)
        by_name = {uuid: name for name, uuid in agents.items()}
        assert sorted(sorted(by_name[a] for a in h.serving) for h in hosts) == [
            ["ada", "cy", "ed"],
            ["bo", "di", "flo"],
        ]
    finally:
        await asyncio.gather(*(db.close() for db in daemons))


# -- Discord shards: each leased on its own ---------------------------------------------------


def test_units_name_their_leases_and_back() -> None:
    assert lease_name("ada") == "agent:ada" and unit_of("agent:ada") == "ada"
    assert lease_name(shard_unit("ada", 3)) == "shard:ada:3" and unit_of("shard:ada:3") == "ada#3"
    assert split_unit("ada#3") == ("ada", 3) and split_unit("ada") == ("ada", None)
    assert unit_of("daemon:d1") is None and unit_of("shard:ada:x") is None


async def test_the_shards_of_a_big_character_spread_over_the_daemons_and_move_when_one_dies() -> None:
    clock = Clock()
    leases = LocalLeases(clock)
    units = ["ada", *(shard_unit("ada", k) for k in range(1, 4)), "bo"]  # ada in 4 shards, bo unsharded
    daemons = [daemon(leases, f"d{n}", units) for n in range(2)]
    for _ in range(3):
        for placement, _host in daemons:
            await step(placement)
    assert_each_served_once(*(host for _, host in daemons), agents=units)
    assert sorted(len(host.serving) for _, host in daemons) == [2, 3]
    assert all(any(split_unit(u)[0] == "ada" for u in host.serving) for _, host in daemons)  # both serve ada
    (first, h1), (second, h2) = daemons
    assert {lease.name for lease in first.leases_of("ada")} == {lease_name(u) for u in h1.serving if "ada" in u}
    for _ in range(4):  # d0 dies: d1 takes its units once their leases expire
        clock.now += TTL / 3
        await step(second)
    assert sorted(h2.serving) == sorted(units)


async def test_daemons_with_different_character_files_still_serve_every_character() -> None:
    """Shares are counted from each daemon's own files: with Ada's file on one daemon and
    Brann's on the other, one share is 0; a character nobody else takes is served anyway."""
    leases = LocalLeases(Clock())
    d1, h1 = daemon(leases, "d1", ["ada"])
    d2, h2 = daemon(leases, "d2", ["brann"])
    for _ in range(6):
        await step(d1)
        await step(d2)
    assert sorted(h1.serving) == ["ada"] and sorted(h2.serving) == ["brann"]
    for _ in range(3):  # and stays: not handed over for balance
        await step(d1)
        await step(d2)
    assert [e for e, _ in h1.events + h2.events].count("stop") == 0
