"""The vocabulary of plugins' tables: namespaces, full names, what a declaration may say, and
which values each column type takes."""

from __future__ import annotations

import pytest

from bot.kernel.errors import TableDeclarationError
from bot.kernel.tables import Column, ColumnType, Index, Table, check_tables, check_value, namespace, physical_name

KEY = Column("id", ColumnType.TEXT, primary_key=True)


@pytest.mark.parametrize(
    ("plugin", "expected"),
    [
        ("@company/my-plugin", "company_my_plugin"),
        ("notes", "notes"),
        ("@elizaos/plugin-SQL", "elizaos_plugin_sql"),
        ("my__plugin", "my_plugin"),
        ("--odd--", "odd"),
    ],
)
def test_a_plugins_namespace_is_its_name_in_lower_case_with_single_underscores(plugin: str, expected: str) -> None:
    assert namespace(plugin) == expected
    assert physical_name(plugin, "t") == f"{expected}__t"


def test_a_good_declaration_passes() -> None:
    check_tables(
        "notes",
        [
            Table(
                "notes",
                columns=(
                    KEY,
                    Column("n", ColumnType.INTEGER, required=True, default=0),
                    Column("x", ColumnType.REAL, default=1),
                    Column("data", ColumnType.JSON, default={"a": [1]}),
                ),
                indexes=(Index(("n", "x"), unique=True),),
            ),
            Table("counts", columns=(Column("agent_id", ColumnType.TEXT, primary_key=True),), shared=True),
        ],
    )


@pytest.mark.parametrize(
    ("plugin", "table", "problem"),
    [
        ("123", Table("t", columns=(KEY,)), "does not start with a letter"),
        ("p", Table("a__b", columns=(KEY,)), "single _"),
        ("p", Table("t", columns=(KEY, Column("a__b", ColumnType.TEXT))), "single _"),
        ("p", Table("t", columns=()), "has no columns"),
        ("p", Table("t", columns=(KEY, Column("raw", ColumnType.BYTES, default=b"x"))), "takes no default"),
        ("p", Table("t", columns=(KEY,), indexes=(Index(()),)), "names no column"),
        ("p", Table("t", columns=(KEY,), indexes=(Index(("id", "id")),)), "names a column twice"),
    ],
)
def test_a_bad_declaration_names_the_plugin_and_the_table(plugin: str, table: Table, problem: str) -> None:
    with pytest.raises(TableDeclarationError, match=problem) as caught:
        check_tables(plugin, [table])
    assert caught.value.plugin == plugin and f"plugin {plugin} declares tables" in str(caught.value)


def test_each_type_takes_its_own_values_only() -> None:
    assert (
        ColumnType.INTEGER.accepts(3) and not ColumnType.INTEGER.accepts(True) and not ColumnType.INTEGER.accepts(2**63)
    )
    assert ColumnType.REAL.accepts(3) and not ColumnType.REAL.accepts(float("nan"))
    assert ColumnType.BOOLEAN.accepts(False) and not ColumnType.BOOLEAN.accepts(0)
    assert ColumnType.JSON.accepts({"a": 1}) and not ColumnType.JSON.accepts(b"x")
    table = Table("t", columns=(KEY, Column("n", ColumnType.INTEGER, required=True)))
    with pytest.raises(ValueError, match="the column n is required"):
        check_value(table, table.column("n"), None)
    with pytest.raises(ValueError, match="holds INTEGER values, not float"):
        check_value(table, table.column("n"), 1.5)
