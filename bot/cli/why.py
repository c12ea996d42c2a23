"""``troupe why MESSAGE-OR-ROOM``: how a message ended, and why (or the last messages of a room).

Reads the traces the daemon keeps (``Store.get_trace``, ``find_traces``) in its database, for
every character: a message heard by several has one trace each. A message is named by the id
the daemon's log line gives, or as its platform names it (a Discord or Telegram link, or a bare
platform id: :mod:`bot.kernel.message_refs`). Safe while the daemon runs. The wording is
:mod:`bot.kernel.trace_text`'s, which the console's "Why" page shows too.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from bot.cli.databases import add_database_argument, run_on_database
from bot.kernel.errors import EXIT_CONFIG
from bot.kernel.trace_text import describe, summary

if TYPE_CHECKING:
    from bot.store import StoreBackend

__all__ = ["add_parser", "run"]

PROG = "troupe why"
#: Nothing of that id has a trace.
EXIT_NOT_FOUND = 1
_DEFAULT_LIMIT = 20


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``why`` to the ``troupe`` subparsers ``sub``."""
    why = sub.add_parser(
        "why",
        help="why a character answered a message or did not (or a room's last messages)",
        description="How a message a character heard ended, and why: who said it where, the "
        "outcome and its reason (the gate's rule, the troupe's decision), the model calls, the "
        "actions and the reply. Given a room id, its last messages, one line each. Reads the "
        "daemon's database; safe while the daemon runs.",
        epilog="MESSAGE is the id the daemon's log line names, a Discord message link "
        "(https://discord.com/channels/GUILD/CHANNEL/MESSAGE), a Telegram one (https://t.me/c/CHAT/ID or "
        "https://t.me/NAME/ID) or a bare Discord or Telegram message id. "
        "exit status: 0 found; 1 no trace of that message or room (too old, or never heard); "
        "2 a malformed command line; 78 a configuration problem",
    )
    why.add_argument(
        "target",
        metavar="MESSAGE-OR-ROOM",
        help="a message id (as the log line names it), a Discord or Telegram message link or id, or a room id",
    )
    why.add_argument(
        "--limit",
        type=int,
        default=_DEFAULT_LIMIT,
        metavar="N",
        help=f"a room's last N messages (default {_DEFAULT_LIMIT})",
    )
    why.add_argument("--json", action="store_true", help="print the traces as JSON")
    add_database_argument(why)


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``troupe why``; returns the exit status."""
    if args.limit < 1:
        print(f"{PROG}: --limit must be at least 1, not {args.limit}", file=sys.stderr)
        return EXIT_CONFIG
    return run_on_database(PROG, args.db, lambda db: _main(db, args))


async def _main(db: StoreBackend, args: argparse.Namespace) -> int:
    from bot.store import look_up_traces

    agents = await db.for_agent("troupe:why").get_agents()
    found = await look_up_traces([db.for_agent(a.id) for a in agents], args.target, limit=args.limit)
    traces = found.traces
    if not traces:
        print(
            f"{PROG}: no {found.looked_for} has a trace: traces are kept MEMORY_LOG_DAYS days, for messages a "
            "character heard (give the id the daemon's log line names, or the message's link)",
            file=sys.stderr,
        )
        return EXIT_NOT_FOUND
    if args.json:
        print(json.dumps([t.to_json() for t in traces], indent=2, ensure_ascii=False))
    elif found.of_room:
        print("\n".join(summary(t) for t in traces))
    else:
        print("\n\n".join(describe(t) for t in traces))
    return 0
