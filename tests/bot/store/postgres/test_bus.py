"""The troupe's bus in PostgreSQL: each daemon hears the others' posts once, including those
posted while it was cut off, and the listening connection is one of the daemon's six."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from bot.kernel.bus import Bus, Post
from bot.kernel.errors import StoreError
from bot.store.postgres import PostgresDatabase, _bus
from bot.store.postgres._bus import KEEP_S, PgBus

TOPIC = "telegram:relay"


class Heard:
    """A subscriber that keeps what it hears."""

    def __init__(self) -> None:
        self.posts: list[Post] = []

    async def __call__(self, post: Post) -> None:
        self.posts.append(post)

    async def wait_for(self, count: int, timeout: float = 30.0) -> list[Post]:
        async with asyncio.timeout(timeout):
            while len(self.posts) < count:
                await asyncio.sleep(0.02)
        return self.posts

    @property
    def payloads(self) -> list[str]:
        return [p.payload for p in self.posts]


@contextlib.asynccontextmanager
async def listening(bus: PgBus) -> AsyncIterator[PgBus]:
    task = asyncio.create_task(bus.run())
    try:
        await asyncio.wait_for(bus.listening.wait(), 10)
        yield bus
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.fixture
async def daemons(postgres_url: str) -> AsyncIterator[tuple[PostgresDatabase, PostgresDatabase]]:
    one, two = PostgresDatabase(postgres_url), PostgresDatabase(postgres_url)
    await one.open()
    await two.open()
    try:
        yield one, two
    finally:
        await one.close()
        await two.close()


def _listener_pids(url: str) -> list[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'troupe bus'"
        ).fetchall()
    return [int(r[0]) for r in rows]


async def bus_one_posts(db: PostgresDatabase, text: str) -> None:
    await db.bus("daemon-one").post(TOPIC, json.dumps(text))


async def test_a_post_reaches_the_other_daemon_once_and_never_its_own(daemons) -> None:
    one, two = daemons
    bus_one = one.bus("daemon-one")
    as_protocol: Bus = bus_one  # mypy checks that PgBus is a Bus
    assert as_protocol.spans_daemons
    bus_two = PgBus(two, "daemon-two", poll_s=0.1)  # reads often: a post read twice would show
    heard_one, heard_two = Heard(), Heard()
    bus_one.subscribe(TOPIC, heard_one)
    bus_two.subscribe(TOPIC, heard_two)
    async with listening(bus_one), listening(bus_two):
        await bus_one.post(TOPIC, json.dumps({"n": 1}))
        await bus_one.post("another topic", json.dumps({"n": 2}))
        await bus_one.post(TOPIC, json.dumps({"n": 3}))
        posts = await heard_two.wait_for(2)
        await asyncio.sleep(0.5)
    assert [json.loads(p) for p in heard_two.payloads] == [{"n": 1}, {"n": 3}]
    assert {p.origin for p in posts} == {"daemon-one"} and posts[0].id < posts[1].id
    assert heard_one.posts == []


async def test_a_post_larger_than_a_notification_arrives_whole(daemons) -> None:
    one, two = daemons
    heard = Heard()
    bus_two = two.bus("daemon-two")
    bus_two.subscribe(TOPIC, heard)
    big = json.dumps({"text": "ü" * 20_000, "nul": "\u0000"})  # a NOTIFY payload holds 8000 bytes
    async with listening(bus_two):
        await one.bus("daemon-one").post(TOPIC, big)
        await heard.wait_for(1)
    assert heard.payloads == [big]


async def test_a_post_made_while_the_listener_was_cut_off_is_heard_once_it_reconnects(
    daemons, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reads overlap by GRACE_S, which would hide a listener that forgot where it was: none here.
    monkeypatch.setattr(_bus, "GRACE_S", 0.0)
    one, two = daemons
    heard = Heard()
    bus_two = PgBus(two, "daemon-two", poll_s=60)  # no periodic read: only the reconnection can deliver it
    bus_two.subscribe(TOPIC, heard)
    async with listening(bus_two):
        await bus_one_posts(one, "before")
        await heard.wait_for(1)
        (pid,) = await asyncio.to_thread(_listener_pids, postgres_url)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        # Its notification goes nowhere: nobody is listening now.
        await bus_one_posts(one, "while cut off")
        await heard.wait_for(2, timeout=60)
        assert await asyncio.to_thread(_listener_pids, postgres_url) != [pid]  # a new connection heard it
        await bus_one_posts(one, "after")
        await heard.wait_for(3)
    assert heard.payloads == ['"before"', '"while cut off"', '"after"']


async def test_a_post_whose_notification_never_came_is_read_all_the_same(daemons) -> None:
    one, two = daemons
    heard = Heard()
    bus_two = PgBus(two, "daemon-two", poll_s=0.3)
    bus_two.subscribe(TOPIC, heard)
    async with listening(bus_two):
        await one.execute(
            "INSERT INTO bus_posts (topic, origin, payload) VALUES (%s, 'daemon-one', '\"unannounced\"')", (TOPIC,)
        )
        await heard.wait_for(1, timeout=3)
    assert heard.payloads == ['"unannounced"']


async def test_a_handler_that_fails_does_not_stop_the_next_post(daemons) -> None:
    one, two = daemons
    heard = Heard()

    async def failing(post: Post) -> None:
        raise RuntimeError("boom")

    bus_two = two.bus("daemon-two")
    bus_two.subscribe(TOPIC, failing)
    bus_two.subscribe(TOPIC, heard)
    async with listening(bus_two):
        await bus_one_posts(one, "first")
        await bus_one_posts(one, "second")
        await heard.wait_for(2)
    assert heard.payloads == ['"first"', '"second"']


async def test_recent_posts_are_every_daemons_oldest_first_and_old_ones_are_deleted(daemons) -> None:
    one, two = daemons
    await one.execute(
        "INSERT INTO bus_posts (topic, origin, payload, posted_at) VALUES "
        "(%s, 'daemon-gone', '\"ancient\"', clock_timestamp() - make_interval(secs => %s))",
        (TOPIC, KEEP_S + 1),
    )
    await one.bus("daemon-one").post(TOPIC, '"first"')
    await two.bus("daemon-two").post(TOPIC, '"second"')
    await two.bus("daemon-two").post("another topic", '"elsewhere"')
    recent = await one.bus("daemon-one").recent(TOPIC, 60)
    assert [(p.origin, p.payload) for p in recent] == [("daemon-one", '"first"'), ("daemon-two", '"second"')]
    bus_two = two.bus("daemon-two")
    bus_two.subscribe(TOPIC, Heard())
    async with listening(bus_two):  # a listener deletes what is older than KEEP_S when it reads
        async with asyncio.timeout(60):
            while await one.fetchone("SELECT 1 FROM bus_posts WHERE payload = '\"ancient\"'"):
                await asyncio.sleep(0.05)
    assert (await one.fetchone("SELECT count(*) AS n FROM bus_posts"))["n"] == 3


async def test_the_listening_connection_is_one_of_the_daemons_connections(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url, max_connections=3) as db:
        bus = db.bus("daemon-one")
        async with listening(bus):
            with psycopg.connect(postgres_url, autocommit=True) as admin:

                def connections() -> int:
                    row = admin.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND pid <> pg_backend_pid()"
                    ).fetchone()
                    return int(row[0]) if row else 0

                busy = asyncio.gather(*(db.execute("SELECT pg_sleep(0.5)") for _ in range(6)))
                await asyncio.sleep(0.3)
                during = await asyncio.to_thread(connections)
                await busy
        assert during == 3  # two pooled, busy, and the listener


async def test_a_listener_that_cannot_connect_tries_again_with_back_off_and_then_hears(
    daemons, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    one, two = daemons
    real, attempts = two.connect_listener, []

    async def down_twice() -> psycopg.AsyncConnection[Any]:
        attempts.append(asyncio.get_running_loop().time())
        if len(attempts) <= 2:
            raise StoreError("cannot connect to PostgreSQL database: the server is restarting")
        return await real()

    monkeypatch.setattr(two, "connect_listener", down_twice)
    heard = Heard()
    bus_two = two.bus("daemon-two")
    bus_two.subscribe(TOPIC, heard)
    await bus_one_posts(one, "while it was down")
    async with listening(bus_two):
        await heard.wait_for(1)
    assert heard.payloads == ['"while it was down"']
    assert len(attempts) == 3 and attempts[2] - attempts[1] > attempts[1] - attempts[0] > 0.2  # waits that grow
    assert caplog.text.count("cannot hear the other daemons (cannot connect to PostgreSQL database") == 2
