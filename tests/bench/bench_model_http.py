"""Benchmark: characters on the real openai plugin, against an OpenAI-compatible server over HTTP.

    .venv/bin/python tests/bench/bench_model_http.py [--messages 1000] [--agents 20] [--rooms 10]
    .venv/bin/python tests/bench/bench_model_http.py --reflections-do-not-parse --agents 0

Each character runs the whole pipeline (store, gate, providers, the plan, REPLY, evaluators) with
the openai plugin as its only model plugin, pointed at the fake OpenAI-compatible server
(tests/fakes/openai_server.py) in a process of its own, answering at once (tests/bench/_common.py):
the plan is a REPLY, every message is embedded (in the background, as in production), and the
reflection runs on its cadence and learns one fact (embedded too; with
``--reflections-do-not-parse`` it answers prose instead, to see what the cadence does then).
Messages are direct messages (so the small model is never asked whether to answer), entering
through ``runtime.receive`` with a reply channel that stores what it sends, as a platform does.

(a) One agent, messages one after another: the reply's latency (from ``receive`` to the reply
    handed to the channel; "handled" adds what runs after the reply: the evaluators) and
    messages/s (the time counts until every background embedding has been stored).
(b) ``--agents`` agents in one process, each sending its messages one after another, all at
    once: aggregate messages/s, measured the same way.

For each: model requests per message by endpoint and, for chat, by kind (the template that
wrote the prompt), and peak RSS at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.config.character import load_character
from bot.kernel.content import Content
from bot.kernel.messages import IncomingMessage, QuietChannel
from bot.kernel.outgoing import Reply
from bot.kernel.types import ChannelType, Entity, Memory, Room, World
from bot.runtime.agent import AgentRuntime
from bot.runtime.shared import Shared
from bot.store import Database
from tests.bench._common import ModelServer, Tally, p50_p95, runtime_of


def character_file(tmp: Path, name: str) -> Path:
    path = tmp / f"{name.lower().replace(' ', '_')}.json"
    path.write_text(
        json.dumps(
            {
                "name": name,
                "bio": ["A benchmark character."] * 12,
                "topics": [f"topic {i}" for i in range(10)],
                "adjectives": ["calm", "brief"],
                "messageExamples": [
                    [
                        {"name": "{{user1}}", "content": {"text": "hi"}},
                        {"name": name, "content": {"text": "hello"}},
                    ]
                ]
                * 6,
                "style": {"all": ["be brief"], "chat": ["answer first"]},
                "plugins": ["@elizaos/plugin-openai"],
            }
        )
    )
    return path


@dataclass
class Agent:
    rt: AgentRuntime
    rooms: list[str]
    people: list[str]
    replied: list[float] = field(default_factory=list)
    """Seconds from ``receive`` to the reply reaching the channel, one per message measured."""
    handled: list[float] = field(default_factory=list)
    """Seconds from ``receive`` to its return."""


class Stored(QuietChannel):
    """A platform that takes every reply at once and stores it, as a real one does; it notes when."""

    def __init__(self, rt: AgentRuntime, room_id: str) -> None:
        self.rt, self.room_id = rt, room_id
        self.sent_at: float | None = None

    async def send(self, reply: Reply) -> list[Memory]:
        self.sent_at = self.sent_at or time.perf_counter()
        sent = Memory(entity_id=self.rt.agent_id, room_id=self.room_id, content=Content.from_json(reply.to_json()))
        await self.rt.store.create_memory(sent, "messages", unique=False)
        return [sent]


async def make_agent(db: Database, tmp: Path, name: str, rooms: int, environ: dict[str, str], shared: Shared) -> Agent:
    rt = runtime_of(db, load_character(character_file(tmp, name), environ=environ), environ, shared)
    await rt.start()
    world = rt.unique_id("bench:world")
    await rt.store.create_world(World(world, rt.agent_id, name="bench"))
    agent = Agent(rt, [], [])
    for r in range(rooms):
        person = rt.unique_id(f"bench:user:{r}")
        room_id = rt.unique_id(f"bench:dm:{r}")
        await rt.store.create_entities([Entity(person, rt.agent_id, names=[f"Person {r}"])])
        await rt.store.create_rooms(
            [Room(room_id, source="bench", type=ChannelType.DM, name=f"dm {r}", world_id=world)]
        )
        await rt.store.add_participants([person, rt.agent_id], room_id)
        agent.rooms.append(room_id)
        agent.people.append(person)
    return agent


async def say(agent: Agent, index: int, text: str, *, measure: bool = True) -> None:
    room = index % len(agent.rooms)
    message = Memory(
        id=str(uuid.uuid4()),
        entity_id=agent.people[room],
        room_id=agent.rooms[room],
        content=Content(text=text, source="bench"),
    )
    channel = Stored(agent.rt, agent.rooms[room])
    started = time.perf_counter()
    await agent.rt.receive(IncomingMessage(message, channel))
    if measure:
        agent.handled.append(time.perf_counter() - started)
        if channel.sent_at is not None:
            agent.replied.append(channel.sent_at - started)


async def background_settled() -> None:
    """Wait for the embeddings still being computed and stored in the background."""
    current = asyncio.current_task()
    while pending := [t for t in asyncio.all_tasks() if t is not current and t.get_name().endswith(":embed")]:
        await asyncio.gather(*pending, return_exceptions=True)


@dataclass
class Run:
    agents: int
    messages: int
    seconds: float
    replied: list[float]
    handled: list[float]
    requests: Tally


async def run(server: ModelServer, agents: int, per_agent: int, rooms: int, warm_up: int) -> Run:
    environ = {"OPENAI_API_KEY": "sk-bench-0000", "OPENAI_BASE_URL": server.url}
    with tempfile.TemporaryDirectory() as tmp:
        async with Database(Path(tmp) / "bench.db") as db:
            shared = Shared()  # one daemon
            setup = [await make_agent(db, Path(tmp), f"Agent {i}", rooms, environ, shared) for i in range(agents)]
            try:
                # Warm up: connections open, every room with a conversation to put in prompts.
                for agent in setup:
                    for i in range(warm_up):
                        await say(agent, i, f"warm-up {i} from {agent.rt.character.name}", measure=False)
                await background_settled()
                before = await server.tally()

                async def drive(agent: Agent) -> None:
                    for i in range(per_agent):
                        # Each agent's people say their own things: nothing for the daemon's shared vectors to reuse.
                        await say(agent, i, f"message {i} about topic {i % 7} for {agent.rt.character.name}")

                started = time.perf_counter()
                await asyncio.gather(*(drive(a) for a in setup))
                await background_settled()
                seconds = time.perf_counter() - started
                requests = await server.tally() - before
            finally:
                for agent in setup:
                    await agent.rt.close()
    return Run(
        agents,
        per_agent * agents,
        seconds,
        [s for a in setup for s in a.replied],
        [s for a in setup for s in a.handled],
        requests,
    )


def report(title: str, r: Run) -> None:
    print(f"  {title}: {r.messages} messages in {r.seconds:.1f} s: {r.messages / r.seconds:6.1f} messages/s")
    print(f"    reply    {p50_p95(r.replied)}")
    print(f"    handled  {p50_p95(r.handled)}")
    print(f"    {r.requests.per(r.messages)}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000, help="messages of the one-agent run")
    parser.add_argument("--many-messages", type=int, default=100, help="messages per agent in the many-agent run")
    parser.add_argument("--agents", type=int, default=20, help="agents of the many-agent run (0: skip it)")
    parser.add_argument("--rooms", type=int, default=10, help="direct-message rooms per agent (one person each)")
    parser.add_argument("--warm-up", type=int, default=20, help="messages per agent before measuring")
    parser.add_argument(
        "--reflections-do-not-parse",
        action="store_true",
        help="the model answers reflections in prose, not in the XML asked for",
    )
    args = parser.parse_args()
    print(
        f"bench_model_http: openai plugin over HTTP to a fake server answering at once; "
        f"{args.rooms} DM rooms per agent, {args.warm_up} warm-up messages per agent"
        + ("; reflections answered in prose that does not parse" if args.reflections_do_not_parse else "")
    )
    async with ModelServer(reflections_parse=not args.reflections_do_not_parse) as server:
        report("1 agent, sequential", await run(server, 1, args.messages, args.rooms, args.warm_up))
        if args.agents > 0:
            many = await run(server, args.agents, args.many_messages, args.rooms, args.warm_up)
            report(f"{args.agents} agents, concurrent", many)
    print(f"  peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    asyncio.run(main())
