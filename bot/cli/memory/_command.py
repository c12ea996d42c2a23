"""Running a parsed ``troupe memory`` command against the daemon's database."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from bot.cli.memory._export import export
from bot.cli.memory._finding import find_agent
from bot.cli.memory._forget import forget
from bot.cli.memory._reading import list_agents, list_memories, search, show
from bot.cli.memory._stop import PROG, Stop
from bot.config.settings import DaemonSettings
from bot.kernel import logs
from bot.kernel.errors import EXIT_CONFIG, TroupeError

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``troupe memory`` command; returns the exit status."""
    logs.configure("WARNING")  # the output is the answer; only problems (a locked database …) are logged
    try:
        return asyncio.run(_main(args))
    except Stop as stop:
        print(f"{PROG}: {stop.message}", file=sys.stderr)
        return stop.code
    except TroupeError as exc:  # the database cannot be used (a newer schema, a broken file, …)
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_CONFIG


async def _main(args: argparse.Namespace) -> int:
    from bot.store import backend_for, is_postgres_url

    location = str(args.db) if args.db is not None else DaemonSettings().store_location
    if not is_postgres_url(location) and not await asyncio.to_thread(Path(location).is_file):
        raise Stop(
            EXIT_CONFIG,
            f"no database at {location}: point TROUPE_DB_PATH or TROUPE_DATA_DIR (or --db) at the daemon's "
            "database, or set TROUPE_DATABASE_URL to its PostgreSQL database",
        )
    async with backend_for(location) as db:
        command = args.memory_command
        if command == "list" and args.agent is None:
            return await list_agents(db)
        store = await find_agent(db, args.agent)
        if command == "list":
            return await list_memories(store, args)
        if command == "show":
            return await show(store)
        if command == "search":
            return await search(store, args)
        if command == "export":
            return await export(store, args)
        return await forget(db, store, args)
