"""``troupe memory forget``: say what goes, ask, delete, and say what went."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..errors import EXIT_CONFIG
from ..prompt import ask
from ._finding import find_entity, find_room, label
from ._stop import EXIT_NOT_FOUND, Stop

if TYPE_CHECKING:
    from ..store import Forgotten, Store, StoreBackend

__all__ = ["forget"]


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


async def forget(db: StoreBackend, store: Store, args: argparse.Namespace) -> int:
    from ..store import KNOWLEDGE_TABLES

    agent = await store.get_agent()
    agent_name = agent.name if agent else store.agent_id
    if args.all or args.knowledge:
        what = (
            f"{agent_name}'s knowledge"
            if args.knowledge
            else (f"everything {agent_name} learned from conversations, and its knowledge")
        )

        async def remove(dry_run: bool) -> Forgotten:
            if args.knowledge:
                return await store.forget_knowledge(dry_run=dry_run)
            return await store.forget_all(dry_run=dry_run, knowledge=True)
    elif args.room is not None:
        room_id = await find_room(store, args.room)
        assert room_id is not None
        if room_id == store.agent_id:
            raise Stop(EXIT_CONFIG, "that is the agent's own room; use --all to forget everything")
        what = f"room {room_id}"

        async def remove(dry_run: bool) -> Forgotten:
            return await store.forget_room(room_id, dry_run=dry_run)
    else:
        entity = await find_entity(store, args.entity)
        assert entity is not None
        if entity.id == store.agent_id:
            raise Stop(EXIT_CONFIG, "that is the agent itself; use --all to forget everything it learned")
        what = label(entity)

        async def remove(dry_run: bool) -> Forgotten:
            return await store.forget_entity(entity.id, dry_run=dry_run)

    planned = await remove(True)
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
            raise Stop(EXIT_CONFIG, "not deleting without confirmation: run it on a terminal, or add --yes")
        if not await _confirm("This cannot be undone. Delete? [y/N] "):
            print("nothing was deleted")
            return EXIT_NOT_FOUND
    done = await remove(False)
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
