"""End to end with an embedding model of a length the store has no column for (576, SmolLM2's):
the length is learned at start, messages are stored with their vectors and found by them, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.config.character import load_character
from bot.daemon.chat import runtime_plugins
from bot.kernel.content import Content
from bot.kernel.models import ModelType
from bot.kernel.types import Memory
from bot.runtime.agent import AgentRuntime
from bot.store import backend_for
from platforms.console import ConsoleAdapter  # noqa: F401  (registers the console platform)

from .fakes.openai_server import FakeOpenAIServer


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "troupe.db")
    return str(request.getfixturevalue("postgres_url"))


async def test_a_576_length_model_is_learned_stored_and_searched(tmp_path: Path, location: str) -> None:
    path = tmp_path / "ada.json"
    path.write_text(json.dumps({"name": "Ada", "bio": "A test character.", "plugins": ["@elizaos/plugin-openai"]}))
    async with FakeOpenAIServer(embedding_dimensions=576) as server, backend_for(location) as backend:
        # A local server's model: no key, no OPENAI_EMBEDDING_DIMENSIONS, a name troupe does not know.
        environ = {"OPENAI_BASE_URL": server.url, "OPENAI_EMBEDDING_MODEL": "smollm2-embed"}
        result = load_character(path, environ=environ)
        character = result.raise_for_problems()
        runtime = AgentRuntime(
            character, backend.for_agent(character.agent_id), environ=environ, plugins=runtime_plugins(result)
        )
        await runtime.start()
        try:
            assert await runtime.store.get_embedding_dimension() == 576
            assert len(server.requests_for("embeddings")) == 1  # the one request at start
            texts = ["the lighthouse keeper feeds the gulls", "tortoises like lettuce", "rain tomorrow"]
            vectors = await asyncio.gather(
                *(runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": text}) for text in texts)
            )
            for text, vector in zip(texts, vectors, strict=True):
                assert len(vector) == 576
                memory = Memory(
                    entity_id=runtime.agent_id, room_id=runtime.agent_id, content=Content(text=text), embedding=vector
                )
                await runtime.store.create_memory(memory, "facts")
            found = await runtime.store.search_memories(vectors[1], "facts", count=2)
            assert found[0].content.text == "tortoises like lettuce"
            assert found[0].similarity == pytest.approx(1.0, abs=1e-5) and found[0].embedding is not None
            assert len(found[0].embedding) == 576
        finally:
            await runtime.close()
