"""A separate process that writes memories in a loop; used by the concurrency and crash tests.

Usage: python _writer.py DB_PATH AGENT_ID ROOM_ID ENTITY_ID COUNT
Prints one line "ok N" after each committed write, "done" at the end. COUNT 0 means forever.
It creates, updates and deletes so every trigger and cascade runs while it may be killed.
"""

from __future__ import annotations

import asyncio
import random
import sys

from bot.kernel.content import Content
from bot.kernel.types import AgentRecord, ChannelType, Entity, Memory, Room
from bot.store import Database


async def main(path: str, agent_id: str, room_id: str, entity_id: str, count: int) -> None:
    rng = random.Random(agent_id)
    async with Database(path) as db:
        store = db.for_agent(agent_id)
        await store.create_agent(AgentRecord(id=agent_id, name="writer"))
        await store.create_entities([Entity(id=entity_id, agent_id=agent_id, names=["w"])])
        await store.create_rooms([Room(id=room_id, source="test", type=ChannelType.GROUP)])
        n = 0
        while count == 0 or n < count:
            vector = [rng.gauss(0, 1) for _ in range(384)]
            memory_id = await store.create_memory(
                Memory(
                    entity_id=entity_id,
                    room_id=room_id,
                    content=Content(text=f"line {n} word{n % 7}"),
                    embedding=vector,
                ),
                "messages",
            )
            if n % 5 == 1:
                await store.update_memory(memory_id, content=Content(text=f"edited {n}"), embedding=vector[::-1])
            if n % 7 == 3:
                await store.delete_memory(memory_id)
            n += 1
            print(f"ok {n}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
