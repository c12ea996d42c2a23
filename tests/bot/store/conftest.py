"""Fixtures for the store tests: an open database, two seeded agents, vector helpers."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from bot.kernel.content import Content, MemoryMetadata, MemoryType
from bot.kernel.ids import string_to_uuid, unique_uuid
from bot.kernel.types import AgentRecord, ChannelType, Entity, Memory, Room, World
from bot.store import AgentStore, Database, Store, StoreBackend

A = string_to_uuid("agent-a")
B = string_to_uuid("agent-b")
U = unique_uuid(A, "discord:user-u")
V = unique_uuid(A, "discord:user-v")
R = unique_uuid(A, "discord:room-r")
R2 = unique_uuid(A, "discord:room-r2")
W = unique_uuid(A, "discord:guild-w")
# Agent B's own view of the same Discord objects.
BU = unique_uuid(B, "discord:user-u")
BR = unique_uuid(B, "discord:room-r")


def vec(i: int, dim: int = 384) -> list[float]:
    """The unit vector along axis ``i``."""
    v = [0.0] * dim
    v[i] = 1.0
    return v


def mix(i: int, j: int, cos: float, dim: int = 384) -> list[float]:
    """A unit vector whose cosine with ``vec(i)`` is ``cos`` (the rest along axis ``j``)."""
    v = [0.0] * dim
    v[i] = cos
    v[j] = math.sqrt(1 - cos * cos)
    return v


def make_memory(text: str = "hello", *, room: str = R, entity: str = U, **fields: Any) -> Memory:
    """A message memory with realistic defaults."""
    fields.setdefault("metadata", MemoryMetadata(type=MemoryType.MESSAGE))
    return Memory(entity_id=entity, room_id=room, content=Content(text=text, source="discord"), **fields)


async def seed_agent(
    db: StoreBackend, agent_id: str, *, users: tuple[str, ...], rooms: tuple[str, ...], world: str | None = None
) -> Store:
    """Create an agent with its own entity, users, rooms (in ``world``) and participants."""
    store = db.for_agent(agent_id)
    assert await store.create_agent(AgentRecord(id=agent_id, name=f"agent {agent_id[:4]}"))
    assert await store.create_entities(
        [Entity(id=agent_id, agent_id=agent_id, names=["Agent"])]
        + [Entity(id=u, agent_id=agent_id, names=[f"user {n}"]) for n, u in enumerate(users)]
    )
    if world:
        await store.create_world(World(id=world, agent_id=agent_id, name="Guild", server_id="g1"))
    await store.create_rooms(
        [
            Room(id=r, source="discord", type=ChannelType.GROUP, world_id=world, name=f"room {n}")
            for n, r in enumerate(rooms)
        ]
    )
    for room in rooms:
        assert await store.add_participants([agent_id, *users], room)
    return store


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "troupe.db"


@pytest.fixture
async def db(db_path: Path) -> AsyncIterator[Database]:
    async with Database(db_path) as database:
        yield database


@pytest.fixture
async def store(db: Database) -> AgentStore:
    """Agent A with users U and V in rooms R and R2 of world W."""
    await seed_agent(db, A, users=(U, V), rooms=(R, R2), world=W)
    return db.for_agent(A)


@pytest.fixture
async def store_b(db: Database) -> AgentStore:
    """Agent B with its own view of user U and room R."""
    await seed_agent(db, B, users=(BU,), rooms=(BR,))
    return db.for_agent(B)


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The name of every call made on a connection's thread (reader or writer), in order."""
    calls: list[str] = []
    original = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        calls.append(getattr(fn, "__name__", repr(fn)))
        return await original(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    yield calls


@asynccontextmanager
async def writer_busy(db: Database) -> AsyncIterator[None]:
    """The writer held by a transaction() block in another task until this block ends."""
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with db.transaction():
            holding.set()
            await release.wait()

    holder = asyncio.create_task(hold())
    await holding.wait()
    try:
        yield
    finally:
        release.set()
        await holder
