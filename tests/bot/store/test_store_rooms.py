"""Worlds, rooms, participants and the agent's per-room FOLLOWED/MUTED state.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

from pathlib import Path

from bot.kernel.types import RoomState
from bot.store import Database

from .conftest import R2, A, R, U, seed_agent


async def test_participant_state_survives_closing_and_reopening_the_database(db_path: Path) -> None:
    async with Database(db_path) as db:
        store = await seed_agent(db, A, users=(U,), rooms=(R, R2))
        await store.set_participant_state(R, A, RoomState.MUTED)
        await store.set_participant_state(R2, A, RoomState.FOLLOWED)
    async with Database(db_path) as db:
        store = db.for_agent(A)
        assert await store.get_participant_state(R, A) is RoomState.MUTED
        assert await store.get_participant_state(R2, A) is RoomState.FOLLOWED
