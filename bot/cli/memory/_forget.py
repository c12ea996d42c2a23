"""``troupe memory forget``: say what goes, ask, delete, and say what went."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from bot.cli.memory._finding import find_entity, find_room, label
from bot.cli.memory._stop import EXIT_NOT_FOUND, Stop
from bot.kernel.errors import EXIT_CONFIG
from bot.kernel.terminal import ask

if TYPE_CHECKING:
    from bot.store import Forgotten, Store, StoreBackend

__all__ = ["forget"]


async def _confirm(question: str) -> bool:
    answer = await ask(question)
    if answer is None:  # Ctrl-D: no
        print()
        return False
    return answer.strip().lower() in ("y", "yes")


Remove = Callable[[bool], Awaitable["Forgotten"]]
"""Deletes what is to be forgotten, or (given True) only counts it."""


async def forget(db: StoreBackend, store: Store, args: argparse.Namespace) -> int:
    from bot.store import forgotten_lines

    agent = await store.get_agent()
    agent_name = agent.name if agent else store.agent_id
    what, remove = await _chosen(store, args, agent_name)
    planned = await remove(True)
    if not planned.total:
        print(f"nothing to forget: {agent_name} stores nothing about {what}")
        return EXIT_NOT_FOUND
    print(f"Forgetting {what} deletes from {agent_name}'s memory in {db.path}:")
    for line in forgotten_lines(planned):
        print(f"  {line}")
    if args.dry_run:
        print("dry run: nothing was deleted")
        return 0
    if not await _allowed(args):
        print("nothing was deleted")
        return EXIT_NOT_FOUND
    done = await remove(False)
    emptied = await db.checkpoint()
    _report(what, done, knowledge=args.all or args.knowledge, emptied=emptied)
    return 0


async def _chosen(store: Store, args: argparse.Namespace, agent_name: str) -> tuple[str, Remove]:
    """What the arguments name, in words, and how to forget it."""
    if args.all or args.knowledge:
        return _everything(store, knowledge_only=args.knowledge, agent_name=agent_name)
    if args.room is not None:
        room_id = await find_room(store, args.room)
        assert room_id is not None
        if room_id == store.agent_id:
            raise Stop(EXIT_CONFIG, "that is the agent's own room; use --all to forget everything")

        async def forget_room(dry_run: bool) -> Forgotten:
            return await store.forget_room(room_id, dry_run=dry_run)

        return f"room {room_id}", forget_room
    entity = await find_entity(store, args.entity)
    assert entity is not None
    if entity.id == store.agent_id:
        raise Stop(EXIT_CONFIG, "that is the agent itself; use --all to forget everything it learned")
    entity_id = entity.id

    async def forget_entity(dry_run: bool) -> Forgotten:
        return await store.forget_entity(entity_id, dry_run=dry_run)

    return label(entity), forget_entity


def _everything(store: Store, *, knowledge_only: bool, agent_name: str) -> tuple[str, Remove]:
    """The agent's knowledge, or everything it learned and its knowledge."""
    if knowledge_only:

        async def forget_knowledge(dry_run: bool) -> Forgotten:
            return await store.forget_knowledge(dry_run=dry_run)

        return f"{agent_name}'s knowledge", forget_knowledge

    async def forget_all(dry_run: bool) -> Forgotten:
        return await store.forget_all(dry_run=dry_run, knowledge=True)

    return f"everything {agent_name} learned from conversations, and its knowledge", forget_all


async def _allowed(args: argparse.Namespace) -> bool:
    """Whether to delete: --yes, or the person at the terminal said yes."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise Stop(EXIT_CONFIG, "not deleting without confirmation: run it on a terminal, or add --yes")
    return await _confirm("This cannot be undone. Delete? [y/N] ")


def _report(what: str, done: Forgotten, *, knowledge: bool, emptied: bool) -> None:
    """What went, and where copies of it may still be."""
    from bot.store import KNOWLEDGE_TABLES, forgotten_lines

    print(f"Forgot {what}:")
    for line in forgotten_lines(done):
        print(f"  {line}")
    if knowledge and set(done.memories) & set(KNOWLEDGE_TABLES):
        print(
            "  (knowledge is read again from its character's files at its next start: remove it there to "
            "keep it forgotten)"
        )
    if not emptied:
        print(
            "  (the daemon is reading the database: its next checkpoint clears the last copies from the "
            "write-ahead log)"
        )
