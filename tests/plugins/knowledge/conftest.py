"""Agents with knowledge over one database, a deterministic fake embedding model, and tiny PDFs.

``agents.start(name, knowledge=[...], settings={...})`` writes a character file into the test's
folder (knowledge paths are relative to it), starts its runtime with the fake embedding model
(``embedding=False``: none) and waits for the first knowledge sync (``wait=False``: does not;
``home=False``: started as a daemon serving only some of its platform is, with no sync).
``agents.restart(rt)`` closes it and starts it again from the same file. ``agents.embedder`` counts the texts it embedded.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import math
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import load_character
from bot.kernel.models import ModelType
from bot.runtime.agent import AgentRuntime
from bot.store import Database

DIMS = 384
_WORD = re.compile(r"\w+")
_STOP = frozenset("a an and are at be by do does for how in is it of on or the to what when where who why with".split())


def embed(text: str) -> list[float]:
    """A hashed bag of words plus character trigrams: texts sharing words (or word stems) are similar."""
    vector = [0.0] * DIMS

    def add(token: str, weight: float) -> None:
        vector[int(hashlib.sha256(token.encode()).hexdigest(), 16) % DIMS] += weight

    for word in (w.lower() for w in _WORD.findall(text)):
        if word in _STOP:
            continue
        add(word, 1.0)
        padded = f"<{word}>"
        for i in range(len(padded) - 2):
            add(padded[i : i + 3], 0.3)
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


@dataclass
class FakeEmbedder:
    """A TEXT_EMBEDDING handler taking ``{"text"}`` and ``{"texts"}``; records what it embedded."""

    batches: bool = True
    texts: list[str] = field(default_factory=list)
    requests: int = 0
    fail: bool = False
    batch_latency: float = 0.0
    """Seconds each batch (ingestion) takes; a message's single text is answered at once."""

    async def __call__(self, runtime: Any, params: Any) -> Any:
        if params is None:
            return [0.1] + [0.0] * (DIMS - 1)  # the dimension probe
        if self.fail:
            raise RuntimeError("embedding service down")
        self.requests += 1
        if "texts" in params:
            await asyncio.sleep(self.batch_latency)
            if not self.batches:
                raise KeyError("text")
            self.texts.extend(params["texts"])
            return [embed(t) for t in params["texts"]]
        self.texts.append(params["text"])
        return embed(params["text"])

    def reset(self) -> None:
        self.texts.clear()
        self.requests = 0


@dataclass
class Agents:
    db: Database
    dir: Path
    embedder: FakeEmbedder = field(default_factory=FakeEmbedder)
    runtimes: list[AgentRuntime] = field(default_factory=list)

    async def start(
        self,
        name: str = "Ada",
        *,
        knowledge: list[Any] | None = None,
        settings: dict[str, Any] | None = None,
        environ: dict[str, str] | None = None,
        embedding: bool = True,
        wait: bool = True,
        home: bool = True,
    ) -> AgentRuntime:
        path = self.dir / f"{name.lower()}.json"
        if knowledge is not None or not path.exists():
            body = {
                "name": name,
                "bio": f"{name} is a test character.",
                "knowledge": knowledge or [],
                "settings": settings or {},
            }
            path.write_text(json.dumps(body))
        character = load_character(path, environ=environ or {}).raise_for_problems()
        rt = AgentRuntime(character, self.db.for_agent(character.agent_id), environ=environ or {})
        rt.home = home
        if embedding:
            rt.register_model(ModelType.TEXT_EMBEDDING, self.embedder, "fake")
        await rt.start()
        self.runtimes.append(rt)
        if wait:
            await rt.get_service("knowledge").wait()
        return rt

    async def restart(
        self, rt: AgentRuntime, *, embedding: bool = True, environ: dict[str, str] | None = None
    ) -> AgentRuntime:
        await rt.close()
        return await self.start(rt.character.name, embedding=embedding, environ=environ)


@pytest.fixture
async def agents(tmp_path: Path) -> AsyncIterator[Agents]:
    async with Database(tmp_path / "troupe.db") as db:
        made = Agents(db, tmp_path)
        yield made
        for rt in made.runtimes:
            await rt.close()


def big_document() -> str:
    """About 50 KB of hive records with one fact to find in the middle: "Marigold"."""
    records = [
        f"Hive {i} stands in meadow {i % 7}; it gave {i * 3} kilograms of honey last summer and was "
        f"inspected on day {i % 28 + 1} by the keeper on duty that week."
        for i in range(400)
    ]
    records.insert(200, "The queen of hive 137 is named Marigold.")
    return "\n\n".join(records)


def make_pdf(*pages: str, password: str | None = None) -> bytes:
    """A PDF with one page of Helvetica text per argument (lines split on newlines), optionally
    encrypted (RC4, which pypdf opens without extra packages)."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{' '.join(f'{4 + 2 * i} 0 R' for i in range(len(pages)))}] /Count {len(pages)} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        shown = " ".join(f"({line.replace('(', '[').replace(')', ']')}) Tj T*" for line in text.split("\n"))
        ops = f"BT /F1 12 Tf 72 720 Td 14 TL {shown} ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
        )
        objects.append(f"<< /Length {len(ops)} >>\nstream\n{ops}\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode())
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    data = out.getvalue()
    if password is None:
        return data
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=password, algorithm="RC4-128")
    encrypted = io.BytesIO()
    writer.write(encrypted)
    return encrypted.getvalue()
