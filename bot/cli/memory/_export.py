"""``troupe memory export``: everything an agent stores (or one room's, one person's) as JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bot.cli.memory._finding import find_entity, find_room
from bot.cli.memory._stop import Stop
from bot.kernel.errors import EXIT_CONFIG
from bot.kernel.record_metadata import WorldMetadata

if TYPE_CHECKING:
    from bot.kernel.types import JSON, Memory
    from bot.store import MemoryExport, Store

__all__ = ["export", "memory_json"]

_MASK = "****************"
_CREDENTIAL = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|CREDENTIAL)", re.IGNORECASE)


def memory_json(m: Memory) -> JSON:
    return {
        "id": m.id,
        "table": m.table,
        "createdAt": m.created_at,
        "roomId": m.room_id,
        "worldId": m.world_id,
        "entityId": m.entity_id,
        "unique": m.unique,
        "content": m.content.to_json(),
        "metadata": m.metadata.to_json(),
    }


def _masked_world_metadata(metadata: WorldMetadata) -> JSON:
    """World metadata with the values of secret settings masked (a server's configured keys)."""
    if metadata.settings is None:
        return metadata.to_json()
    masked = {
        key: replace(setting, value=_MASK) if (setting.secret or _CREDENTIAL.search(key)) and setting.value else setting
        for key, setting in metadata.settings.items()
    }
    return replace(metadata, settings=masked).to_json()


def _export_json(agent_id: str, agent_name: str, data: MemoryExport, scope: dict[str, str | None]) -> JSON:
    from bot.kernel.types import now_ms

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
                "metadata": r.metadata.to_json(),
            }
            for r in data.rooms
        ],
        "entities": [
            {
                "id": e.id,
                "names": e.names,
                "createdAt": e.created_at,
                "metadata": e.metadata.to_json(),
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
        "memories": [memory_json(m) for m in data.memories],
        "relationships": [
            {
                "id": r.id,
                "sourceEntityId": r.source_entity_id,
                "targetEntityId": r.target_entity_id,
                "tags": r.tags,
                "metadata": r.metadata.to_json(),
                "createdAt": r.created_at,
            }
            for r in data.relationships
        ],
    }


async def export(store: Store, args: argparse.Namespace) -> int:
    room = await find_room(store, args.room)
    entity = await find_entity(store, args.entity)
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
        raise Stop(EXIT_CONFIG, f"cannot write {args.out}: {exc.strerror or exc}") from None
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
