"""The daemon's database as the commands that read it (``troupe memory``, ``troupe why``) find it."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from bot.config.settings import DaemonSettings

__all__ = ["add_database_argument", "database_location"]


def add_database_argument(parser: argparse.ArgumentParser) -> None:
    """``--db FILE|URL``: another database than the daemon's."""
    parser.add_argument(
        "--db",
        metavar="FILE|URL",
        help="the database: a SQLite file or a postgresql:// URL (default: TROUPE_DATABASE_URL, else "
        "TROUPE_DB_PATH, else TROUPE_DATA_DIR/troupe.db)",
    )


async def database_location(given: object | None) -> str:
    """The database to read: ``given`` (``--db``), else the daemon's. Raises FileNotFoundError,
    saying what to set, when it is a SQLite file that does not exist."""
    from bot.store import is_postgres_url

    location = str(given) if given is not None else DaemonSettings().store_location
    if not is_postgres_url(location) and not await asyncio.to_thread(Path(location).is_file):
        raise FileNotFoundError(
            f"no database at {location}: point TROUPE_DB_PATH or TROUPE_DATA_DIR (or --db) at the daemon's "
            "database, or set TROUPE_DATABASE_URL to its PostgreSQL database"
        )
    return location
