"""Forgetting on PostgreSQL leaves nothing of the forgotten behind in any table, with the same
counts as SQLite (the scenarios: ../_forgetting.py); what any read shows is in ../contract/."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.store.postgres import PostgresDatabase

from .._forgetting import Scan, forget_all_leaves_nothing, forget_entity_leaves_nothing, forget_room_leaves_nothing
from ..conftest import BR, BU, R2, A, B, R, U, V, W, seed_agent


@pytest.fixture
async def pg(postgres_url: str) -> AsyncIterator[PostgresDatabase]:
    async with PostgresDatabase(postgres_url) as db:
        yield db


def scanner(db: PostgresDatabase) -> Scan:
    async def scan(needles: list[str]) -> list[str]:
        """Every place in the database (any table of the schema, any row as text) holding a needle."""
        hits = []
        tables = await db.fetchall("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        for table in (t["tablename"] for t in tables):
            for row in await db.fetchall(f'SELECT t::text AS row FROM "{table}" t'):
                hits += [f"{table}: {needle}" for needle in needles if needle in row["row"]]
        return hits

    return scan


async def test_forget_entity_leaves_nothing_behind(pg: PostgresDatabase) -> None:
    store = await seed_agent(pg, A, users=(U, V), rooms=(R, R2), world=W)
    store_b = await seed_agent(pg, B, users=(BU,), rooms=(BR,))
    await forget_entity_leaves_nothing(pg, store, store_b, scanner(pg))


async def test_forget_room_leaves_no_row_or_text_of_the_room(pg: PostgresDatabase) -> None:
    await forget_room_leaves_nothing(await seed_agent(pg, A, users=(U, V), rooms=(R, R2), world=W), scanner(pg))


async def test_forget_all_leaves_no_row_or_text_of_what_it_removed(pg: PostgresDatabase) -> None:
    store = await seed_agent(pg, A, users=(U, V), rooms=(R, R2), world=W)
    store_b = await seed_agent(pg, B, users=(BU,), rooms=(BR,))
    await forget_all_leaves_nothing(pg, store, store_b, scanner(pg))
