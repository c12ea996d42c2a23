"""``troupe memory``: inspect, export and forget what an agent remembers.

::

    troupe memory list [AGENT] [--room ROOM] [--entity WHO] [--table T]... [--limit N] [--json]
    troupe memory show AGENT                 what the agent stores: counts, rooms, people (with ids)
    troupe memory search AGENT QUERY [--room ROOM] [--entity WHO] [--table T]... [--limit N] [--json]
    troupe memory export AGENT [--room ROOM | --entity WHO] [--out FILE]
    troupe memory forget AGENT (--room ROOM | --entity WHO | --knowledge | --all) [--dry-run] [--yes]

It works on the database file the daemon uses (``TROUPE_DB_PATH``, else
``TROUPE_DATA_DIR/troupe.db``; ``--db`` overrides both). Running it while the daemon runs is
safe: SQLite's write-ahead log lets both use the file, and every write here is one short
transaction. ``list`` without an agent lists the agents. AGENT is a name or an id, or
``shared`` for the knowledge every agent sees (what character files mark ``shared``); WHO is an
entity id or a name (a name several people share is refused, with the candidates listed); ROOM
is a room id (``show`` lists them).

``forget --entity`` removes everything the agent stores about that person, in every room (see
:mod:`bot.store._selection` for exactly what), ``--room`` one room with everything in it, and
``--knowledge`` the agent's knowledge (its documents, and its claims on shared ones: a shared
document goes when no other agent lists it; for ``shared``, all shared knowledge), and ``--all``
everything the agent learned from conversations and its knowledge. Knowledge comes back from the
character's files at the agent's next start or reload, so ``--knowledge`` also clears what a
setting that is gone left behind. It says what it will delete and asks first on a terminal;
``--yes`` skips the question (required when not on a terminal), ``--dry-run`` only counts.
Deleted text is overwritten on disk and left out of the keyword index. A running daemon carries
on: someone forgotten who writes again is remembered afresh.

Exit status: 0 done; 1 the agent, room or person does not exist, or nothing was deleted (nothing
to forget, or the question was answered no); 2 the command line is malformed; 78 a usage or
configuration problem (no database file, an ambiguous name, ``forget`` without ``--yes`` off a
terminal, a database from a newer troupe).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import logs
from .errors import EXIT_CONFIG, TroupeError
from .prompt import ask
from .settings import DaemonSettings

if TYPE_CHECKING:
    from .store import Forgotten, MemoryExport, Store, StoreBackend
    from .types import Entity, Memory

__all__ = ["EXIT_NOT_FOUND", "add_parser", "run"]

#: The agent, room or person named does not exist, or nothing was deleted.
EXIT_NOT_FOUND = 1

_PROG = "troupe memory"
_SHARED = "shared"  # names the shared knowledge scope as AGENT
_TEXT_WIDTH = 100
_MASK = "****************"
_CREDENTIAL = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|CREDENTIAL)", re.IGNORECASE)


class _Stop(Exception):
    """Ends the command with a message on stderr and an exit status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- the command line -------------------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    """Add ``memory`` and its subcommands to the ``troupe`` subparsers ``sub``."""
    memory = sub.add_parser(
        "memory",
        help="inspect, export and forget what an agent remembers",
        description="Inspect, export and forget what an agent remembers, in the daemon's "
        "database. Safe while the daemon runs.",
        epilog="exit status: 0 done; 1 the agent, room or person does not exist, or nothing was "
        "deleted; 2 a malformed command line; 78 a usage or configuration problem",
    )
    memory.add_argument(
        "--db",
        type=Path,
        metavar="FILE",
        help="the database file (default: TROUPE_DB_PATH, else TROUPE_DATA_DIR/troupe.db)",
    )
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


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``troupe memory`` command; returns the exit status."""
    logs.configure("WARNING")  # the output is the answer; only problems (a locked database …) are logged
    try:
        return asyncio.run(_main(args))
    except _Stop as stop:
        print(f"{_PROG}: {stop.message}", file=sys.stderr)
        return stop.code
    except TroupeError as exc:  # the database cannot be used (a newer schema, a broken file, …)
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return EXIT_CONFIG


async def _main(args: argparse.Namespace) -> int:
    from .store import backend_for

    path = args.db if args.db is not None else DaemonSettings().database
    if not await asyncio.to_thread(Path(path).is_file):
        raise _Stop(
            EXIT_CONFIG,
            f"no database at {path}: point TROUPE_DB_PATH or TROUPE_DATA_DIR (or --db) at the daemon's database",
        )
    async with backend_for(path) as db:
        command = args.memory_command
        if command == "list" and args.agent is None:
            return await _list_agents(db)
        store = await _agent(db, args.agent)
        if command == "list":
            return await _list(store, args)
        if command == "show":
            return await _show(store)
        if command == "search":
            return await _search(store, args)
        if command == "export":
            return await _export(store, args)
        return await _forget(db, store, args)


# -- finding the agent, the room, the person -------------------------------------------------------


def _roster(db: StoreBackend) -> Store:
    """A store to read the cross-agent roster with (``get_agents`` ignores the store's agent)."""
    return db.for_agent("troupe:memory")


async def _agent(db: StoreBackend, wanted: str) -> Store:
    from .store import SHARED_KNOWLEDGE_ID

    agents = await _roster(db).get_agents()
    if wanted.strip().casefold() == _SHARED and not any(a.name.casefold() == _SHARED for a in agents):
        return db.for_agent(SHARED_KNOWLEDGE_ID)  # an agent really called "shared" wins
    for agent in agents:
        if agent.id == wanted.strip().lower():
            return db.for_agent(agent.id)
    named = [a for a in agents if a.name.casefold() == wanted.strip().casefold()]
    if len(named) == 1:
        return db.for_agent(named[0].id)
    if named:
        listed = ", ".join(f"{a.name} ({a.id})" for a in named)
        raise _Stop(EXIT_CONFIG, f"several agents are called {wanted!r}: {listed}; give the id")
    known = ", ".join(f"{a.name} ({a.id})" for a in agents) or "none"
    raise _Stop(EXIT_NOT_FOUND, f"no agent {wanted!r} in the database; known agents: {known}")


async def _room(store: Store, room_id: str | None) -> str | None:
    if room_id is None:
        return None
    room = await store.get_room(room_id.strip().lower())
    if room is None:
        raise _Stop(EXIT_NOT_FOUND, f"no room {room_id!r} for this agent; `{_PROG} show AGENT` lists its rooms")
    return room.id


def _label(entity: Entity) -> str:
    names = ", ".join(dict.fromkeys(n for n in entity.names if n)) or "no name"
    return f"{names} ({entity.id})"


async def _entity(store: Store, wanted: str | None) -> Entity | None:
    if wanted is None:
        return None
    text = wanted.strip()
    found = await store.get_entity(text.lower())
    if found is not None:
        return found
    similar = await store.search_entities_by_name(text, limit=1000)
    exact = [e for e in similar if any(n.casefold() == text.casefold() for n in e.names)]
    if len(exact) == 1:
        return exact[0]
    if exact:
        listed = "\n".join(f"  {_label(e)}" for e in exact)
        raise _Stop(EXIT_CONFIG, f"{len(exact)} people are called {wanted!r}; give one of their ids:\n{listed}")
    hint = ""
    if similar:
        hint = "; did you mean: " + "; ".join(_label(e) for e in similar[:10])
    raise _Stop(EXIT_NOT_FOUND, f"no one called {wanted!r} for this agent{hint}")


# -- list, show, search ----------------------------------------------------------------------------


def _when(ms: int | None) -> str:
    if ms is None:
        return "????-??-?? ??:??"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")


def _one_line(text: str, width: int = _TEXT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


async def _names(store: Store, memories: Sequence[Memory]) -> dict[str, str]:
    ids = list(dict.fromkeys(m.entity_id for m in memories if m.entity_id))
    agent = await store.get_agent()
    names = {store.agent_id: agent.name if agent else "agent"}
    for entity in await store.get_entities_by_ids([i for i in ids if i != store.agent_id]):
        names[entity.id] = next((n for n in entity.names if n), entity.id)
    return names


async def _print_memories(store: Store, memories: Sequence[Memory], as_json: bool) -> None:
    if as_json:
        print(json.dumps([_memory_json(m) for m in memories], ensure_ascii=False, indent=2))
        return
    names = await _names(store, memories)
    room_ids = list(dict.fromkeys(m.room_id for m in memories if m.room_id))
    rooms = {room.id: room.name or room.id[:8] for room in await store.get_rooms_by_ids(room_ids)}
    for m in memories:
        who = names.get(m.entity_id, "someone")
        room = rooms.get(m.room_id or "", (m.room_id or "-")[:8])
        print(
            f"{_when(m.created_at)}  {m.table or '?':<10} {_one_line(room, 20):<20}  {who}: "
            f"{_one_line(str(m.content.get('text') or ''))}"
        )


async def _list_agents(db: StoreBackend) -> int:
    from .store import SHARED_KNOWLEDGE_ID

    agents = await _roster(db).get_agents()
    if not agents:
        print("no agents in the database yet")
        return 0
    for agent in agents:
        counts = await db.for_agent(agent.id).count_memories_by_table()
        summary = ", ".join(f"{table} {n}" for table, n in counts.items()) or "no memories"
        if agent.id == SHARED_KNOWLEDGE_ID:
            summary += f" (knowledge marked shared in character files; `{_PROG} list {_SHARED}`)"
        print(f"{agent.name} ({agent.id}): {summary}")
    return 0


async def _list(store: Store, args: argparse.Namespace) -> int:
    room = await _room(store, args.room)
    entity = await _entity(store, args.entity)
    memories = await store.list_memories(
        tables=args.table, room_id=room, entity_id=entity.id if entity else None, count=args.limit
    )
    if not memories and not args.json:
        print("no memories match")
        return 0
    await _print_memories(store, memories, args.json)
    return 0


async def _show(store: Store) -> int:
    agent = await store.get_agent()
    counts = await store.count_memories_by_table()
    print(f"{agent.name if agent else store.agent_id} ({store.agent_id})")
    print("memories: " + (", ".join(f"{table} {n}" for table, n in counts.items()) or "none"))
    print("rooms:")
    for room, n in await store.get_rooms_with_counts():
        print(f"  {room.id}  {room.type.value:<11} {_one_line(room.name or '-', 40):<40} {n} memories")
    print("people:")
    for entity in await store.search_entities_by_name("", limit=100_000):
        if entity.id != store.agent_id:
            print(f"  {entity.id}  {', '.join(n for n in entity.names if n) or '-'}")
    return 0


async def _search(store: Store, args: argparse.Namespace) -> int:
    room = await _room(store, args.room)
    entity = await _entity(store, args.entity)
    memories = await store.search_all_memories_by_text(
        args.query, tables=args.table, room_id=room, entity_id=entity.id if entity else None, count=args.limit
    )
    if not memories and not args.json:
        print("no memories match")
        return 0
    await _print_memories(store, memories, args.json)
    return 0


# -- export ----------------------------------------------------------------------------------------


def _memory_json(m: Memory) -> dict[str, Any]:
    return {
        "id": m.id,
        "table": m.table,
        "createdAt": m.created_at,
        "roomId": m.room_id,
        "worldId": m.world_id,
        "entityId": m.entity_id,
        "unique": m.unique,
        "content": m.content,
        "metadata": m.metadata,
    }


def _masked_world_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """World metadata with the values of secret settings masked (a server's configured keys)."""
    settings = metadata.get("settings")
    if not isinstance(settings, dict):
        return metadata
    masked = {}
    for key, spec in settings.items():
        if isinstance(spec, dict) and (spec.get("secret") or _CREDENTIAL.search(str(key))) and spec.get("value"):
            spec = {**spec, "value": _MASK}
        masked[key] = spec
    return {**metadata, "settings": masked}


def _export_json(agent_id: str, agent_name: str, data: MemoryExport, scope: dict[str, str | None]) -> dict[str, Any]:
    from .types import now_ms

    return {
        "format": "troupe-memory-export",
        "version": 1,
        "exportedAt": now_ms(),
        "agent": {"id": agent_id, "name": agent_name},
        "scope": scope,
        "worlds": [
            {
                "id": w.id,
                "name": w.name,
                "serverId": w.server_id,
                "createdAt": w.created_at,
                "metadata": _masked_world_metadata(w.metadata),
            }
            for w in data.worlds
        ],
        "rooms": [
            {
                "id": r.id,
                "name": r.name,
                "type": r.type.value,
                "source": r.source,
                "worldId": r.world_id,
                "serverId": r.server_id,
                "channelId": r.channel_id,
                "createdAt": r.created_at,
                "metadata": r.metadata,
            }
            for r in data.rooms
        ],
        "entities": [
            {
                "id": e.id,
                "names": e.names,
                "createdAt": e.created_at,
                "metadata": e.metadata,
                "components": [
                    {
                        "id": c.id,
                        "type": c.type,
                        "roomId": c.room_id,
                        "worldId": c.world_id,
                        "sourceEntityId": c.source_entity_id,
                        "createdAt": c.created_at,
                        "data": c.data,
                    }
                    for c in e.components
                ],
            }
            for e in data.entities
        ],
        "participants": [
            {"entityId": p.entity_id, "roomId": p.room_id, "state": p.state.value if p.state else None}
            for p in data.participants
        ],
        "memories": [_memory_json(m) for m in data.memories],
        "relationships": [
            {
                "id": r.id,
                "sourceEntityId": r.source_entity_id,
                "targetEntityId": r.target_entity_id,
                "tags": r.tags,
                "metadata": r.metadata,
                "createdAt": r.created_at,
            }
            for r in data.relationships
        ],
    }


async def _export(store: Store, args: argparse.Namespace) -> int:
    room = await _room(store, args.room)
    entity = await _entity(store, args.entity)
    data = await store.export_memories(room_id=room, entity_id=entity.id if entity else None)
    agent = await store.get_agent()
    document = _export_json(
        store.agent_id, agent.name if agent else "", data, {"roomId": room, "entityId": entity.id if entity else None}
    )
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        await asyncio.to_thread(_write_private, args.out, text)
    except OSError as exc:
        raise _Stop(EXIT_CONFIG, f"cannot write {args.out}: {exc.strerror or exc}") from None
    print(
        f"exported {len(data.memories)} memories, {len(data.entities)} people and {len(data.rooms)} rooms "
        f"to {args.out}",
        file=sys.stderr,
    )
    return 0


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by its owner only (an export holds private conversations)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as file:
        os.fchmod(fd, 0o600)  # a file that existed keeps its old mode through O_CREAT
        file.write(text)


# -- forget ----------------------------------------------------------------------------------------


def _describe(result: Forgotten) -> list[str]:
    lines = []
    if result.memories:
        lines.append("memories: " + ", ".join(f"{t} {n}" for t, n in sorted(result.memories.items())))
    if result.rows:
        lines.append("other rows: " + ", ".join(f"{t} {n}" for t, n in sorted(result.rows.items())))
    if result.edited:
        lines.append("kept, with the id removed: " + ", ".join(f"{t} {n}" for t, n in sorted(result.edited.items())))
    return lines


async def _confirm(question: str) -> bool:
    answer = await ask(question)
    if answer is None:  # Ctrl-D: no
        print()
        return False
    return answer.strip().lower() in ("y", "yes")


async def _forget(db: StoreBackend, store: Store, args: argparse.Namespace) -> int:
    from .store import KNOWLEDGE_TABLES

    agent = await store.get_agent()
    agent_name = agent.name if agent else store.agent_id
    if args.all or args.knowledge:
        what = (
            f"{agent_name}'s knowledge"
            if args.knowledge
            else (f"everything {agent_name} learned from conversations, and its knowledge")
        )

        async def forget(dry_run: bool) -> Forgotten:
            if args.knowledge:
                return await store.forget_knowledge(dry_run=dry_run)
            return await store.forget_all(dry_run=dry_run, knowledge=True)
    elif args.room is not None:
        room_id = await _room(store, args.room)
        assert room_id is not None
        if room_id == store.agent_id:
            raise _Stop(EXIT_CONFIG, "that is the agent's own room; use --all to forget everything")
        what = f"room {room_id}"

        async def forget(dry_run: bool) -> Forgotten:
            return await store.forget_room(room_id, dry_run=dry_run)
    else:
        entity = await _entity(store, args.entity)
        assert entity is not None
        if entity.id == store.agent_id:
            raise _Stop(EXIT_CONFIG, "that is the agent itself; use --all to forget everything it learned")
        what = _label(entity)

        async def forget(dry_run: bool) -> Forgotten:
            return await store.forget_entity(entity.id, dry_run=dry_run)

    planned = await forget(True)
    if not planned.total:
        print(f"nothing to forget: {agent_name} stores nothing about {what}")
        return EXIT_NOT_FOUND
    print(f"Forgetting {what} deletes from {agent_name}'s memory in {db.path}:")
    for line in _describe(planned):
        print(f"  {line}")
    if args.dry_run:
        print("dry run: nothing was deleted")
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            raise _Stop(EXIT_CONFIG, "not deleting without confirmation: run it on a terminal, or add --yes")
        if not await _confirm("This cannot be undone. Delete? [y/N] "):
            print("nothing was deleted")
            return EXIT_NOT_FOUND
    done = await forget(False)
    emptied = await db.checkpoint()
    print(f"Forgot {what}:")
    for line in _describe(done):
        print(f"  {line}")
    if (args.all or args.knowledge) and set(done.memories) & set(KNOWLEDGE_TABLES):
        print(
            "  (knowledge is read again from its character's files at its next start: remove it there to "
            "keep it forgotten)"
        )
    if not emptied:
        print(
            "  (the daemon is reading the database: its next checkpoint clears the last copies from the "
            "write-ahead log)"
        )
    return 0
