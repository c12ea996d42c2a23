"""The daemon's database as the commands that read it (``troupe memory``, ``troupe why``) find it."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config.settings import DaemonSettings
from bot.kernel import logs
from bot.kernel.errors import EXIT_CONFIG, TroupeError

if TYPE_CHECKING:
    from bot.store import StoreBackend

__all__ = ["add_database_argument", "database_location", "run_on_database"]


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


def run_on_database(prog: str, given: object | None, work: Callable[[StoreBackend], Awaitable[int]]) -> int:
    """Open the database to read (``given``, else the daemon's: :func:`database_location`), run
    ``work`` on it and close it; the exit status. Only problems are logged (the output is the
    answer); a database that is not there or cannot be used (a newer schema, a broken file …) is one
    line on stderr, ``prog: …``, and :data:`EXIT_CONFIG`."""
    logs.configure("WARNING")

    async def main() -> int:
        from bot.store import backend_for

        async with backend_for(await database_location(given)) as db:
            return await work(db)

    try:
        return asyncio.run(main())
    except (FileNotFoundError, TroupeError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
