"""Daemons whose clocks disagree compare times by the database's clock: the cache's expiry, the
inbox's ages, the claims' idle times. Here this process's clock is skewed by ±400 s between a
write and a read, as two daemons' clocks may be."""

from __future__ import annotations

import time

import pytest

from bot.kernel.types import now_ms
from bot.store.postgres import PostgresDatabase

from ..conftest import A, R, seed_agent

SKEW_NS = 400 * 1_000_000_000


@pytest.mark.parametrize("skew", [SKEW_NS, -SKEW_NS])
async def test_times_two_daemons_compare_are_the_databases(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, skew: int
) -> None:
    real = time.time_ns
    async with PostgresDatabase(postgres_url) as db:
        store = await seed_agent(db, A, users=(), rooms=(R,))
        assert abs(await store.clock_ms() - now_ms()) < 5_000
        # One daemon keeps a value for a minute, an update and a claim, its clock right …
        assert await store.set_cache("k", "v", expires_at=now_ms() + 60_000)
        await store.inbox_put("telegram", "1", "{}")
        await store.claim_message("m1", R, now_ms(), claimant="one")
        kept_at = await store.clock_ms()
        # … another, its clock 400 s off, reads them.
        monkeypatch.setattr(time, "time_ns", lambda: real() + skew)
        assert abs(await store.clock_ms() - kept_at) < 5_000  # the database's clock is not skewed
        assert await store.get_cache("k") == "v"  # neither expired (ahead) nor kept 400 s too long
        assert await store.set_cache("short", "v", expires_at=now_ms() + 60_000)  # kept by the skewed one
        monkeypatch.setattr(time, "time_ns", real)
        assert await store.get_cache("short") == "v"
        ((_, _, received),) = await store.inbox_pending("telegram")
        assert abs(received - kept_at) < 5_000
        assert await store.unfinished_messages(idle_before=kept_at - 5_000) == []  # not idle yet
        assert [m for m, _, _ in await store.unfinished_messages(idle_before=kept_at + 5_000)] == ["m1"]
