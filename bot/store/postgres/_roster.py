"""The roster of a troupe's daemons in PostgreSQL (see ``bot/store/_roster.py``).

One row per daemon, written whole at each publish. ``seen_at`` is the database's clock, like
the leases' expiry, so heartbeat ages agree whatever the machines' clocks say. Connections are
counted in ``pg_stat_activity`` by their ``application_name``, which each daemon sets.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from bot.store._roster import APPLICATION_PREFIX, CharacterFile, DaemonEntry, DaemonRecord

if TYPE_CHECKING:
    from bot.store.postgres._database import PostgresDatabase

__all__ = ["PgRoster", "SCHEMA"]

_NOW_MS = "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

SCHEMA = """
CREATE TABLE daemons (
    id         text PRIMARY KEY,
    host       text NOT NULL,
    pid        integer NOT NULL,
    version    text NOT NULL,
    started_at bigint NOT NULL,
    seen_at    bigint NOT NULL,
    characters jsonb NOT NULL DEFAULT '{}'
);
"""

_PUBLISH = f"""
INSERT INTO daemons (id, host, pid, version, started_at, seen_at, characters)
VALUES (%(id)s, %(host)s, %(pid)s, %(version)s, %(started_at)s, {_NOW_MS}, %(characters)s::jsonb)
ON CONFLICT (id) DO UPDATE
    SET host = excluded.host, pid = excluded.pid, version = excluded.version,
        started_at = excluded.started_at, seen_at = excluded.seen_at, characters = excluded.characters
"""

_RECORDS = f"""
SELECT id, host, pid, version, started_at, characters, ({_NOW_MS} - seen_at) / 1000.0 AS seen_s
FROM daemons ORDER BY id
"""

_PRUNE = f"DELETE FROM daemons WHERE seen_at < {_NOW_MS} - %(gone_ms)s"

_CONNECTIONS = """
SELECT application_name, count(*) AS n FROM pg_stat_activity
WHERE datname = current_database() AND starts_with(application_name, %(prefix)s)
GROUP BY application_name
"""


class PgRoster:
    """The troupe's daemons in its PostgreSQL database."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def publish(self, entry: DaemonEntry) -> None:
        characters = {
            agent_id: {"name": c.name, "file": c.file, "fingerprint": c.fingerprint, "state": c.state}
            for agent_id, c in entry.characters.items()
        }
        params = {
            "id": entry.id,
            "host": entry.host,
            "pid": entry.pid,
            "version": entry.version,
            "started_at": entry.started_at,
            "characters": json.dumps(characters),
        }
        await self._db.execute(_PUBLISH, params)

    async def records(self) -> list[DaemonRecord]:
        return [_record(row) for row in await self._db.fetchall(_RECORDS)]

    async def remove(self, daemon_id: str) -> bool:
        return await self._db.execute("DELETE FROM daemons WHERE id = %s", (daemon_id,)) == 1

    async def prune(self, gone_s: float) -> int:
        return await self._db.execute(_PRUNE, {"gone_ms": int(gone_s * 1000)})

    async def connections(self) -> dict[str, int]:
        rows = await self._db.fetchall(_CONNECTIONS, {"prefix": APPLICATION_PREFIX})
        return {str(r["application_name"]): int(r["n"]) for r in rows}


def _record(row: dict[str, Any]) -> DaemonRecord:
    characters = {
        str(agent_id): CharacterFile(str(c["name"]), str(c["file"]), str(c["fingerprint"]), str(c.get("state", "")))
        for agent_id, c in json.loads(row["characters"]).items()
    }
    entry = DaemonEntry(
        str(row["id"]), str(row["host"]), int(row["pid"]), str(row["version"]), int(row["started_at"]), characters
    )
    return DaemonRecord(entry, float(row["seen_s"]))
