"""The turn at the shared knowledge holds across daemons: an advisory lock, not only the process's."""

from __future__ import annotations

import asyncio

import pytest

from bot.store.postgres import PostgresDatabase

from ..conftest import A, B


async def _wait_turn(db: PostgresDatabase, agent: str, turns: list[str]) -> None:
    async with db.for_agent(agent).lock_shared_knowledge():
        turns.append(agent)


async def _until_waiting(db: PostgresDatabase) -> None:
    """The other daemon's request for the turn has reached the server, which keeps it waiting."""
    async with asyncio.timeout(60):
        while not await db.fetchall("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"):
            await asyncio.sleep(0.02)


async def test_a_second_daemon_waits_for_the_turn_of_the_first(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as first, PostgresDatabase(postgres_url) as second:
        turns: list[str] = []
        async with first.for_agent(A).lock_shared_knowledge():
            waiting = asyncio.create_task(_wait_turn(second, B, turns))
            await _until_waiting(first)
            assert turns == [] and not waiting.done()
            turns.append(A)
        await asyncio.wait_for(waiting, 60)
        assert turns == [A, B]


async def test_a_turn_ended_by_an_error_or_a_cancellation_is_released(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as first, PostgresDatabase(postgres_url) as second:
        with pytest.raises(RuntimeError, match="ingestion failed"):
            async with first.for_agent(A).lock_shared_knowledge():
                raise RuntimeError("ingestion failed")
        holding = asyncio.Event()

        async def hold() -> None:
            async with first.for_agent(A).lock_shared_knowledge():
                holding.set()
                await asyncio.sleep(60)

        task = asyncio.create_task(hold())
        await asyncio.wait_for(holding.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        turns: list[str] = []
        await asyncio.wait_for(_wait_turn(second, B, turns), 60)
        assert turns == [B]


async def test_a_daemon_waiting_for_the_turn_can_stop_waiting(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as first, PostgresDatabase(postgres_url) as second:
        turns: list[str] = []
        async with first.for_agent(A).lock_shared_knowledge():
            waiting = asyncio.create_task(_wait_turn(second, B, turns))
            await _until_waiting(first)
            waiting.cancel()  # a daemon shutting down while it waits
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(waiting, 60)
        await asyncio.wait_for(_wait_turn(second, B, turns), 60)  # its connection is not stuck in the wait
        assert turns == [B]
