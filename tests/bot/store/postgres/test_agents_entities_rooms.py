"""What the PostgreSQL store of agents, entities and rooms adds to the contract: several daemons
writing one agent at once, and matching that does not depend on the server's locale."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.kernel.record_metadata import WorldMetadata
from bot.kernel.types import AgentRecord, Component, Entity, World
from bot.store import Database, backend_for, copy_to_postgres
from bot.store.postgres import PostgresDatabase

from ..conftest import A, R, U, seed_agent


async def test_daemons_merging_settings_into_one_agent_at_once_lose_none(postgres_url: str) -> None:
    daemons = [PostgresDatabase(postgres_url), PostgresDatabase(postgres_url)]
    await asyncio.gather(*(db.open() for db in daemons))
    try:
        stores = [db.for_agent(A) for db in daemons]
        assert await stores[0].create_agent(AgentRecord(id=A, name="Ada"))
        results = await asyncio.gather(*(stores[i % 2].update_agent({"settings": {f"k{i}": i}}) for i in range(20)))
        assert all(results)
        got = await stores[1].get_agent()
        assert got is not None and got.settings == {f"k{i}": i for i in range(20)}
    finally:
        await asyncio.gather(*(db.close() for db in daemons))


async def test_search_by_name_folds_case_as_python_does(postgres_url: str) -> None:
    async with backend_for(postgres_url) as db:
        store = await seed_agent(db, A, users=(U,), rooms=(R,))
        await store.create_entities([Entity(id="s", agent_id=A, names=["Große Straße", "ﬁsh"])])
        assert [e.id for e in await store.search_entities_by_name("STRASSE")] == ["s"]  # ß is ss
        assert [e.id for e in await store.search_entities_by_name("FISH")] == ["s"]  # the ligature is f + i
        assert await store.update_entity(Entity(id="s", agent_id=A, names=["Renamed"]))
        assert await store.search_entities_by_name("strasse") == []
        assert [e.id for e in await store.search_entities_by_name("renam")] == ["s"]


async def test_worlds_whose_settings_are_json_null_have_no_settings(postgres_url: str) -> None:
    async with backend_for(postgres_url) as db:
        store = await seed_agent(db, A, users=(U,), rooms=(R,))
        await store.create_world(
            World(id="null", agent_id=A, name="Null", metadata=WorldMetadata.from_json({"settings": None}))
        )
        await store.create_world(
            World(id="empty", agent_id=A, name="Empty", metadata=WorldMetadata.from_json({"settings": {}}))
        )
        assert [w.id for w in await store.get_worlds_with_settings()] == ["empty"]


async def test_names_with_a_nul_character_find_nobody_instead_of_failing(postgres_url: str) -> None:
    async with backend_for(postgres_url) as db:
        store = await seed_agent(db, A, users=(U,), rooms=(R,))
        assert await store.search_entities_by_name("user\x000") == []
        assert await store.get_entities_by_names(["user\x000"]) == []
        assert [e.id for e in await store.get_entities_by_names(["user\x000", "user 0"])] == [U]


async def test_entities_with_their_components_are_read_in_one_query(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with backend_for(postgres_url) as db:
        store = await seed_agent(db, A, users=(U,), rooms=(R,))
        assert await store.create_component(Component(id="c", entity_id=U, agent_id=A, room_id=R, type="profile"))
        queries: list[str] = []
        read = PostgresDatabase.fetchall

        async def counted(self: PostgresDatabase, sql: str, params: Any = ()) -> Any:
            queries.append(sql)
            return await read(self, sql, params)

        monkeypatch.setattr(PostgresDatabase, "fetchall", counted)
        entity = await store.get_entity(U)
        assert entity is not None and [c.id for c in entity.components] == ["c"]
        in_room = {e.id: e for e in await store.get_entities_for_room(R, include_components=True)}
        assert [c.id for c in in_room[U].components] == ["c"] and in_room[A].components == []
        assert len(queries) == 2


async def test_entities_copied_from_sqlite_are_found_by_name(tmp_path: Path, postgres_url: str) -> None:
    async with Database(tmp_path / "troupe.db") as source:
        await seed_agent(source, A, users=(U,), rooms=(R,))
        async with PostgresDatabase(postgres_url) as target:
            report = await copy_to_postgres(source, target)
            assert report.matches
            found = await target.for_agent(A).search_entities_by_name("USER 0")
            assert [e.id for e in found] == [U]
