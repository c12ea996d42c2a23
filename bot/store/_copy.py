"""``troupe store copy``: a SQLite troupe moved into PostgreSQL, row for row.

Table by table in the order foreign keys need, every row of the SQLite file is written to the
(empty) PostgreSQL database in one transaction: either everything arrives or nothing does.
Values are converted by the target column's type (JSON text to jsonb, 0/1 to booleans); a
memory's vectors, one SQLite column per dimension (and one for every other length), become one
row per dimension, and each agent's embedding length goes along. Columns PostgreSQL computes
itself (the keyword index) are left to it, and the identity that orders memories written in the
same millisecond continues after the copied ones. Afterwards the rows of every table are counted
on both sides.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.kernel.errors import StoreError
from bot.store._connect import Connection
from bot.store._database import Database
from bot.store._rows import fold_names, loads
from bot.store._scoped import new_id
from bot.store._vectors import DIMENSION_MAP, OTHER_DIMENSIONS, decode_vector, dimension_key

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    from bot.store.postgres import PostgresDatabase

__all__ = ["CopyReport", "TABLES", "copy_store", "copy_to_postgres"]

#: Every table of the store, parents before children.
TABLES = (
    "agents",
    "entities",
    "worlds",
    "rooms",
    "participants",
    "memories",
    "embeddings",
    "relationships",
    "components",
    "cache",
    "logs",
    "tasks",
    "knowledge_sources",
    "message_handling",
    "inbox",
    "message_traces",
)

_CHUNK = 2000  # rows read from SQLite at a time
# Tables SQLite keeps without a rowid, read in their primary key's order.
_WITHOUT_ROWID = {
    "knowledge_sources": "scope_id, owner_id, source",
    "message_handling": "agent_id, memory_id",
    "inbox": "agent_id, source, event_id",
}


@dataclass
class CopyReport:
    """Rows per table: copied from SQLite, and found in PostgreSQL afterwards."""

    source: dict[str, int] = field(default_factory=dict)
    target: dict[str, int] = field(default_factory=dict)

    @property
    def matches(self) -> bool:
        return self.source == self.target


async def copy_store(source: str | os.PathLike[str], target: str) -> CopyReport:
    """Open the SQLite file ``source`` and the PostgreSQL database ``target``, and copy the one
    into the other (see :func:`copy_to_postgres`)."""
    from bot.store.postgres import PostgresDatabase  # only here: the driver is needed only here

    async with Database(source) as sqlite, PostgresDatabase(target) as postgres:
        return await copy_to_postgres(sqlite, postgres)


async def copy_to_postgres(
    source: Database, target: PostgresDatabase, *, progress: Callable[[str, int], None] | None = None
) -> CopyReport:
    """Copy every row of ``source`` into ``target`` (both open; ``target`` must hold no troupe),
    plugins' tables included.

    Raises StoreError when the target already has agents, or when a row cannot be written
    (nothing is then copied).
    """
    existing = await target.fetchone("SELECT count(*) AS n FROM agents")
    if existing is not None and existing["n"]:
        raise StoreError(f"{target.path} already holds a troupe ({existing['n']} agents): copy into an empty database")
    report = CopyReport()
    async with target.transaction() as conn:
        for table in TABLES:
            report.source[table] = await _copy_rows(source, conn, table, progress)
        # Plugins' tables, made again from their records, once the agents their rows belong to are in.
        for name in await _plugin_tables(source, conn):
            report.source[name] = await _copy_rows(source, conn, name, progress)
        # Each agent's embedding length: without it, one other than the default would be searched
        # as the default and find none of the copied vectors.
        prefix = dimension_key("")
        lengths = await source.read(
            lambda c: [
                (str(key), str(value))
                for key, value in c.execute(
                    "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
                )
            ]
        )
        if lengths:
            await conn.cursor().executemany(
                "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                lengths,
            )
        # New memories continue after the copied ones in write order.
        await conn.execute(
            "SELECT setval(pg_get_serial_sequence('memories', 'seq'), coalesce(max(seq), 0) + 1, false) FROM memories"
        )
    for table in report.source:
        row = await target.fetchone(f'SELECT count(*) AS n FROM "{table}"')
        report.target[table] = int(row["n"]) if row else 0
    return report


async def _copy_rows(
    source: Database, conn: AsyncConnection[Any], table: str, progress: Callable[[str, int], None] | None
) -> int:
    """Every row of ``table`` into the same table of ``conn``'s database; how many."""
    columns = await _target_columns(conn, table)
    count = 0
    after = None
    while True:
        rows, after = await source.read(_reader(table, after))
        if not rows:
            return count
        converted = _convert(table, rows, columns)
        if converted:
            names = list(converted[0])
            overriding = " OVERRIDING SYSTEM VALUE" if table == "memories" else ""
            placeholders = ", ".join(_placeholder(columns[n]) for n in names)
            quoted = ", ".join(f'"{n}"' for n in names)  # a plugin's column may be one of SQL's words
            await conn.cursor().executemany(
                f'INSERT INTO "{table}" ({quoted}){overriding} VALUES ({placeholders})',
                [tuple(row[n] for n in names) for row in converted],
            )
        count += len(converted)
        if progress is not None:
            progress(table, count)


async def _plugin_tables(source: Database, conn: AsyncConnection[Any]) -> list[str]:
    """Make the tables plugins declared in ``source`` (as its records describe them) in ``conn``'s
    database; their names."""
    from bot.store._dialect import POSTGRES
    from bot.store._plugin_tables import migration, recorded_table
    from bot.store.postgres._scoped import drive

    records = await source.fetchall("SELECT name, plugin, columns, declaration FROM plugin_tables ORDER BY name")
    for _name, plugin, columns, declaration in records:
        await drive(conn, migration(POSTGRES, str(plugin), [recorded_table(str(declaration), str(columns))]))
    return [str(r[0]) for r in records]


async def _target_columns(conn: AsyncConnection[Any], table: str) -> dict[str, str]:
    """The columns PostgreSQL takes values for (not the ones it computes), with their types."""
    cur = await conn.execute(
        "SELECT column_name, udt_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = %s AND is_generated = 'NEVER' "
        "ORDER BY ordinal_position",
        (table,),
    )
    rows = await cur.fetchall()
    if not rows:
        raise StoreError(f"the PostgreSQL database has no table {table}: is its schema troupe's?")
    return {str(r["column_name"]): str(r["udt_name"]) for r in rows}


def _reader(table: str, after: object) -> Callable[[Connection], tuple[list[dict[str, Any]], object]]:
    """The next chunk of ``table``'s rows as dicts, and where the one after starts: by rowid, or
    for tables without one by their primary key's order."""

    def read(conn: Connection) -> tuple[list[dict[str, Any]], object]:
        keys = _WITHOUT_ROWID.get(table)
        if keys is None:
            start = after if isinstance(after, int) else -(2**63)
            sql = f"SELECT rowid AS _rowid_, * FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?"
            cursor = conn.execute(sql, (start, _CHUNK))
        else:
            offset = after if isinstance(after, int) else 0
            cursor = conn.execute(f"SELECT * FROM {table} ORDER BY {keys} LIMIT ? OFFSET ?", (_CHUNK, offset))
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        if keys is None:
            return rows, (rows[-1]["_rowid_"] if rows else after)
        return rows, (after if isinstance(after, int) else 0) + len(rows)

    return read


def _convert(table: str, rows: Sequence[dict[str, Any]], columns: dict[str, str]) -> list[dict[str, Any]]:
    if table == "embeddings":
        return [vector for row in rows for vector in _vectors(row)]
    converted = []
    for row in rows:
        out: dict[str, Any] = {}
        for name, kind in columns.items():
            if name not in row:
                continue  # a column only PostgreSQL has, with its default
            value = row[name]
            if kind == "bool" and value is not None:
                value = bool(value)
            out[name] = value
        if table == "entities" and "folded_names" in columns:  # what a search by name reads
            out["folded_names"] = fold_names(loads(row["names"], []))
        converted.append(out)
    return converted


def _vectors(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A memory's vectors, one SQLite column per dimension (one for the other lengths), as
    PostgreSQL's rows (one each)."""
    out: list[dict[str, Any]] = []
    for column in [*(c for _, c in sorted(DIMENSION_MAP.items())), OTHER_DIMENSIONS]:
        blob = row.get(column)  # a file before schema 9 has no OTHER_DIMENSIONS
        if blob is None:
            continue
        text = "[" + ",".join(repr(v) for v in decode_vector(blob)) + "]"
        # The first keeps the SQLite row's id; another dimension of the same memory needs its own.
        out.append(
            {
                "id": row["id"] if not out else new_id(),
                "memory_id": row["memory_id"],
                "created_at": row["created_at"],
                "embedding": text,
            }
        )
    return out


def _placeholder(kind: str) -> str:
    return {"jsonb": "%s::jsonb", "vector": "%s::vector"}.get(kind, "%s")
