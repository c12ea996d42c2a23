"""``troupe memory list``, ``show`` and ``search``: what an agent stores, as lines or JSON."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.cli.memory._export import memory_json
from bot.cli.memory._finding import SHARED, find_entity, find_room, roster
from bot.cli.memory._stop import PROG

if TYPE_CHECKING:
    from bot.kernel.types import Memory
    from bot.store import Store, StoreBackend

__all__ = ["list_agents", "list_memories", "search", "show"]

_TEXT_WIDTH = 100


def _when(ms: int | None) -> str:
    if ms is None:
        return "????-??-?? ??:??"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")


def one_line(text: str, width: int = _TEXT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


async def _print_memories(store: Store, memories: Sequence[Memory], as_json: bool) -> None:
    if as_json:
        print(json.dumps([memory_json(m) for m in memories], ensure_ascii=False, indent=2))
        return
    from bot.store import speaker_names

    names = await speaker_names(store, memories)
    room_ids = list(dict.fromkeys(m.room_id for m in memories if m.room_id))
    rooms = {room.id: room.name or room.id[:8] for room in await store.get_rooms_by_ids(room_ids)}
    for m in memories:
        who = names.get(m.entity_id, "someone")
        room = rooms.get(m.room_id or "", (m.room_id or "-")[:8])
        print(
            f"{_when(m.created_at)}  {m.table or '?':<10} {one_line(room, 20):<20}  {who}: "
            f"{one_line(m.content.text or '')}"
        )


async def list_agents(db: StoreBackend) -> int:
    from bot.store import SHARED_KNOWLEDGE_ID

    agents = await roster(db).get_agents()
    if not agents:
        print("no agents in the database yet")
        return 0
    for agent in agents:
        counts = await db.for_agent(agent.id).count_memories_by_table()
        summary = ", ".join(f"{table} {n}" for table, n in counts.items()) or "no memories"
        if agent.id == SHARED_KNOWLEDGE_ID:
            summary += f" (knowledge marked shared in character files; `{PROG} list {SHARED}`)"
        print(f"{agent.name} ({agent.id}): {summary}")
    return 0


async def list_memories(store: Store, args: argparse.Namespace) -> int:
    room = await find_room(store, args.room)
    entity = await find_entity(store, args.entity)
    memories = await store.list_memories(
        tables=args.table, room_id=room, entity_id=entity.id if entity else None, count=args.limit
    )
    if not memories and not args.json:
        print("no memories match")
        return 0
    await _print_memories(store, memories, args.json)
    return 0


async def show(store: Store) -> int:
    from bot.store import known_people

    agent = await store.get_agent()
    counts = await store.count_memories_by_table()
    print(f"{agent.name if agent else store.agent_id} ({store.agent_id})")
    print("memories: " + (", ".join(f"{table} {n}" for table, n in counts.items()) or "none"))
    print("rooms:")
    for room, n in await store.get_rooms_with_counts():
        print(f"  {room.id}  {room.type.value:<11} {one_line(room.name or '-', 40):<40} {n} memories")
    print("people:")
    for entity in await known_people(store):
        print(f"  {entity.id}  {', '.join(n for n in entity.names if n) or '-'}")
    return 0


async def search(store: Store, args: argparse.Namespace) -> int:
    room = await find_room(store, args.room)
    entity = await find_entity(store, args.entity)
    memories = await store.search_all_memories_by_text(
        args.query, tables=args.table, room_id=room, entity_id=entity.id if entity else None, count=args.limit
    )
    if not memories and not args.json:
        print("no memories match")
        return 0
    await _print_memories(store, memories, args.json)
    return 0
