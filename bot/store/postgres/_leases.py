"""Leases shared by every daemon of a troupe, in PostgreSQL (see ``bot/store/_leases.py``).

One row per lease. Expiry is the database's clock (``clock_timestamp()``), so machines whose
clocks disagree still agree on who holds what; taking an expired lease and renewing a held one
are single statements, atomic under concurrency (the row lock orders racing daemons, and the
loser's condition is evaluated again on the winner's row).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from bot.store._leases import Lease, LeaseRecord, validate_ttl

if TYPE_CHECKING:
    from bot.store.postgres._database import PostgresDatabase

__all__ = ["PgLeases", "SCHEMA"]

SCHEMA = """
CREATE TABLE leases (
    name       text PRIMARY KEY,
    owner      text NOT NULL,
    epoch      bigint NOT NULL,
    expires_at timestamptz NOT NULL,
    since      timestamptz NOT NULL
);
"""

_ACQUIRE = """
INSERT INTO leases AS l (name, owner, epoch, expires_at, since)
VALUES (%(name)s, %(owner)s, 1, clock_timestamp() + make_interval(secs => %(ttl)s), clock_timestamp())
ON CONFLICT (name) DO UPDATE
    SET owner = excluded.owner, epoch = l.epoch + 1, expires_at = excluded.expires_at, since = excluded.since
    WHERE l.expires_at <= clock_timestamp()
RETURNING epoch
"""

_RENEW = """
UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => %(ttl)s)
WHERE name = %(name)s AND owner = %(owner)s AND epoch = %(epoch)s AND expires_at > clock_timestamp()
RETURNING epoch
"""

_RELEASE = """
UPDATE leases SET expires_at = clock_timestamp()
WHERE name = %(name)s AND owner = %(owner)s AND epoch = %(epoch)s AND expires_at > clock_timestamp()
"""

_RECORDS = """
SELECT name, owner, epoch,
       extract(epoch FROM expires_at - clock_timestamp())::float8 AS expires_in,
       extract(epoch FROM clock_timestamp() - since)::float8 AS held_for
FROM leases WHERE starts_with(name, %(prefix)s) ORDER BY name
"""


class PgLeases:
    """The troupe's leases in its PostgreSQL database."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def acquire(self, name: str, owner: str, ttl_s: float) -> Lease | None:
        validate_ttl(ttl_s)
        asked = time.monotonic()  # before the database counts: the local deadline is the earlier
        row = await self._db.fetchone(_ACQUIRE, {"name": name, "owner": owner, "ttl": ttl_s})
        return Lease(name, owner, int(row["epoch"]), asked + ttl_s) if row else None

    async def renew(self, lease: Lease, ttl_s: float) -> Lease | None:
        validate_ttl(ttl_s)
        asked = time.monotonic()
        params = {"name": lease.name, "owner": lease.owner, "epoch": lease.epoch, "ttl": ttl_s}
        row = await self._db.fetchone(_RENEW, params)
        return Lease(lease.name, lease.owner, lease.epoch, asked + ttl_s) if row else None

    async def release(self, lease: Lease) -> bool:
        params = {"name": lease.name, "owner": lease.owner, "epoch": lease.epoch}
        return await self._db.execute(_RELEASE, params) == 1

    async def records(self, prefix: str = "") -> list[LeaseRecord]:
        rows = await self._db.fetchall(_RECORDS, {"prefix": prefix})
        return [
            LeaseRecord(r["name"], r["owner"], int(r["epoch"]), float(r["expires_in"]), float(r["held_for"]))
            for r in rows
        ]
