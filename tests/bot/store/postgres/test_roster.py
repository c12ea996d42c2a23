"""The roster in PostgreSQL: one troupe's daemons see each other, and their connections by name."""

from __future__ import annotations

from bot.store import DaemonEntry, application_name
from bot.store.postgres import PostgresDatabase


async def test_each_daemons_connections_are_counted_under_its_own_name(postgres_url: str) -> None:
    a = PostgresDatabase(postgres_url, application_name=application_name("host-a:1:aaaaaa"))
    b = PostgresDatabase(postgres_url, application_name=application_name("host-b:2:bbbbbb"))
    async with a, b:
        await b.roster.publish(DaemonEntry("host-b:2:bbbbbb", "host-b", 2, "1", 0))  # seen by the other
        assert [r.entry.id for r in await a.roster.records()] == ["host-b:2:bbbbbb"]
        counts = await a.roster.connections()  # a's own, asking, is open now; b's is pooled
        assert counts == {"troupe:host-a:1:aaaaaa": 1, "troupe:host-b:2:bbbbbb": 1}
        listener = await b.connect_listener()  # the bus's: counted as b's too, not under a name of its own
        try:
            assert await a.roster.connections() == {"troupe:host-a:1:aaaaaa": 1, "troupe:host-b:2:bbbbbb": 2}
        finally:
            await listener.close()


def test_a_long_daemon_id_is_named_as_postgresql_keeps_it() -> None:
    name = application_name("a-very-long-host-name.example.internal.cluster.local:123456:abcdef")
    assert len(name.encode()) == 63 and name.startswith("troupe:a-very-long-host-name")
