"""Exactly once across daemons: claims of one message by several processes sharing PostgreSQL.

Each ``PostgresDatabase`` is a daemon of its own (its own pool and connections); their claims of
the same message at the same moment must come out as if made one after the other."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import cast

from bot.kernel.types import Claim, Handling
from bot.store import Store, StoreBackend
from bot.store.postgres import PostgresDatabase

from ..conftest import A, R, seed_agent

_ROUNDS = 40


def _backend(db: PostgresDatabase) -> StoreBackend:
    """``db`` as the protocol sees it (a cast until every group of the store is in)."""
    return cast(StoreBackend, db)


async def _claim_together(stores: list[Store], memory_id: str) -> Counter[Claim]:
    return Counter(await asyncio.gather(*(s.claim_message(memory_id, R, 1000) for s in stores)))


async def test_two_daemons_claiming_one_message_at_once_get_exactly_one_new_claim(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as first, PostgresDatabase(postgres_url) as second:
        await seed_agent(_backend(first), A, users=(), rooms=(R,))
        stores = [_backend(db).for_agent(A) for db in (first, second)]
        for n in range(_ROUNDS):
            claims = await _claim_together(stores, f"m{n}")
            # The later claim finds the earlier one's row: the contract's second claim of a
            # message still HANDLING (never a second NEW, never an error).
            assert claims == Counter({Claim.NEW: 1, Claim.RETRY: 1}), f"round {n}: {claims}"
            handling = await stores[0].get_message_handling(f"m{n}")
            assert handling is not None and (handling.status, handling.attempts) == (Handling.HANDLING, 2)


async def test_three_daemons_claiming_at_once_take_turns_at_the_claim(postgres_url: str) -> None:
    databases = [PostgresDatabase(postgres_url) for _ in range(3)]
    await asyncio.gather(*(db.open() for db in databases))
    try:
        await seed_agent(_backend(databases[0]), A, users=(), rooms=(R,))
        stores = [_backend(db).for_agent(A) for db in databases]
        for n in range(_ROUNDS):
            # retries=1: new, taken up once again, then given up: each outcome exactly once.
            claims = await _claim_together(stores, f"m{n}")
            assert claims == Counter({Claim.NEW: 1, Claim.RETRY: 1, Claim.ABANDONED: 1}), f"round {n}: {claims}"
            assert await _claim_together(stores, f"m{n}") == Counter({Claim.DUPLICATE: 3})
    finally:
        await asyncio.gather(*(db.close() for db in databases))


async def test_daemons_claiming_a_finished_message_at_once_all_see_a_duplicate(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as first, PostgresDatabase(postgres_url) as second:
        await seed_agent(_backend(first), A, users=(), rooms=(R,))
        stores = [_backend(db).for_agent(A) for db in (first, second)]
        for n in range(_ROUNDS // 4):
            assert await stores[0].claim_message(f"m{n}", R, 1000) is Claim.NEW
            await stores[0].mark_message(f"m{n}", Handling.SENDING)
            # Its reply was going out: closed as sent once, by whichever claim comes first.
            assert await _claim_together(stores, f"m{n}") == Counter({Claim.SENT: 1, Claim.DUPLICATE: 1})
