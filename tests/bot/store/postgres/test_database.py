"""The PostgreSQL backend's own behaviour: opening, migrations under concurrency, the pool, secrets."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit

import psycopg
import pytest

from bot.kernel.errors import StoreError
from bot.store import backend_for, redacted_url
from bot.store.postgres import PostgresDatabase
from bot.store.postgres._migrations import MIGRATIONS, SCHEMA_VERSION


async def test_backend_for_a_postgres_url_opens_and_migrates(postgres_url: str) -> None:
    db = backend_for(postgres_url)
    assert isinstance(db, PostgresDatabase)
    async with db:
        assert db.is_open
        assert db.schema_version == SCHEMA_VERSION
        row = await db.fetchone("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert row is not None
    assert not db.is_open


async def test_daemons_opening_together_migrate_once(postgres_url: str) -> None:
    databases = [PostgresDatabase(postgres_url) for _ in range(4)]
    await asyncio.gather(*(db.open() for db in databases))
    try:
        rows = await databases[0].fetchall("SELECT version FROM troupe_migrations ORDER BY version")
        assert [r["version"] for r in rows] == [m.version for m in MIGRATIONS]  # each once, in order
    finally:
        await asyncio.gather(*(db.close() for db in databases))


async def test_a_newer_schema_is_refused_with_what_to_do(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as db:
        await db.execute("INSERT INTO troupe_migrations (version, name) VALUES (%s, 'future')", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match=r"newer than this troupe's .*: upgrade troupe on this machine"):
        await PostgresDatabase(postgres_url).open()


async def test_an_unreachable_server_is_a_store_error_without_the_password(caplog: pytest.LogCaptureFixture) -> None:
    url = "postgresql://troupe:s3cret-pw@127.0.0.1:9/troupe?connect_timeout=1"
    db = PostgresDatabase(url)
    assert "s3cret-pw" not in repr(db) and "s3cret-pw" not in db.path
    with caplog.at_level(logging.DEBUG), pytest.raises(StoreError, match=r"cannot open PostgreSQL database") as info:
        await db.open()
    assert "s3cret-pw" not in str(info.value)
    assert "s3cret-pw" not in caplog.text
    assert not db.is_open


def test_redacted_url_hides_only_the_password() -> None:
    assert redacted_url("postgresql://u:pw@db.example:5432/troupe") == "postgresql://u:***@db.example:5432/troupe"
    assert redacted_url("postgresql://db.example/troupe") == "postgresql://db.example/troupe"


async def test_the_pool_holds_at_most_its_bound(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url, max_connections=2) as db:
        await asyncio.gather(*(db.fetchall("SELECT pg_sleep(0.05)") for _ in range(8)))
        name = urlsplit(postgres_url).path.lstrip("/")
        # A backend whose connection was just closed (the database's creation, say) stays in
        # pg_stat_activity until its process exits: on a busy machine, a while. What the pool
        # holds settles at its bound.
        counts = []
        for _ in range(200):
            row = await db.fetchone("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = %s", (name,))
            assert row is not None
            counts.append(row["n"])
            if row["n"] <= 2:
                break
            await asyncio.sleep(0.05)
        assert counts[-1] <= 2, counts


async def test_a_failed_statement_is_a_store_error_and_a_transaction_is_all_or_none(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as db:
        with pytest.raises(StoreError, match="database read failed"):
            await db.fetchall("SELECT * FROM no_such_table")
        with pytest.raises(StoreError, match="database write failed"):
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO meta (key, value) VALUES ('a', '1')")
                await conn.execute("INSERT INTO meta (key, value) VALUES ('a', '2')")  # duplicate key
        assert await db.fetchall("SELECT * FROM meta WHERE key = 'a'") == []
        assert isinstance(psycopg.__version__, str)


async def test_jsonb_comes_back_as_json_text_as_sqlite_gives_it(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as db:
        row = await db.fetchone("""SELECT '"a string"'::jsonb AS s, '{"k": [1, 2]}'::jsonb AS o""")
        assert row == {"s": '"a string"', "o": '{"k": [1, 2]}'}


def test_without_the_driver_a_postgres_url_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    for name in [
        m for m in sys.modules if m == "bot.store.postgres" or m.startswith(("bot.store.postgres.", "psycopg"))
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if not installed
    with pytest.raises(StoreError, match=r"needs the PostgreSQL driver.*pip install 'troupe\[postgres\]'"):
        backend_for("postgresql://db.example/troupe")


async def test_after_the_server_dropped_every_connection_the_next_statements_work(postgres_url: str) -> None:
    """A database restart (or a failover) ends every pooled connection; none of the next uses fails."""
    async with PostgresDatabase(postgres_url) as db:
        await asyncio.gather(*(db.fetchone("SELECT pg_sleep(0.05)") for _ in range(4)))  # a few pooled connections
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        rows = await asyncio.gather(*(db.fetchone("SELECT 1 AS one") for _ in range(6)))
        assert rows == [{"one": 1}] * 6
