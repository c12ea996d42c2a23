"""``PostgresDatabase.session()`` (one pooled connection, no transaction) and binary results."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest

from bot.store.postgres import PostgresDatabase


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PostgresDatabase]:
    async with PostgresDatabase(postgres_url, max_connections=1) as database:
        yield database


async def test_jsonb_read_in_binary_comes_back_as_its_json_text_as_in_text(db: PostgresDatabase) -> None:
    async with db.session() as conn:
        binary = await (await conn.execute('SELECT \'{"a": [1, "é"]}\'::jsonb AS doc', binary=True)).fetchone()
        text = await (await conn.execute('SELECT \'{"a": [1, "é"]}\'::jsonb AS doc')).fetchone()
    assert binary == text == {"doc": '{"a": [1, "é"]}'}


async def test_a_session_that_fails_closes_its_connection_and_so_releases_its_session_locks(
    postgres_url: str, db: PostgresDatabase
) -> None:
    with pytest.raises(RuntimeError, match="stopped half-way"):
        async with db.session() as conn:
            await conn.execute("SELECT pg_advisory_lock(42)")
            raise RuntimeError("stopped half-way")
    # Another connection gets the lock once the old one's server process has ended.
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as other:
        async with asyncio.timeout(60):
            while not (await (await other.execute("SELECT pg_try_advisory_lock(42)")).fetchone() or [False])[0]:
                await asyncio.sleep(0.05)
    async with db.session() as conn:  # the pool carries on with a new connection
        assert await (await conn.execute("SELECT 1 AS one")).fetchone() == {"one": 1}
