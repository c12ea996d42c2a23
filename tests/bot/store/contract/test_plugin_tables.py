"""Plugins' own tables (``PluginMeta.tables``): made, migrated only by adding, and read and
written per agent through ``PluginTable``, alike on both backends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from bot.kernel.errors import StoreError, TableDeclarationError
from bot.kernel.tables import Column, ColumnType, Index, Table, TableValue
from bot.store import Store, StoreBackend

from ..conftest import A

PLUGIN = "@company/my-plugin"

USERS = Table(
    "plugin_users",
    columns=(
        Column("id", ColumnType.TEXT, primary_key=True),
        Column("name", ColumnType.TEXT, required=True),
        Column("visits", ColumnType.INTEGER, required=True, default=0),
    ),
    indexes=(Index(("name",)),),
)

# The same table a later version of the plugin declares: one column more.
USERS_V2 = Table(
    "plugin_users",
    columns=(*USERS.columns, Column("vip", ColumnType.BOOLEAN, required=True, default=False)),
    indexes=USERS.indexes,
)

EVERY_TYPE = Table(
    "values",
    columns=(
        Column("id", ColumnType.INTEGER, primary_key=True),
        Column("text", ColumnType.TEXT),
        Column("real", ColumnType.REAL),
        Column("flag", ColumnType.BOOLEAN),
        Column("at", ColumnType.TIMESTAMP),
        Column("data", ColumnType.JSON, default={"kind": "it's {seq}?"}),
        Column("raw", ColumnType.BYTES),
        Column("order", ColumnType.TEXT),  # one of SQL's own words
    ),
)

SHARED = Table(
    "counters", columns=(Column("key", ColumnType.TEXT, primary_key=True), Column("n", ColumnType.INTEGER)), shared=True
)


async def test_a_plugins_table_is_made_under_its_namespace_once(store: Store) -> None:
    report = await store.ensure_plugin_tables(PLUGIN, [USERS])
    assert report.created == ("company_my_plugin__plugin_users",) and not report.added and not report.warnings
    await store.plugin_table(PLUGIN, USERS).insert({"id": "u1", "name": "Ada"})
    again = await store.ensure_plugin_tables(PLUGIN, [USERS])
    assert (again.created, again.added, again.warnings) == ((), (), ())
    assert await store.plugin_table(PLUGIN, USERS).select() == [{"id": "u1", "name": "Ada", "visits": 0}]


async def test_a_column_added_to_the_declaration_is_added_and_the_rows_stay(
    make_backend: Callable[[], StoreBackend], store: Store
) -> None:
    await store.ensure_plugin_tables(PLUGIN, [USERS])
    await store.plugin_table(PLUGIN, USERS).insert({"id": "u1", "name": "Ada", "visits": 3})
    # A restart with the plugin's next version.
    async with make_backend() as restarted:
        later = restarted.for_agent(A)
        report = await later.ensure_plugin_tables(PLUGIN, [USERS_V2])
        assert report.added == ("company_my_plugin__plugin_users.vip",) and not report.created
        users = later.plugin_table(PLUGIN, USERS_V2)
        assert await users.select() == [{"id": "u1", "name": "Ada", "visits": 3, "vip": False}]
        await users.insert({"id": "u2", "name": "Grace", "vip": True})
        assert await users.select({"vip": True}) == [{"id": "u2", "name": "Grace", "visits": 0, "vip": True}]
        assert (await later.ensure_plugin_tables(PLUGIN, [USERS_V2])).added == ()


async def test_a_changed_type_or_a_column_no_longer_declared_is_kept_and_named(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    await store.ensure_plugin_tables(PLUGIN, [USERS_V2])
    await store.plugin_table(PLUGIN, USERS_V2).insert({"id": "u1", "name": "Ada"})
    changed = Table(
        "plugin_users",
        columns=(Column("id", ColumnType.TEXT, primary_key=True), Column("name", ColumnType.JSON), USERS.columns[2]),
    )
    with caplog.at_level(logging.WARNING):
        report = await store.ensure_plugin_tables(PLUGIN, [changed])
    assert len(report.warnings) == 2
    retyped, dropped = report.warnings
    assert "plugin @company/my-plugin, table company_my_plugin__plugin_users, column name" in retyped
    assert "declared JSON but made as TEXT" in retyped and "never changes a column's type" in retyped
    assert "column vip: in the database but no longer declared" in dropped and "never drops" in dropped
    assert retyped in caplog.text
    # The rows and the column are still there for the declaration that names it again.
    assert await store.plugin_table(PLUGIN, USERS_V2).select() == [
        {"id": "u1", "name": "Ada", "visits": 0, "vip": False}
    ]


async def test_each_agent_sees_only_its_rows(store: Store, store_b: Store) -> None:
    await store.ensure_plugin_tables(PLUGIN, [USERS, SHARED])
    await store_b.ensure_plugin_tables(PLUGIN, [USERS, SHARED])
    mine, theirs = store.plugin_table(PLUGIN, USERS), store_b.plugin_table(PLUGIN, USERS)
    await mine.insert({"id": "u1", "name": "Ada"})
    await theirs.insert({"id": "u1", "name": "Bea"})  # the same key, another agent's row
    assert await mine.select() == [{"id": "u1", "name": "Ada", "visits": 0}]
    assert await theirs.delete({}) == 1
    assert await mine.count() == 1 and await theirs.count() == 0
    # A shared table is every agent's.
    await store.plugin_table(PLUGIN, SHARED).insert({"key": "k", "n": 1})
    assert await store_b.plugin_table(PLUGIN, SHARED).select() == [{"key": "k", "n": 1}]


async def test_rows_are_inserted_read_changed_and_deleted(store: Store) -> None:
    await store.ensure_plugin_tables("notes", [EVERY_TYPE])
    values = store.plugin_table("notes", EVERY_TYPE)
    row: dict[str, TableValue] = {
        "id": 1,
        "text": "é ' ? %s {seq}",
        "real": 2.5,
        "flag": True,
        "at": 1_700_000_000_000,
        "data": {"a": [1, "b", None]},
        "raw": b"\x00\xff",
        "order": "first",
    }
    await values.insert(row)
    await values.insert({"id": 2, "text": "b", "real": 3})
    await values.insert({"id": 3, "text": "B"})
    assert await values.select({"id": 1}) == [row]
    second = (await values.select({"id": 2}))[0]
    assert second["real"] == 3.0 and isinstance(second["real"], float)
    assert second["data"] == {"kind": "it's {seq}?"} and second["flag"] is None  # the default; NULL
    assert [r["id"] for r in await values.select(order_by=("text",))] == [3, 2, 1]  # by code point
    assert [r["id"] for r in await values.select(order_by=("id",), descending=True, limit=2)] == [3, 2]
    assert [r["id"] for r in await values.select(order_by=("id",), offset=1)] == [2, 3]
    assert await values.select({"flag": None}, order_by=("id",)) == await values.select(
        {"text": "b"}
    ) + await values.select({"id": 3})
    assert await values.select({"data": {"a": [1, "b", None]}}) == [row]
    assert await values.update({"id": 2}, {"flag": False, "data": [1, 2]}) == 1
    assert (await values.select({"id": 2}))[0]["flag"] is False
    await values.upsert({"id": 2, "text": "bb"})
    await values.upsert({"id": 4, "text": "d"})
    assert [(r["id"], r["text"], r["data"]) for r in await values.select({"real": 3.0})] == [(2, "bb", [1, 2])]
    assert await values.count() == 4
    assert await values.delete({"id": 4}) == 1 and await values.delete({"id": 4}) == 0
    with pytest.raises(StoreError):
        await values.insert({"id": 1})  # its key is stored


async def test_a_wrong_value_or_column_is_refused_before_the_database(store: Store) -> None:
    await store.ensure_plugin_tables(PLUGIN, [USERS])
    users = store.plugin_table(PLUGIN, USERS)
    with pytest.raises(ValueError, match="the column visits holds INTEGER values, not str"):
        await users.insert({"id": "u1", "name": "Ada", "visits": "3"})
    with pytest.raises(ValueError, match="has no column 'age'"):
        await users.select({"age": 3})
    with pytest.raises(ValueError, match="the column name is required"):
        await users.update({"id": "u1"}, {"name": None})
    with pytest.raises(ValueError, match="an upsert needs the key column id"):
        await users.upsert({"name": "Ada"})
    assert await users.count() == 0


@pytest.mark.parametrize(
    ("tables", "problem"),
    [
        ([Table("Bad-Name", columns=(Column("id", ColumnType.TEXT, primary_key=True),))], "a table's name is"),
        (
            [Table("t", columns=(Column("id", ColumnType.TEXT, primary_key=True), Column("id", ColumnType.TEXT)))],
            "the column 'id' is declared twice",
        ),
        ([Table("t", columns=(Column("id", ColumnType.TEXT),))], "has no primary key"),
        ([Table("t", columns=(Column("agent_id", ColumnType.TEXT, primary_key=True),))], "the store adds agent_id"),
        (
            [Table("t", columns=(Column("id", ColumnType.TEXT, primary_key=True),), indexes=(Index(("x",)),))],
            "the column 'x', which the table does not declare",
        ),
        (
            [Table("t", columns=(Column("id", ColumnType.TEXT, primary_key=True, default=1),))],
            "its default 1 is not a TEXT value",
        ),
        ([USERS, USERS], "declared twice"),
        ([Table("t" * 60, columns=(Column("id", ColumnType.TEXT, primary_key=True),))], "longer than 63 bytes"),
    ],
)
async def test_a_bad_declaration_names_the_plugin_and_makes_nothing(
    store: Store, tables: list[Table], problem: str
) -> None:
    with pytest.raises(TableDeclarationError, match=problem) as caught:
        await store.ensure_plugin_tables(PLUGIN, tables)
    assert caught.value.plugin == PLUGIN and str(caught.value).startswith("plugin @company/my-plugin declares tables")
    assert (await store.ensure_plugin_tables(PLUGIN, [USERS])).created  # nothing was made before


async def test_two_plugins_with_one_namespace_cannot_share_a_table(store: Store) -> None:
    await store.ensure_plugin_tables("my-plugin", [USERS])
    with pytest.raises(TableDeclarationError, match="belongs to the plugin my-plugin") as caught:
        await store.ensure_plugin_tables("my_plugin", [SHARED, USERS])
    assert caught.value.plugin == "my_plugin"
    # Only that plugin is refused: none of its tables was made, the other's are untouched.
    assert (await store.ensure_plugin_tables("my_plugin", [SHARED])).created == ("my_plugin__counters",)
    assert (await store.ensure_plugin_tables("other", [USERS])).created == ("other__plugin_users",)


async def test_a_new_required_column_needs_a_default(store: Store) -> None:
    await store.ensure_plugin_tables(PLUGIN, [USERS])
    later = Table("plugin_users", columns=(*USERS.columns, Column("email", ColumnType.TEXT, required=True)))
    with pytest.raises(TableDeclarationError, match="the new column 'email' is required but has no default"):
        await store.ensure_plugin_tables(PLUGIN, [later])


async def test_daemons_migrating_at_once_make_each_table_once(
    make_backend: Callable[[], StoreBackend], backend: StoreBackend, store: Store
) -> None:
    others = [make_backend() for _ in range(3)]
    for other in others:
        await other.open()
    try:
        agents = [store, *(o.for_agent(A) for o in others)]
        reports = await asyncio.gather(*(a.ensure_plugin_tables(PLUGIN, [USERS_V2, SHARED]) for a in agents))
        made = [name for r in reports for name in r.created]
        assert sorted(made) == ["company_my_plugin__counters", "company_my_plugin__plugin_users"]
        await agents[-1].plugin_table(PLUGIN, USERS_V2).insert({"id": "u1", "name": "Ada"})
        assert await store.plugin_table(PLUGIN, USERS_V2).count() == 1
    finally:
        for other in others:
            await other.close()


async def test_an_agents_rows_go_with_the_agent(store: Store, store_b: Store) -> None:
    for agent in (store, store_b):
        await agent.ensure_plugin_tables(PLUGIN, [USERS])
        await agent.plugin_table(PLUGIN, USERS).insert({"id": "u1", "name": "Ada"})
    assert await store.delete_agent()
    assert await store.plugin_table(PLUGIN, USERS).count() == 0
    assert await store_b.plugin_table(PLUGIN, USERS).count() == 1
