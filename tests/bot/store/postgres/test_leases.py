"""Leases in PostgreSQL under concurrency: daemons racing for the same lease, one wins."""

from __future__ import annotations

import asyncio

from bot.store.postgres import PostgresDatabase


async def test_daemons_racing_for_a_lease_get_one_holder_each_time(postgres_url: str) -> None:
    daemons = [PostgresDatabase(postgres_url, max_connections=2) for _ in range(4)]
    await asyncio.gather(*(db.open() for db in daemons))
    try:
        epochs = []
        for _ in range(25):
            won = [
                lease
                for lease in await asyncio.gather(
                    *(db.leases.acquire("agent:a", f"daemon-{n}", 30) for n, db in enumerate(daemons))
                )
                if lease is not None
            ]
            assert len(won) == 1
            epochs.append(won[0].epoch)
            # Given up (not left to expire: a short lease could run out between the racers'
            # requests on a busy machine, and then each would rightly win in turn).
            assert await daemons[int(won[0].owner[-1])].leases.release(won[0])
        assert epochs == list(range(1, 26))  # one hand-over per round, never a skipped or repeated epoch
    finally:
        await asyncio.gather(*(db.close() for db in daemons))


async def test_expiry_is_the_databases_clock(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as db:
        lease = await db.leases.acquire("agent:a", "daemon-1", 30)
        assert lease is not None
        await db.execute("UPDATE leases SET expires_at = clock_timestamp() - interval '1 second'")
        # The holder's own clock says 30 s are left; the database says it expired: it is free.
        assert lease.valid()
        taken = await db.leases.acquire("agent:a", "daemon-2", 30)
        assert taken is not None and taken.epoch == 2
        assert await db.leases.renew(lease, 30) is None
