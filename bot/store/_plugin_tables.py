"""Tables plugins declare (``PluginMeta.tables``): made and migrated, then read and written. Both backends.

A declaration (:class:`~bot.kernel.tables.Table`) is typed, so this module writes each
backend's DDL for it: the column types and literals below are the only place the two differ.
A table is named ``<namespace>__<table>`` on both backends (not a PostgreSQL schema per plugin):
one name in the docs, in ``troupe store copy`` and in a shell, no schema to create (a privilege a
database user may lack) and no search path to mind.

Migration (:meth:`PluginTablesMixin.ensure_plugin_tables`) is one transaction per plugin, on
PostgreSQL under the advisory lock of the store's own migrations, so daemons starting together
take turns and the later ones find nothing to do. It only adds: missing tables, columns and
indexes. A column declared with another type than it was made with, or no longer declared, stays
as it is, and the report says so. ``plugin_tables`` records each table's plugin (two plugins
whose names make the same namespace cannot share a table) and the types its columns were made with.

:class:`PluginTable` is one agent's access to one table: insert, upsert, select, update, delete
and count with values as parameters, each checked against its column's type first.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.kernel.errors import TableDeclarationError
from bot.kernel.tables import (
    AGENT_COLUMN,
    MAX_NAME_LENGTH,
    Column,
    ColumnType,
    Index,
    Table,
    TableRow,
    TableValue,
    check_tables,
    check_value,
    columns_named,
    physical_name,
)
from bot.kernel.types import now_ms
from bot.store._dialect import Dialect, Statements, Step, Unit
from bot.store._rows import dumps, loads
from bot.store._scoped import validate_count

if TYPE_CHECKING:
    from bot.store._rows import Row

__all__ = ["PluginTable", "PluginTablesMixin", "TablesReport", "migration", "recorded_table"]

_log = logging.getLogger(__name__)

# The advisory lock of the store's own migrations (bot/store/postgres/_migrations.py): "troupe".
_PG_LOCK = 0x74726F757065

_TYPES: dict[str, dict[ColumnType, str]] = {
    # SQLite: type names with the affinity each value needs (JSON text must stay text).
    "sqlite": {
        ColumnType.TEXT: "TEXT",
        ColumnType.INTEGER: "INTEGER",
        ColumnType.REAL: "REAL",
        ColumnType.BOOLEAN: "INTEGER",
        ColumnType.TIMESTAMP: "INTEGER",
        ColumnType.JSON: "TEXT",
        ColumnType.BYTES: "BLOB",
    },
    "postgres": {
        ColumnType.TEXT: "text",
        ColumnType.INTEGER: "bigint",
        ColumnType.REAL: "double precision",
        ColumnType.BOOLEAN: "boolean",
        ColumnType.TIMESTAMP: "bigint",
        ColumnType.JSON: "jsonb",
        ColumnType.BYTES: "bytea",
    },
}

_COLUMNS_OF = {
    "sqlite": "SELECT name FROM pragma_table_info(?)",
    "postgres": "SELECT column_name AS name FROM information_schema.columns "
    "WHERE table_schema = current_schema() AND table_name = ?",
}


@dataclass(frozen=True, slots=True)
class TablesReport:
    """What migrating one plugin's tables did, and what it left for someone to decide."""

    plugin: str
    created: tuple[str, ...] = ()
    """Tables made, by their full names."""
    added: tuple[str, ...] = ()
    """Columns added, as ``table.column``."""
    warnings: tuple[str, ...] = ()
    """Declarations the database does not follow (a changed type, a column no longer declared):
    each names the plugin, table and column, and what to do."""


def _quote(name: str) -> str:
    # Names are checked (letters, digits, _): quoting only keeps SQL's own words usable as names.
    return f'"{name}"'


def _literal(dialect: Dialect, column: Column) -> str:
    value = column.default
    if isinstance(value, bool) and column.type is ColumnType.BOOLEAN:
        return ("1" if value else "0") if dialect.name == "sqlite" else ("true" if value else "false")
    if column.type is ColumnType.JSON:
        text = "'" + dumps(value).replace("'", "''") + "'"
        return text + "::jsonb" if dialect.name == "postgres" else text
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return repr(float(value))
    return str(int(value))  # type: ignore[arg-type]  # INTEGER, TIMESTAMP (checked by check_tables)


def _column_sql(dialect: Dialect, column: Column) -> str:
    sql = f"{_quote(column.name)} {_TYPES[dialect.name][column.type]}"
    if column.required or column.primary_key:
        sql += " NOT NULL"
    if column.default is not None:
        sql += f" DEFAULT {_literal(dialect, column)}"
    return sql


def _key(table: Table) -> tuple[str, ...]:
    return table.primary_key if table.shared else (AGENT_COLUMN, *table.primary_key)


def _create_sql(dialect: Dialect, name: str, table: Table) -> str:
    parts = (
        []
        if table.shared
        else [
            f"{AGENT_COLUMN} {_TYPES[dialect.name][ColumnType.TEXT]} NOT NULL REFERENCES agents(id) ON DELETE CASCADE"
        ]
    )
    parts += [_column_sql(dialect, c) for c in table.columns]
    parts.append(f"PRIMARY KEY ({', '.join(map(_quote, _key(table)))})")
    return f"CREATE TABLE IF NOT EXISTS {_quote(name)} ({', '.join(parts)})"


def _index_sql(name: str, table: Table, index: Index) -> str:
    columns = index.columns if table.shared else (AGENT_COLUMN, *index.columns)
    # Names hold no "__" (check_tables): joined with it, two indexes never get one name.
    index_name = f"{name}__{'__'.join(index.columns)}{'__unique' if index.unique else ''}"
    if len(index_name.encode()) > MAX_NAME_LENGTH:  # PostgreSQL keeps 63 bytes: short, and still its own
        index_name = f"{name[:40]}__ix_{hashlib.sha256(index_name.encode()).hexdigest()[:16]}"
    unique = "UNIQUE " if index.unique else ""
    return (
        f"CREATE {unique}INDEX IF NOT EXISTS {_quote(index_name)} ON {_quote(name)} ({', '.join(map(_quote, columns))})"
    )


def _declaration(table: Table) -> str:
    """``table`` as JSON, kept with its record: ``troupe store copy`` makes it again elsewhere."""
    return dumps(
        {
            "name": table.name,
            "shared": table.shared,
            "columns": [
                {"name": c.name, "type": c.type.value, "primary_key": c.primary_key, "required": c.required}
                | ({"default": c.default} if c.default is not None else {})
                for c in table.columns
            ],
            "indexes": [{"columns": list(i.columns), "unique": i.unique} for i in table.indexes],
        }
    )


def recorded_table(declaration: str, columns: str) -> Table:
    """The table a record describes as the database holds it: its last declaration, each column
    with the type it was made with, and the columns no longer declared (optional, as they are kept)."""
    spec, types = loads(declaration), loads(columns, {})
    made = []
    for c in spec["columns"]:
        kind = ColumnType(types.get(c["name"], c["type"]))
        default = c.get("default") if kind.value == c["type"] else None  # a default of the declared type
        made.append(Column(c["name"], kind, c["primary_key"], c["required"], default))
    declared = {c.name for c in made}
    made += [Column(n, ColumnType(t)) for n, t in types.items() if n not in declared]
    indexes = tuple(Index(tuple(i["columns"]), i["unique"]) for i in spec["indexes"])
    return Table(spec["name"], tuple(made), indexes, spec["shared"])


def migration(dialect: Dialect, plugin: str, tables: Sequence[Table]) -> Unit[TablesReport]:
    """The statements that make what is missing of ``plugin``'s ``tables`` (checked by the
    caller), as one unit of work; what they did."""
    if dialect.name == "postgres":
        yield Step("SELECT pg_advisory_xact_lock(?)", (_PG_LOCK,))
    created: list[str] = []
    added: list[str] = []
    warnings: list[str] = []
    for table in tables:
        name = physical_name(plugin, table.name)
        done = yield Step("SELECT plugin, columns FROM plugin_tables WHERE name = ?", (name,))
        recorded = done.rows[0] if done.rows else None
        if recorded is not None and recorded["plugin"] != plugin:
            raise TableDeclarationError(
                plugin,
                f"its table {table.name!r} is {name}, which belongs to the plugin {recorded['plugin']}: "
                "two plugins whose names differ only in punctuation cannot both keep tables; rename one",
            )
        types: dict[str, str] = loads(recorded["columns"], {}) if recorded is not None else {}
        done = yield Step(_COLUMNS_OF[dialect.name], (name,))
        stored = {str(r["name"]) for r in done.rows}
        if not stored:
            yield Step(_create_sql(dialect, name, table), raw=True)
            created.append(name)
            types = {}  # made now as declared, whatever an earlier table of that name held
        else:
            for column in table.columns:
                if column.name in stored:
                    continue
                if column.primary_key:
                    raise TableDeclarationError(
                        plugin,
                        f"table {table.name!r}: the key column {column.name!r} is new, and a table's key cannot change: "
                        "declare it as an ordinary column, or a new table",
                    )
                if column.required and column.default is None:
                    raise TableDeclarationError(
                        plugin,
                        f"table {table.name!r}: the new column {column.name!r} is required but has no default, "
                        "which the rows already stored would need: give it a default, or make it optional",
                    )
                yield Step(f"ALTER TABLE {_quote(name)} ADD COLUMN {_column_sql(dialect, column)}", raw=True)
                added.append(f"{name}.{column.name}")
            warnings += _drift(plugin, name, table, stored, types)
        for index in table.indexes:
            yield Step(_index_sql(name, table, index), raw=True)
        kept = {c.name: types.get(c.name, c.type.value) for c in table.columns}
        kept.update({n: t for n, t in types.items() if n not in kept})  # a column no longer declared is still there
        yield Step(
            "INSERT INTO plugin_tables (name, plugin, columns, declaration, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET columns = excluded.columns, declaration = excluded.declaration, "
            "updated_at = excluded.updated_at",
            (name, plugin, dumps(kept), _declaration(table), now_ms()),
        )
    return TablesReport(plugin, tuple(created), tuple(added), tuple(warnings))


def _drift(plugin: str, name: str, table: Table, stored: set[str], types: Mapping[str, str]) -> list[str]:
    """What the declaration asks that the database does not do: troupe never drops or retypes."""
    warnings = []
    for column in table.columns:
        was = types.get(column.name)
        if was is not None and was != column.type.value:
            warnings.append(
                f"plugin {plugin}, table {name}, column {column.name}: declared {column.type.name} but made as "
                f"{was.upper()}; troupe never changes a column's type: declare it {was.upper()} again, or add a "
                "column of the new type and copy the values yourself"
            )
    declared = {c.name for c in table.columns} | ({AGENT_COLUMN} if not table.shared else set())
    for gone in sorted(stored - declared):
        warnings.append(
            f"plugin {plugin}, table {name}, column {gone}: in the database but no longer declared; troupe "
            "never drops a column, so its values stay: declare it again, or drop it yourself once nothing needs it"
        )
    return warnings


class PluginTablesMixin(Statements):
    """Plugins' own tables: made and migrated (``ensure_plugin_tables``), and each one's rows."""

    __slots__ = ()

    async def ensure_plugin_tables(self, plugin: str, tables: Sequence[Table]) -> TablesReport:
        """Make what is missing of ``plugin``'s ``tables`` (tables, columns, indexes) in one
        transaction; a no-op when nothing is. Logs what it made and each warning of the report.

        Raises:
            TableDeclarationError: a declaration cannot be made (a bad name, a column twice, a
                table of another plugin's, a required column added without default); nothing of
                the plugin's changed.
            StoreError: the database failed.
        """
        check_tables(plugin, tables)
        report = await self._write(lambda: migration(self.dialect, plugin, tables), tables=None)
        if report.created or report.added:
            _log.info(
                "plugin %s: made tables %s, added columns %s",
                plugin,
                ", ".join(report.created) or "none",
                ", ".join(report.added) or "none",
            )
        for warning in report.warnings:
            _log.warning("%s", warning)
        return report

    def plugin_table(self, plugin: str, table: Table) -> PluginTable:
        """This agent's rows of ``plugin``'s ``table`` (made by :meth:`ensure_plugin_tables`)."""
        return PluginTable(self, plugin, table)


class PluginTable:
    """One plugin table as one agent sees it (all its rows, for a ``shared`` table).

    Rows are mappings of column name to value (:data:`~bot.kernel.tables.TableValue`); ``where``
    mappings select the rows whose columns equal every value given (``None``: the column is NULL).
    A value of the wrong type or a column the table does not declare raises ValueError before
    anything is sent; the database's refusals (a key stored already, a required column left out)
    and failures raise StoreError.
    """

    __slots__ = ("_name", "_store", "_table")

    def __init__(self, store: Statements, plugin: str, table: Table) -> None:
        self._store = store
        self._table = table
        self._name = _quote(physical_name(plugin, table.name))

    def __repr__(self) -> str:
        return f"<PluginTable {self._name} agent_id={self._store._agent_id!r}>"

    @property
    def table(self) -> Table:
        """The declaration."""
        return self._table

    async def insert(self, row: TableRow) -> None:
        """Store a new row; StoreError if its key is stored already."""
        names, values, marks = self._values(row)
        await self._store._run(f"INSERT INTO {self._name} ({names}) VALUES ({marks})", values, tables=())

    async def upsert(self, row: TableRow) -> None:
        """Store ``row``, or change the row with its key to the values it gives."""
        names, values, marks = self._values(row)
        key = _key(self._table)
        missing = [k for k in self._table.primary_key if k not in row]
        if missing:
            raise ValueError(f"table {self._table.name}: an upsert needs the key column {missing[0]}")
        changes = [n for n in row if n not in key]
        action = (
            "DO UPDATE SET " + ", ".join(f"{_quote(n)} = excluded.{_quote(n)}" for n in changes)
            if changes
            else "DO NOTHING"
        )
        sql = (
            f"INSERT INTO {self._name} ({names}) VALUES ({marks}) ON CONFLICT ({', '.join(map(_quote, key))}) {action}"
        )
        await self._store._run(sql, values, tables=())

    async def select(
        self,
        where: TableRow | None = None,
        *,
        order_by: Sequence[str] = (),
        descending: bool = False,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, TableValue]]:
        """The rows ``where`` selects (all without it), ordered by ``order_by``'s columns (text by
        code point, on both backends), at most ``limit`` of them after skipping ``offset``."""
        validate_count(limit, "limit")
        validate_count(offset, "offset")
        clause, params = self._where(where or {})
        ordering = columns_named(self._table, order_by)
        direction = " DESC" if descending else ""
        order = ", ".join(
            f"{_quote(c.name)}{'{by_code_point}' if c.type is ColumnType.TEXT else ''}{direction}" for c in ordering
        )
        columns = ", ".join(_quote(c.name) for c in self._table.columns)
        sql = f"SELECT {columns} FROM {self._name} WHERE {clause}"
        if order:
            sql += f" ORDER BY {order}"
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            params += [self._store.dialect.no_limit if limit is None else limit, offset]
        rows = await self._store._rows(sql, params)
        return [self._read(r) for r in rows]

    async def count(self, where: TableRow | None = None) -> int:
        """How many rows ``where`` selects (all without it)."""
        clause, params = self._where(where or {})
        row = await self._store._row(f"SELECT count(*) AS n FROM {self._name} WHERE {clause}", params)
        return int(row["n"]) if row is not None else 0

    async def update(self, where: TableRow, changes: TableRow) -> int:
        """Set ``changes`` on the rows ``where`` selects; how many changed."""
        if not changes:
            raise ValueError(f"table {self._table.name}: an update needs at least one column to change")
        sets: list[str] = []
        params: list[object] = []
        for column in columns_named(self._table, changes):
            value = changes[column.name]
            check_value(self._table, column, value)
            sets.append(f"{_quote(column.name)} = ?{'{json}' if column.type is ColumnType.JSON else ''}")
            params.append(self._write_value(column, value))
        clause, where_params = self._where(where)
        return await self._store._run(
            f"UPDATE {self._name} SET {', '.join(sets)} WHERE {clause}", [*params, *where_params], tables=()
        )

    async def delete(self, where: TableRow) -> int:
        """Delete the rows ``where`` selects (``{}``: every row); how many went."""
        clause, params = self._where(where)
        return await self._store._run(f"DELETE FROM {self._name} WHERE {clause}", params, tables=())

    # -- values ----------------------------------------------------------------------------------

    def _values(self, row: TableRow) -> tuple[str, list[object], str]:
        if not row:
            raise ValueError(f"table {self._table.name}: a row needs at least its key columns")
        names: list[str] = []
        values: list[object] = []
        marks: list[str] = []
        if not self._table.shared:
            names.append(AGENT_COLUMN)
            values.append(self._store._agent_id)
            marks.append("?")
        for column in columns_named(self._table, row):
            value = row[column.name]
            check_value(self._table, column, value)
            names.append(_quote(column.name))
            values.append(self._write_value(column, value))
            marks.append("?{json}" if column.type is ColumnType.JSON else "?")
        return ", ".join(names), values, ", ".join(marks)

    def _where(self, where: TableRow) -> tuple[str, list[object]]:
        clauses: list[str] = []
        params: list[object] = []
        if not self._table.shared:
            clauses.append(f"{AGENT_COLUMN} = ?")
            params.append(self._store._agent_id)
        for column in columns_named(self._table, where):
            value = where[column.name]
            if value is None:
                clauses.append(f"{_quote(column.name)} IS NULL")
                continue
            check_value(self._table, column, value)
            if column.type is ColumnType.JSON:  # JSON compares as JSON on PostgreSQL, as text on SQLite
                clauses.append(f"{_quote(column.name)} = ?{{json}}")
            else:
                clauses.append(f"{_quote(column.name)} = ?")
            params.append(self._write_value(column, value))
        return " AND ".join(clauses) or "1 = 1", params

    def _write_value(self, column: Column, value: TableValue) -> object:
        if value is None:
            return None
        if column.type is ColumnType.JSON:
            return dumps(value)
        if column.type is ColumnType.BOOLEAN:
            return self._store.dialect.boolean(bool(value))
        if column.type is ColumnType.REAL:
            return float(value)  # type: ignore[arg-type]  # checked: int or float
        return value

    def _read(self, row: Row) -> dict[str, TableValue]:
        values: dict[str, TableValue] = {}
        for column in self._table.columns:
            value = row[column.name]
            if value is not None:
                if column.type is ColumnType.JSON:
                    value = loads(value)
                elif column.type is ColumnType.BOOLEAN:
                    value = bool(value)
                elif column.type is ColumnType.BYTES:
                    value = bytes(value)
            values[column.name] = value
        return values
