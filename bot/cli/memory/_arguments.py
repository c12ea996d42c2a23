"""The ``troupe memory`` command line: its subcommands and their options."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.cli.databases import add_database_argument

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``memory`` and its subcommands to the ``troupe`` subparsers ``sub``."""
    memory = sub.add_parser(
        "memory",
        help="inspect, export and forget what an agent remembers",
        description="Inspect, export and forget what an agent remembers, in the daemon's "
        "database. Safe while the daemon runs.",
        epilog="exit status: 0 done; 1 the agent, room or person does not exist, or nothing was "
        "deleted; 2 a malformed command line; 78 a usage or configuration problem",
    )
    add_database_argument(memory)
    commands = memory.add_subparsers(dest="memory_command", required=True, metavar="SUBCOMMAND")

    listing = commands.add_parser("list", help="the newest memories of an agent (without AGENT: the agents)")
    listing.add_argument(
        "agent", nargs="?", metavar="AGENT", help="an agent's name or id, or 'shared' for shared knowledge"
    )
    _filters(listing, limit=50)

    show = commands.add_parser("show", help="what an agent stores: counts, rooms and people, with their ids")
    show.add_argument("agent", metavar="AGENT", help="an agent's name or id")

    search = commands.add_parser("search", help="memories matching words, best first")
    search.add_argument("agent", metavar="AGENT", help="an agent's name or id")
    search.add_argument("query", metavar="QUERY", help="words to look for")
    _filters(search, limit=20)

    export = commands.add_parser("export", help="everything the agent stores (or one room's, one person's) as JSON")
    export.add_argument("agent", metavar="AGENT", help="an agent's name or id")
    scope = export.add_mutually_exclusive_group()
    scope.add_argument("--room", metavar="ROOM", help="only this room (an id)")
    scope.add_argument("--entity", metavar="WHO", help="only what is about this person (an id or a name)")
    export.add_argument("--out", type=Path, metavar="FILE", help="write to FILE instead of standard output")

    forget = commands.add_parser("forget", help="delete a room, a person or everything from an agent's memory")
    forget.add_argument("agent", metavar="AGENT", help="an agent's name or id")
    target = forget.add_mutually_exclusive_group(required=True)
    target.add_argument("--room", metavar="ROOM", help="a room (an id), with everything in it")
    target.add_argument(
        "--entity", metavar="WHO", help="a person (an id or a name): everything about them, in every room"
    )
    target.add_argument(
        "--knowledge",
        action="store_true",
        help="its knowledge documents (read again from its character's files at its next start)",
    )
    target.add_argument("--all", action="store_true", help="everything learned from conversations, and its knowledge")
    forget.add_argument("--dry-run", action="store_true", help="only say what would be deleted")
    forget.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


def _filters(parser: argparse.ArgumentParser, *, limit: int) -> None:
    parser.add_argument("--room", metavar="ROOM", help="only this room (an id)")
    parser.add_argument(
        "--entity", metavar="WHO", help="only what this person wrote or what is about them (an id or a name)"
    )
    parser.add_argument(
        "--table",
        action="append",
        metavar="TABLE",
        help="only this memory table: messages, facts, summaries, documents, knowledge… (repeat for several)",
    )
    parser.add_argument("--limit", type=_positive, default=limit, metavar="N", help=f"at most N (default: {limit})")
    parser.add_argument("--json", action="store_true", help="print JSON records instead of lines")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number, 1 or more, not {text!r}")
    return value
