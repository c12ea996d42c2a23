"""``troupe why MESSAGE-OR-ROOM``: how a message ended, and why (or the last messages of a room).

Reads the traces the daemon keeps (``Store.get_trace``, ``get_traces``) in its database, for
every character: a message heard by several has one trace each. Safe while the daemon runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.cli.databases import add_database_argument, database_location
from bot.kernel import logs
from bot.kernel.errors import EXIT_CONFIG, TroupeError

if TYPE_CHECKING:
    from bot.kernel.traces import MessageTrace
    from bot.store import StoreBackend

__all__ = ["add_parser", "describe", "line", "run"]

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
        epilog="exit status: 0 found; 1 no trace of that message or room (too old, or never heard); "
        "2 a malformed command line; 78 a configuration problem",
    )
    why.add_argument("target", metavar="MESSAGE-OR-ROOM", help="a message id (as the log line names it) or a room id")
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
    logs.configure("WARNING")  # the output is the answer
    if args.limit < 1:
        print(f"{PROG}: --limit must be at least 1, not {args.limit}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return asyncio.run(_main(args))
    except TroupeError as exc:  # the database cannot be used (a newer schema, a broken file, …)
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_CONFIG


async def _main(args: argparse.Namespace) -> int:
    from bot.store import backend_for

    try:
        location = await database_location(args.db)
    except FileNotFoundError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    async with backend_for(location) as db:
        target = args.target.strip()
        traces, of_room = await _find(db, target, args.limit)
    if not traces:
        print(
            f"{PROG}: no message or room {target!r} has a trace: traces are kept MEMORY_LOG_DAYS days, "
            "for messages a character heard (give the id the daemon's log line names)",
            file=sys.stderr,
        )
        return EXIT_NOT_FOUND
    if args.json:
        print(json.dumps([t.to_json() for t in traces], indent=2, ensure_ascii=False))
    elif of_room:
        print("\n".join(line(t) for t in traces))
    else:
        print("\n\n".join(describe(t) for t in traces))
    return 0


async def _find(db: StoreBackend, target: str, limit: int) -> tuple[list[MessageTrace], bool]:
    """The traces of message ``target`` (one per character that heard it), else the last ones of
    room ``target``; and whether they are a room's."""
    agents = await db.for_agent("troupe:why").get_agents()
    stores = [db.for_agent(a.id) for a in agents]
    found = [t for t in await asyncio.gather(*(s.get_trace(target) for s in stores)) if t is not None]
    if found:
        return found, False
    room_id = target.lower()
    listed = await asyncio.gather(*(s.get_traces(room_id=room_id, limit=limit) for s in stores))
    in_room = sorted((t for ts in listed for t in ts), key=lambda t: t.ended_at, reverse=True)
    return in_room[:limit], True


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _count(tokens: int | None) -> str:
    return "?" if tokens is None else str(tokens)


def _outcome(trace: MessageTrace) -> str:
    return f"{trace.status.value}: {trace.reason}" if trace.reason else trace.status.value


def line(trace: MessageTrace) -> str:
    """One message of a room on one line: when, who, which character, the outcome and why."""
    who = trace.entity_name or trace.entity_id
    return f"{_when(trace.said_at)}  {who} -> {trace.agent_name or trace.agent_id}  {_outcome(trace)}  [{trace.message_id}]"


def describe(trace: MessageTrace) -> str:
    """The whole trace of one message, as ``troupe why MESSAGE`` prints it."""
    who = f"{trace.entity_name} ({trace.entity_id})" if trace.entity_name else trace.entity_id
    where = f"room {trace.room_id}" + (f", world {trace.world_id}" if trace.world_id else "")
    rows = [
        f"message {trace.message_id}, heard by {trace.agent_name or trace.agent_id}",
        f"  from      {who} on {trace.platform or 'an unknown platform'}, {where}",
        f"  when      said {_when(trace.said_at)} UTC, handled in {trace.duration_ms} ms",
        f"  outcome   {_outcome(trace)}",
    ]
    if trace.rule:
        rows.append(f"  gate      {trace.rule}" + (f"; decided by {trace.decision}" if trace.decision else ""))
    for call in trace.model_calls:
        state = "" if call.ok else f", failed ({call.error})"
        model = f" ({call.model})" if call.model else ""
        tokens = ""
        if call.prompt_tokens is not None or call.completion_tokens is not None:
            tokens = f", tokens {_count(call.prompt_tokens)} in, {_count(call.completion_tokens)} out"
        rows.append(
            f"  model     {call.model_type} via {call.provider}{model}, {call.duration_ms:.0f} ms{tokens}{state}"
        )
    if trace.actions:
        rows.append("  actions   " + ", ".join(f"{a.name} {'ok' if a.ok else 'failed'}" for a in trace.actions))
    if trace.reply_ids:
        rows.append(f"  reply     {', '.join(trace.reply_ids)} (in room {trace.room_id})")
    if trace.error:
        rows.append(f"  error     {trace.error}")
    return "\n".join(rows)
