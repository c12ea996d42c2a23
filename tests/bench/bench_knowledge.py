"""Benchmark of plugins/knowledge: ingesting a 10,000-chunk corpus, retrieval latency, hit rate.

Not a test. Run it from the repository root::

    .venv/bin/python tests/bench/bench_knowledge.py                       # 10,000 chunks x 1536 dims
    .venv/bin/python tests/bench/bench_knowledge.py --chunks 1000 --dims 384   # quick smoke run

It writes a synthetic corpus of Markdown files (made-up places, each with a few planted facts
amid filler that also names other places, so keywords alone are ambiguous), gives one character
that folder as knowledge, and times the real ingestion path from a cold start: scanning,
reading, chunking (500 tokens, 100 overlap), storing, and embedding through ``use_model`` with
an in-process fake model (a hashed bag of words, so the figure is troupe's own cost, not a
provider's). A second start then shows the incremental path (nothing changed: nothing read or
embedded). Finally it asks ``--questions`` known-answer questions ("Who founded Vorlaxi?") and
reports the latency of the hybrid search (vector + keywords, fused and reranked; the query
vector is computed beforehand, as the pipeline does when the message arrives) and of the
keyword-only search, and the hit rate (answer document among the top k fragments) of hybrid,
vector-only and keyword-only retrieval.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import random
import re
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.config.character import load_character
from bot.kernel.models import ModelType
from bot.runtime.agent import AgentRuntime
from bot.store import Database
from plugins.knowledge._search import rank

_WORD = re.compile(r"\w+")
_SYLLABLES = ["ka", "lo", "vi", "ran", "te", "mo", "zu", "pel", "dra", "qui", "ne", "sor", "ax", "bri", "tum", "el"]
# (fact, question in the fact's words, question in other words, kind of value)
_RELATIONS = [
    ("was founded by {value}.", "Who founded {name}?", "Who established {name}?", "person"),
    ("sits on the banks of the {value} river.", "Which river is {name} on?", "What water flows past {name}?", "word"),
    ("is famous for exporting {value}.", "What does {name} export?", "What goods does {name} sell abroad?", "word"),
    (
        "holds the {value} festival every spring.",
        "Which festival does {name} hold?",
        "What celebration happens in {name} each spring?",
        "word",
    ),
    (
        "has a population of about {value} people.",
        "How many people live in {name}?",
        "How large is the population of {name}?",
        "number",
    ),
]
PARAGRAPH_WORDS = 50
_STOP = frozenset("a an and are at be by do does for how in is it many of on or the to what which who".split())


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def make_embedder(dims: int):
    """A hashed bag of words, L2-normalised: deterministic and fast (CRC32, no model)."""

    def embed(text: str) -> list[float]:
        vector = [0.0] * dims
        for word in _WORD.findall(text.lower()):
            if word not in _STOP:
                vector[zlib.crc32(word.encode()) % dims] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    calls = {"requests": 0, "texts": 0}

    async def handler(runtime: Any, params: Any) -> Any:
        if params is None:
            return [0.1] + [0.0] * (dims - 1)
        calls["requests"] += 1
        if "texts" in params:
            calls["texts"] += len(params["texts"])
            return [embed(t) for t in params["texts"]]
        calls["texts"] += 1
        return embed(params["text"])

    return embed, handler, calls


def make_corpus(folder: Path, chunks: int, rng: random.Random) -> list[dict[str, str]]:
    """Write documents of about ten chunks each; return the planted facts as questions."""
    vocabulary = [f"{rng.choice(_SYLLABLES)}{rng.choice(_SYLLABLES)}{rng.choice(_SYLLABLES)}" for _ in range(6000)]
    weights = [1 / (i + 1) for i in range(len(vocabulary))]  # Zipf-like: a few words everywhere
    docs = max(1, chunks // 10)
    names: list[str] = []
    while len(names) < docs:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize() + f"{len(names)}"
        names.append(name)
    questions: list[dict[str, str]] = []
    folder.mkdir(parents=True, exist_ok=True)
    for d, name in enumerate(names):
        facts = []
        for statement, same_words, other_words, kind in rng.sample(_RELATIONS, 3):
            value = (
                f"{rng.choice(vocabulary).capitalize()} {rng.choice(vocabulary).capitalize()}"
                if kind == "person"
                else str(rng.randrange(1000, 999_999))
                if kind == "number"
                else rng.choice(vocabulary)
            )
            facts.append(f"{name} {statement.format(value=value)}")
            question = rng.choice((same_words, other_words))
            questions.append({"question": question.format(name=name), "answer": f"{name}.md"})
        paragraphs = []
        for p in range(24):  # about 4,000 tokens: ten 500-token chunks with 100 of overlap
            words = rng.choices(vocabulary, weights, k=PARAGRAPH_WORDS)
            for _ in range(2):  # other places mentioned in passing
                words.insert(rng.randrange(len(words)), rng.choice(names))
            text = " ".join(words).capitalize() + "."
            if p in (3, 11, 19):
                text += " " + facts[(p - 3) // 8]
            paragraphs.append(text)
        (folder / f"{name}.md").write_text(f"# {name}\n\n" + "\n\n".join(paragraphs) + "\n")
        del d
    return questions


async def start(db: Database, character_file: Path, handler: Any) -> tuple[AgentRuntime, float]:
    character = load_character(character_file).raise_for_problems()
    runtime = AgentRuntime(character, db.for_agent(character.agent_id), environ={})
    runtime.register_model(ModelType.TEXT_EMBEDDING, handler, "bench")
    t0 = time.perf_counter()
    await runtime.start()
    await runtime.get_service("knowledge").wait()
    return runtime, time.perf_counter() - t0


async def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    rng = random.Random(args.seed)
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="troupe-bench-knowledge-"))
    corpus = workdir / "corpus"
    questions = make_corpus(corpus, args.chunks, rng)
    size_mb = sum(f.stat().st_size for f in corpus.iterdir()) / 1024 / 1024
    character_file = workdir / "bench.json"
    character_file.write_text(
        json.dumps(
            {
                "name": "Bench",
                "bio": "x",
                "knowledge": [{"directory": "corpus"}],
                "settings": {"KNOWLEDGE_MIN_SIMILARITY": str(args.min_similarity)},
            }
        )
    )
    db_path = workdir / "bench.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    embed, handler, calls = make_embedder(args.dims)
    print(
        f"bench_knowledge: {len(list(corpus.iterdir()))} documents ({size_mb:.1f} MB) in {corpus}, "
        f"{args.dims}-dim fake embeddings, {args.questions} questions"
    )

    async with Database(db_path) as db:
        runtime, cold = await start(db, character_file, handler)
        service = runtime.get_service("knowledge")
        report = service.last
        print(
            f"  cold start: {report.fragments} chunks ingested and embedded in {cold:.1f} s = "
            f"{report.fragments / cold:,.0f} chunks/s ({calls['requests']} embedding requests)"
        )
        await runtime.close()
        calls["requests"] = calls["texts"] = 0
        runtime, warm = await start(db, character_file, handler)
        service = runtime.get_service("knowledge")
        print(
            f"  second start, nothing changed: {warm:.2f} s, {calls['requests']} embedding requests, "
            f"{service.last.new + service.last.changed} documents re-read"
        )

        asked = rng.sample(questions, min(args.questions, len(questions)))
        vectors = [embed(q["question"]) for q in asked]
        results: dict[str, list[list[str]]] = {"hybrid": [], "vectors": [], "keywords": []}
        timings: dict[str, list[float]] = {"hybrid": [], "keywords": []}
        config = service.config
        for question, vector in zip(asked, vectors, strict=True):
            t0 = time.perf_counter()
            hybrid = await service.search(question["question"], vector)
            timings["hybrid"].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            keywords = await service.search(question["question"])
            timings["keywords"].append((time.perf_counter() - t0) * 1000)
            nearest = await runtime.store.search_knowledge(
                vector, count=config.candidates, match_threshold=config.min_similarity
            )
            for name, hits in (("hybrid", hybrid), ("keywords", keywords), ("vectors", rank(nearest, [], [], config))):
                results[name].append([Path(h.memory.metadata.title or "").name for h in hits])
        for name, samples in timings.items():
            print(
                f"  {name + ' search':<16} p50 {percentile(samples, 0.5):7.1f} ms   "
                f"p95 {percentile(samples, 0.95):7.1f} ms"
            )
        for name, found in results.items():
            rates = [
                sum(q["answer"] in f[:k] for q, f in zip(asked, found, strict=True)) / len(asked) for k in (1, 3, 5)
            ]
            print(f"  {name:<9} hit@1 {rates[0]:6.1%}   hit@3 {rates[1]:6.1%}   hit@5 {rates[2]:6.1%}")
        await runtime.close()
    size = sum(os.path.getsize(f"{db_path}{s}") for s in ("", "-wal", "-shm") if os.path.exists(f"{db_path}{s}"))
    print(f"  database: {size / 1024 / 1024:.0f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=10_000, help="about how many chunks the corpus makes")
    parser.add_argument("--dims", type=int, default=1536, help="embedding length (384, 768, 1536 …)")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--min-similarity",
        type=float,
        default=0.05,
        help="KNOWLEDGE_MIN_SIMILARITY: the fake's cosines are low (a question shares two or three "
        "words with a 400-word chunk), so the default of 0.25 would hide every vector hit",
    )
    parser.add_argument("--dir", help="work folder (default: a new temporary one)")
    asyncio.run(main(parser.parse_args()))
