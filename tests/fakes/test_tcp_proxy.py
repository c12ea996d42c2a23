"""The TCP proxy in front of the test PostgreSQL forwards, cuts, blackholes and refuses."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from tests.fakes.tcp_proxy import Mode, TcpProxy


async def _select_one(url: str, connect_timeout: int = 10) -> int:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=connect_timeout) as conn:
        row = await (await conn.execute("SELECT 1")).fetchone()
        return int(row[0]) if row else 0


async def test_it_forwards_cuts_refuses_and_blackholes(postgres_url: str) -> None:
    async with TcpProxy(postgres_url) as proxy:
        url = proxy.url()
        assert await _select_one(url) == 1
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        try:
            assert proxy.open_links == 1
            proxy.limit = 1  # "too many clients": the one open stays, a second is refused
            with pytest.raises(psycopg.OperationalError):
                await _select_one(url, connect_timeout=5)
            assert proxy.refused == 1
            proxy.limit = None
            assert proxy.cut() == 1  # the link in use breaks, as a cut or a killed server does
            with pytest.raises(psycopg.OperationalError):
                await conn.execute("SELECT 1")
        finally:
            await conn.close()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as held:
            proxy.mode = Mode.BLACKHOLE  # accepted, and nothing answers until the partition heals
            with pytest.raises(psycopg.OperationalError):
                await _select_one(url, connect_timeout=1)
            query = asyncio.create_task(held.execute("SELECT 2"))
            while not proxy.held:
                await asyncio.sleep(0.01)  # the query reached the proxy and is held there
            assert not query.done()
            proxy.mode = Mode.FORWARD  # healed: what was held goes through
            row = await (await query).fetchone()
            assert row is not None and row[0] == 2
        proxy.mode = Mode.REFUSE
        with pytest.raises(psycopg.OperationalError):
            await _select_one(url, connect_timeout=5)
        proxy.cut()
        proxy.mode = Mode.FORWARD
        proxy.budget = 1  # a failover: the first connection in, the rest refused
        assert await _select_one(url) == 1
        with pytest.raises(psycopg.OperationalError):
            await _select_one(url, connect_timeout=5)
        proxy.budget = None
        assert await _select_one(url) == 1
