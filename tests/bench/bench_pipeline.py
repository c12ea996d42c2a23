"""Benchmark: messages through the whole pipeline with a model that answers instantly.

    .venv/bin/python tests/bench/bench_pipeline.py [--messages 2000] [--rooms 100] [--agents 1 5 20]

Each message goes through the real runtime, store, gate, providers, planning-output parsing,
REPLY and the callback (which stores the sent reply, as a platform adapter does). Model
handlers are in-process functions that return at once, so the figures are troupe's own
overhead. Rooms are followed, so every message is answered without the small model.
Prints per-message latency p50/p99, throughput per agent count, and peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.config.character import load_character
from bot.kernel.content import Content
from bot.kernel.messages import IncomingMessage, QuietChannel
from bot.kernel.models import ModelType
from bot.kernel.outgoing import Reply
from bot.kernel.types import ChannelType, Entity, Memory, Room, RoomState, World
from bot.runtime.agent import AgentRuntime
from bot.store import Database

PLAN = "<response><thought>ok</thought><actions>REPLY</actions><text>Noted, thanks.</text></response>"


async def make_agent(db: Database, tmp: Path, index: int, rooms: int) -> tuple[AgentRuntime, list[str], str]:
    path = tmp / f"agent{index}.json"
    path.write_text(
        json.dumps(
            {
                "name": f"Agent {index}",
                "bio": ["A benchmark character."] * 12,
                "topics": [f"topic {i}" for i in range(10)],
                "adjectives": ["calm", "brief"],
                "messageExamples": [
                    [
                        {"name": "{{user1}}", "content": {"text": "hi"}},
                        {"name": f"Agent {index}", "content": {"text": "hello"}},
                    ]
                ]
                * 6,
                "style": {"all": ["be brief"], "chat": ["answer first"]},
            }
        )
    )
    character = load_character(path, environ={}).raise_for_problems()
    rt = AgentRuntime(character, db.for_agent(character.agent_id), environ={})

    async def small(runtime: AgentRuntime, params: dict) -> str:
        return "<response><action>RESPOND</action></response>"

    async def large(runtime: AgentRuntime, params: dict) -> str:
        return PLAN

    rt.register_model(ModelType.TEXT_SMALL, small, "instant")
    rt.register_model(ModelType.TEXT_LARGE, large, "instant")
    await rt.start()
    world = rt.unique_id("bench:world")
    human = rt.unique_id("bench:user")
    await rt.store.create_world(World(world, rt.agent_id, name="bench"))
    await rt.store.create_entities([Entity(human, rt.agent_id, names=["Sam"])])
    room_ids = []
    for r in range(rooms):
        room_id = rt.unique_id(f"bench:room:{r}")
        await rt.store.create_rooms(
            [Room(room_id, source="bench", type=ChannelType.GROUP, name=f"room {r}", world_id=world)]
        )
        await rt.store.add_participants([human, rt.agent_id], room_id)
        await rt.store.set_participant_state(room_id, rt.agent_id, RoomState.FOLLOWED)
        room_ids.append(room_id)
    return rt, room_ids, human


class Stored(QuietChannel):
    """A platform that takes every reply at once; what it sent is stored, as a real one's is."""

    def __init__(self, rt: AgentRuntime, room_id: str) -> None:
        self.rt, self.room_id = rt, room_id

    async def send(self, reply: Reply) -> list[Memory]:
        sent = Memory(entity_id=self.rt.agent_id, room_id=self.room_id, content=Content.from_json(reply.to_json()))
        await self.rt.store.create_memory(sent, "messages", unique=False)
        return [sent]


async def send(rt: AgentRuntime, room_id: str, human: str, text: str) -> float:
    message = Memory(id=str(uuid.uuid4()), entity_id=human, room_id=room_id, content=Content(text=text, source="bench"))
    started = time.perf_counter()
    await rt.receive(IncomingMessage(message, Stored(rt, room_id)))
    return (time.perf_counter() - started) * 1000


async def run(agents: int, messages: int, rooms: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        async with Database(Path(tmp) / "bench.db") as db:
            setup = [await make_agent(db, Path(tmp), i, rooms) for i in range(agents)]
            # Warm up: fill each room's history so prompts carry a real conversation.
            for rt, room_ids, human in setup:
                for room_id in room_ids[:5]:
                    for i in range(3):
                        await send(rt, room_id, human, f"warm-up {i}")

            latencies: list[float] = []
            per_agent = max(1, messages // agents)

            async def drive(rt: AgentRuntime, room_ids: list[str], human: str) -> None:
                for i in range(per_agent):
                    latencies.append(
                        await send(rt, room_ids[i % len(room_ids)], human, f"message {i} about topic {i % 7}")
                    )

            started = time.perf_counter()
            await asyncio.gather(*(drive(*s) for s in setup))
            elapsed = time.perf_counter() - started
            for rt, _, _ in setup:
                await rt.close()
    latencies.sort()
    return {
        "agents": agents,
        "messages": len(latencies),
        "p50": statistics.median(latencies),
        "p99": latencies[int(len(latencies) * 0.99) - 1],
        "throughput": len(latencies) / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000, help="messages per run (split across agents)")
    parser.add_argument("--rooms", type=int, default=100)
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 5, 20])
    args = parser.parse_args()
    print(f"bench_pipeline: {args.messages} messages per run over {args.rooms} rooms per agent, instant model")
    for agents in args.agents:
        r = asyncio.run(run(agents, args.messages, args.rooms))
        print(
            f"  {r['agents']:>2} agents: per-message p50 {r['p50']:6.2f} ms  p99 {r['p99']:6.2f} ms  "
            f"throughput {r['throughput']:7.1f} messages/s  ({r['messages']} messages)"
        )
    print(f"  peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
