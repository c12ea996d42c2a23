"""Benchmark of SUMMARIZE_CONVERSATION: the cost of "catch me up" over 500 stored messages.

Not a test. Run it from the repository root::

    .venv/bin/python tests/bench/bench_summary.py                    # 500 messages, instant model
    .venv/bin/python tests/bench/bench_summary.py --latency-ms 800   # a model taking 0.8 s a call

It stores ``--messages`` chat messages (made-up sentences of 4 to 30 words, five people) in one
room after the asker's last message, then the asker says "Ada, catch me up" and the whole
pipeline runs: the plan (TEXT_LARGE, scripted to choose SUMMARIZE_CONVERSATION), the window
(everything since the asker last wrote), the chunk summaries and their combination (TEXT_SMALL),
the answer sent through the reply channel, then the reflection evaluator. The model is in
process and answers at once (or after ``--latency-ms``); tokens are estimated as characters / 4,
as the action itself estimates them. It prints the model calls and prompt/completion tokens by
kind and the wall time of the message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.config.character import load_character
from bot.kernel.content import Content
from bot.kernel.messages import IncomingMessage, QuietChannel
from bot.kernel.models import ModelType
from bot.kernel.outgoing import Reply
from bot.kernel.types import ChannelType, Entity, Memory, Room, World, now_ms
from bot.runtime.agent import AgentRuntime
from bot.store import Database

_WORDS = (
    "the plot villain chapter draft deadline map dragon tavern scene edit idea twist ending hero "
    "fix review tomorrow maybe agree think should could really character dialogue pacing outline "
    "meeting notes budget cover art print launch blurb reader feedback rewrite opening"
).split()
_PEOPLE = ("Sam", "Cleo", "Ravi", "Mona", "Teo")
_KINDS = (
    ("chunk", "Summarise this stretch of it"),
    ("combine", "combine the parts into one summary"),
    ("reflection", "Look back over the conversation as "),
    ("plan", "Write the next turn of "),
)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class _Model:
    """The in-process model: counts calls and tokens by the template that asked."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.calls: Counter[str] = Counter()
        self.prompt: Counter[str] = Counter()
        self.completion: Counter[str] = Counter()

    async def answer(self, runtime: AgentRuntime, params: Mapping[str, Any]) -> str:
        prompt = str(params.get("prompt") or "")
        kind = next((k for k, marker in _KINDS if marker in prompt), "other")
        if kind == "plan":
            text = "<response><thought>they want a recap</thought><actions>SUMMARIZE_CONVERSATION</actions></response>"
        elif kind in ("chunk", "combine"):
            bullets = "\n".join(f"- {' '.join(_WORDS[i : i + 12])}." for i in range(0, 48, 12))
            text = f"<response><summary>{bullets}</summary></response>"
        else:
            text = "<response><thought>nothing new</thought><facts></facts><relationships></relationships></response>"
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        self.calls[kind] += 1
        self.prompt[kind] += _tokens(prompt)
        self.completion[kind] += _tokens(text)
        return text


class _Channel(QuietChannel):
    def __init__(self, room: str) -> None:
        self.room = room
        self.sent: list[str] = []

    async def send(self, reply: Reply) -> list[Memory]:
        self.sent.append(reply.text)
        return [
            Memory(
                id=str(uuid.uuid4()), entity_id="agent", room_id=self.room, content=Content.from_json(reply.to_json())
            )
        ]


async def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    rng = random.Random(args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="troupe-bench-summary-"))
    path = workdir / "ada.json"
    settings = {"SUMMARY_CHUNK_TOKENS": str(args.chunk_tokens)} if args.chunk_tokens else {}
    path.write_text(json.dumps({"name": "Ada", "bio": "A test character.", "settings": settings}))
    character = load_character(path, environ={}).raise_for_problems()
    model = _Model(args.latency_ms / 1000)
    async with Database(workdir / "bench.db") as db:
        rt = AgentRuntime(character, db.for_agent(character.agent_id), environ={})
        rt.register_model(ModelType.TEXT_SMALL, model.answer, "bench")
        rt.register_model(ModelType.TEXT_LARGE, model.answer, "bench")
        await rt.start()
        world, room = rt.unique_id("bench:guild"), rt.unique_id("bench:room")
        await rt.store.create_world(World(world, rt.agent_id, name="Guild", server_id="guild"))
        await rt.store.create_rooms(
            [Room(room, source="discord", type=ChannelType.GROUP, name="general", world_id=world)]
        )
        people = [rt.unique_id(f"bench:{name}") for name in _PEOPLE]
        asker = rt.unique_id("bench:Dana")
        await rt.store.create_entities(
            [Entity(i, rt.agent_id, names=[n]) for i, n in zip([*people, asker], [*_PEOPLE, "Dana"], strict=True)]
        )
        for entity in [*people, asker, rt.agent_id]:
            await rt.store.add_participant(entity, room)
        start = now_ms() - (args.messages + 10) * 20_000
        said = [
            Memory(
                entity_id=asker,
                agent_id=rt.agent_id,
                room_id=room,
                content=Content(text="bye for now"),
                created_at=start,
            )
        ]
        for i in range(args.messages):
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 30)))
            memory = Memory(
                entity_id=rng.choice(people),
                agent_id=rt.agent_id,
                room_id=room,
                content=Content(text=words),
                created_at=start + (i + 1) * 20_000,
            )
            said.append(memory)
        await rt.store.create_memories(said, "messages")
        chars = sum(len(m.content.text or "") for m in said[1:])

        channel = _Channel(room)
        request = Memory(
            id=str(uuid.uuid4()),
            entity_id=asker,
            room_id=room,
            content=Content(text="Ada, catch me up", source="discord"),
        )
        t0 = time.perf_counter()
        outcome = await rt.receive(IncomingMessage(request, channel))
        wall = time.perf_counter() - t0
        await rt.close()

    print(
        f"bench_summary: {args.messages} stored messages ({chars:,} characters, ~{chars // 4:,} tokens), "
        f"'catch me up' -> {outcome.status.value}, model latency {args.latency_ms:.0f} ms a call, "
        f"SUMMARY_CHUNK_TOKENS {args.chunk_tokens or 'default'}"
    )
    print(f"  {'kind':<11}{'calls':>6}{'prompt tok':>12}{'completion tok':>16}")
    for kind in ("plan", "chunk", "combine", "reflection", "other"):
        if model.calls[kind]:
            print(f"  {kind:<11}{model.calls[kind]:>6}{model.prompt[kind]:>12,}{model.completion[kind]:>16,}")
    summary = ("chunk", "combine")
    print(
        f"  the summary: {sum(model.calls[k] for k in summary)} TEXT_SMALL calls, "
        f"{sum(model.prompt[k] for k in summary):,} prompt + {sum(model.completion[k] for k in summary):,} "
        f"completion tokens; answer {sum(len(t) for t in channel.sent):,} characters in {len(channel.sent)} message(s)"
    )
    print(f"  wall time of the message (plan, summary, reflection): {wall * 1000:,.0f} ms")
    if args.show:
        print("\n".join(channel.sent))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--latency-ms", type=float, default=0.0, help="how long each model call takes")
    parser.add_argument("--chunk-tokens", type=int, default=0, help="SUMMARY_CHUNK_TOKENS (default: troupe's)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--show", action="store_true", help="print the answer")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
