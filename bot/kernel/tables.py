"""Tables a plugin declares for itself: :class:`Table`, :class:`Column`, :class:`Index`.

A plugin lists its tables in its meta (``PluginMeta(tables=(NOTES,))``); the store creates them
when an agent loading the plugin starts, adds the columns a newer declaration names, and gives
the plugin its rows through ``runtime.table(NOTES)``. The declaration is typed, never SQL, so
the one declaration makes the right tables on SQLite and on PostgreSQL alike.

Each table lives under the plugin's namespace (:func:`namespace`): ``notes`` of the plugin
``@company/my-plugin`` is the table ``company_my_plugin__notes`` on either database. A table is
the agent's own unless declared ``shared``: the store adds an ``agent_id`` column, keys each
row by it, and every read and write of one agent sees only its rows.

:func:`check_tables` says what is wrong with a declaration (a bad name, a column twice, no
primary key …) as a :class:`~bot.kernel.errors.TableDeclarationError` naming the plugin and what
to change; nothing here raises while a plugin package is imported.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.kernel.errors import TableDeclarationError

__all__ = [
    "AGENT_COLUMN",
    "Column",
    "ColumnType",
    "Index",
    "MAX_NAME_LENGTH",
    "Table",
    "TableRow",
    "TableValue",
    "check_tables",
    "check_value",
    "columns_named",
    "namespace",
    "physical_name",
]

#: What one column of a row holds in Python: ``str`` (TEXT), ``int`` (INTEGER, TIMESTAMP in ms),
#: ``float`` (REAL), ``bool`` (BOOLEAN), ``bytes`` (BYTES), a JSON value (JSON), or ``None``.
TableValue = str | int | float | bool | bytes | None | list[object] | dict[str, object]

#: A row as a plugin writes and reads it: column name to value.
TableRow = Mapping[str, TableValue]

#: The column the store adds to a table of the agent's own (not ``shared``).
AGENT_COLUMN = "agent_id"

#: The longest name PostgreSQL keeps (63 bytes): a table's full name (namespace included), a column's.
MAX_NAME_LENGTH = 63

# "__" separates a plugin's namespace from a table's name, and columns in an index's name.
_NAME = re.compile(r"(?!.*__)[a-z][a-z0-9_]*\Z")


class ColumnType(enum.Enum):
    """What a column holds, the same on both databases."""

    TEXT = "text"
    INTEGER = "integer"
    """A 64-bit integer."""
    REAL = "real"
    """A double-precision float."""
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"
    """Milliseconds since the epoch as an ``int`` (``now_ms()``), as troupe keeps every time."""
    JSON = "json"
    """Any JSON value (dict, list, str, number, bool); ``None`` is SQL NULL."""
    BYTES = "bytes"

    def accepts(self, value: object) -> bool:
        """Whether ``value`` (not ``None``) is a value of this type."""
        match self:
            case ColumnType.TEXT:
                return isinstance(value, str)
            case ColumnType.INTEGER | ColumnType.TIMESTAMP:
                return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
            case ColumnType.REAL:
                return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            case ColumnType.BOOLEAN:
                return isinstance(value, bool)
            case ColumnType.JSON:
                return isinstance(value, str | int | float | bool | list | dict)
            case ColumnType.BYTES:
                return isinstance(value, bytes)


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name (lower case letters, digits and single ``_``, a letter first) and type.

    ``required`` columns are NOT NULL. ``default`` is what a row that leaves the column out gets
    (and what rows already stored get when the column is added later): a required column added
    to a table that has rows needs one. BYTES columns take no default.
    """

    name: str
    type: ColumnType
    primary_key: bool = False
    required: bool = False
    default: TableValue = None


@dataclass(frozen=True, slots=True)
class Index:
    """An index over ``columns`` (in order); ``unique``: no two rows share their values. On a
    table of the agent's own both are per agent (the store puts ``agent_id`` first)."""

    columns: tuple[str, ...]
    unique: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    """A table a plugin declares: its name (as a column's), columns, indexes, and whether every
    agent shares its rows (``shared``) or each has its own (the default).

    Give it a primary key (one column or several): rows are updated and deleted by their values.
    """

    name: str
    columns: tuple[Column, ...]
    indexes: tuple[Index, ...] = ()
    shared: bool = False

    def column(self, name: str) -> Column:
        """The column called ``name``; KeyError if the table has none."""
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)

    @property
    def primary_key(self) -> tuple[str, ...]:
        """The names of the primary key's columns, in declaration order."""
        return tuple(c.name for c in self.columns if c.primary_key)


def namespace(plugin: str) -> str:
    """The prefix of a plugin's tables: its name in lower case, every run of other characters than
    letters and digits as one ``_`` (``@company/my-plugin`` → ``company_my_plugin``)."""
    return re.sub(r"[^a-z0-9]+", "_", plugin.lower().lstrip("@")).strip("_")


def physical_name(plugin: str, table: str) -> str:
    """The table's name in the database: ``<namespace>__<table>``, the same on both backends."""
    return f"{namespace(plugin)}__{table}"


def check_tables(plugin: str, tables: Iterable[Table]) -> None:
    """Raise :class:`TableDeclarationError` naming ``plugin`` if any of ``tables`` cannot be made."""
    ns = namespace(plugin)
    if not ns or not ns[0].isalpha():
        _fail(plugin, f"its name makes the table prefix {ns!r}, which does not start with a letter: rename it")
    seen: set[str] = set()
    for table in tables:
        if not isinstance(table, Table):
            _fail(plugin, f"PluginMeta.tables holds {table!r}, which is not a Table")
        if table.name in seen:
            _fail(plugin, f"the table {table.name!r} is declared twice: keep one declaration")
        seen.add(table.name)
        _check_table(plugin, table)


def _check_table(plugin: str, table: Table) -> None:
    where = f"table {table.name!r}"
    if not isinstance(table.name, str) or not _NAME.match(table.name):
        _fail(plugin, f"{where}: a table's name is lower case letters, digits and single _, starting with a letter")
    full = physical_name(plugin, table.name)
    if len(full.encode()) > MAX_NAME_LENGTH:
        _fail(plugin, f"{where}: its full name {full} is longer than {MAX_NAME_LENGTH} bytes: shorten it")
    if not table.columns:
        _fail(plugin, f"{where} has no columns")
    names: set[str] = set()
    for column in table.columns:
        _check_column(plugin, table, column)
        if column.name in names:
            _fail(plugin, f"{where}: the column {column.name!r} is declared twice: keep one")
        names.add(column.name)
    if not table.primary_key:
        _fail(plugin, f"{where} has no primary key: mark its key column (or columns) primary_key=True")
    for index in table.indexes:
        if not index.columns:
            _fail(plugin, f"{where}: an index names no column")
        unknown = [c for c in index.columns if c not in names]
        if unknown:
            _fail(plugin, f"{where}: an index names the column {unknown[0]!r}, which the table does not declare")
        if len(set(index.columns)) != len(index.columns):
            _fail(plugin, f"{where}: an index names a column twice")


def _check_column(plugin: str, table: Table, column: Column) -> None:
    where = f"table {table.name!r}, column {column.name!r}"
    if not isinstance(column.name, str) or not _NAME.match(column.name) or len(column.name) > MAX_NAME_LENGTH:
        _fail(
            plugin,
            f"table {table.name!r}: the column name {column.name!r} is not lower case letters, digits and single _, "
            f"starting with a letter, at most {MAX_NAME_LENGTH} long",
        )
    if not isinstance(column.type, ColumnType):
        _fail(plugin, f"{where}: its type {column.type!r} is not a ColumnType")
    if column.name == AGENT_COLUMN and not table.shared:
        _fail(plugin, f"{where}: the store adds {AGENT_COLUMN} to a table of the agent's own: rename the column")
    if column.default is not None:
        if column.type is ColumnType.BYTES:
            _fail(plugin, f"{where}: a BYTES column takes no default")
        if not column.type.accepts(column.default):
            _fail(plugin, f"{where}: its default {column.default!r} is not a {column.type.name} value")


def check_value(table: Table, column: Column, value: object) -> None:
    """Raise ValueError unless ``value`` may be written to ``column`` of ``table``."""
    if value is None:
        if column.required or column.primary_key:
            raise ValueError(f"table {table.name}: the column {column.name} is required, and was given None")
        return
    if not column.type.accepts(value):
        raise ValueError(
            f"table {table.name}: the column {column.name} holds {column.type.name} values, "
            f"not {type(value).__name__} ({value!r:.40})"
        )


def columns_named(table: Table, names: Sequence[str] | Mapping[str, object]) -> list[Column]:
    """The columns of ``table`` called ``names``; ValueError naming one it lacks."""
    found = []
    for name in names:
        try:
            found.append(table.column(name))
        except KeyError:
            known = ", ".join(c.name for c in table.columns)
            raise ValueError(f"table {table.name} has no column {name!r} (it has {known})") from None
    return found


def _fail(plugin: str, problem: str) -> None:
    raise TableDeclarationError(plugin, problem)
