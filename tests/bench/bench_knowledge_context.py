"""What contextual embeddings (CTX_KNOWLEDGE_ENABLED) cost: model calls, tokens and time to ingest a folder.

Not a test. Run it from the repository root::

    .venv/bin/python tests/bench/bench_knowledge_context.py                      # the tests' corpus
    .venv/bin/python tests/bench/bench_knowledge_context.py --folder docs --latency 0.5 --concurrency 8

A character with the folder as knowledge runs on the real openai plugin, pointed at the fake
OpenAI-compatible server (tests/fakes/openai_server.py) in this process, which answers every
request after ``--latency`` seconds (a context with a fixed sentence of about 20 words). For each
of CTX_KNOWLEDGE_ENABLED off and on, from an empty database: the first start's ingestion (from
``start`` until the knowledge sync is done), then a second start with nothing changed (after a
warm-up start that is not counted). It prints,
for each, the chat (context) and embedding requests, the texts embedded, the estimated prompt
tokens (troupe's own estimate, plugins/knowledge/_text.py, of what was sent) of each, the
completion tokens asked for, and the seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.config.character import load_character
from bot.store import Database
from plugins.knowledge._text import estimate_tokens
from tests.bench._common import runtime_of
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest

_TEXT = (".md", ".txt", ".json", ".pdf", ".docx")
CORPUS = Path(__file__).resolve().parents[1] / "plugins" / "knowledge" / "corpus"
_CONTEXT = "This chunk comes from the document's section on its main subject and describes the details it names."


@dataclass
class Cost:
    chats: int = 0
    chat_tokens: int = 0
    completion_tokens: int = 0
    embeddings: int = 0
    embedded: int = 0
    embedding_tokens: int = 0
    seconds: float = 0.0

    @classmethod
    def of(cls, requests: list[RecordedRequest], seconds: float) -> Cost:
        cost = cls(seconds=seconds)
        for request in requests:
            body: dict[str, Any] = request.json if isinstance(request.json, dict) else {}
            if request.endpoint == "chat":
                cost.chats += 1
                cost.chat_tokens += sum(estimate_tokens(str(m.get("content", ""))) for m in body.get("messages", []))
                cost.completion_tokens += estimate_tokens(_CONTEXT)
            elif request.endpoint == "embeddings":
                inputs = body.get("input", "")
                texts = [inputs] if isinstance(inputs, str) else list(inputs)
                cost.embeddings += 1
                cost.embedded += len(texts)
                cost.embedding_tokens += sum(estimate_tokens(str(t)) for t in texts)
        return cost

    def line(self, what: str) -> str:
        return (
            f"  {what:<34} {self.chats:>5} chat ({self.chat_tokens:>9,} prompt + {self.completion_tokens:>6,} "
            f"completion tokens), {self.embeddings:>3} embedding requests ({self.embedded:>4} texts, "
            f"{self.embedding_tokens:>7,} tokens), {self.seconds:6.2f} s"
        )


async def ingest(
    folder: Path, server: FakeOpenAIServer, workdir: Path, contextual: bool, concurrency: int = 4
) -> tuple[Cost, Cost, int]:
    """The first start's and the second start's cost, and the chunks stored."""
    character_file = workdir / f"ctx-{'on' if contextual else 'off'}.json"
    character_file.write_text(
        json.dumps(
            {
                "name": "Bench",
                "bio": "x",
                "plugins": ["@elizaos/plugin-openai"],
                "knowledge": [{"directory": str(folder.resolve())}],
                "settings": {
                    "CTX_KNOWLEDGE_ENABLED": "true" if contextual else "false",
                    "CTX_KNOWLEDGE_CONCURRENCY": str(concurrency),
                },
            }
        )
    )
    environ = {"OPENAI_API_KEY": "sk-bench-0000", "OPENAI_BASE_URL": server.url}
    costs: list[Cost] = []
    chunks = 0
    async with Database(workdir / f"ctx-{'on' if contextual else 'off'}.db") as db:
        for _ in range(2):
            rt = runtime_of(db, load_character(character_file, environ=environ), environ)
            server.requests.clear()
            started = time.perf_counter()
            await rt.start()
            report = await rt.get_service("knowledge").wait()
            costs.append(Cost.of(list(server.requests), time.perf_counter() - started))
            chunks = report.fragments if report is not None else 0
            await rt.close()
    return costs[0], costs[1], chunks


async def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.ERROR)  # not the images of docs/ being skipped
    folder = Path(args.folder)
    files = [p for p in folder.rglob("*") if p.is_file() and p.suffix in _TEXT]
    size = sum(p.stat().st_size for p in files)
    print(
        f"bench_knowledge_context: {len(files)} documents ({size / 1024:.0f} KB) in {folder}, "
        f"every request answered after {args.latency:g} s"
    )
    with tempfile.TemporaryDirectory(prefix="troupe-bench-ctx-") as tmp:
        async with FakeOpenAIServer(latency=args.latency) as server:
            server.script_chat(*([_CONTEXT] * 100_000))
            warm = Path(tmp) / "warm-up"  # imports and first connections, outside the figures
            warm.mkdir()
            await ingest(CORPUS, server, warm, False)
            for contextual in (False, True):
                first, second, chunks = await ingest(folder, server, Path(tmp), contextual, args.concurrency)
                print(f" CTX_KNOWLEDGE_ENABLED={'true' if contextual else 'false'}: {chunks} chunks")
                print(first.line("first start (ingest)"))
                print(second.line("second start (nothing changed)"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", default=str(CORPUS), help="the folder to ingest (default: the tests' corpus)")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds the fake takes to answer each request")
    parser.add_argument("--concurrency", type=int, default=4, help="CTX_KNOWLEDGE_CONCURRENCY: contexts asked at once")
    asyncio.run(main(parser.parse_args()))
