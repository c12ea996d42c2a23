"""Running a parsed ``troupe memory`` command against the daemon's database."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from bot.cli.databases import run_on_database
from bot.cli.memory._export import export
from bot.cli.memory._finding import find_agent
from bot.cli.memory._forget import forget
from bot.cli.memory._reading import list_agents, list_memories, search, show
from bot.cli.memory._stop import PROG, Stop

if TYPE_CHECKING:
    from bot.store import StoreBackend

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``troupe memory`` command; returns the exit status."""
    try:
        return run_on_database(PROG, args.db, lambda db: _main(db, args))
    except Stop as stop:
        print(f"{PROG}: {stop.message}", file=sys.stderr)
        return stop.code


async def _main(db: StoreBackend, args: argparse.Namespace) -> int:
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
