"""Running a parsed ``troupe memory`` command against the daemon's database."""

from __future__ import annotations

import argparse
import asyncio
import sys

from bot.cli.databases import database_location
from bot.cli.memory._export import export
from bot.cli.memory._finding import find_agent
from bot.cli.memory._forget import forget
from bot.cli.memory._reading import list_agents, list_memories, search, show
from bot.cli.memory._stop import PROG, Stop
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
    from bot.store import backend_for

    try:
        location = await database_location(args.db)
    except FileNotFoundError as exc:
        raise Stop(EXIT_CONFIG, str(exc)) from None
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
