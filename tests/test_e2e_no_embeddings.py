"""End to end with embeddings turned off (``OPENAI_EMBEDDING_MODEL=none``): the character
answers, and finds a fact it learned and a piece of its knowledge by keywords alone."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.chat import chat, runtime_plugins
from bot.kernel.content import Content
from bot.kernel.models import ModelType
from bot.kernel.types import Memory
from bot.runtime.agent import AgentRuntime
from bot.store import Database
from platforms.console import ConsoleAdapter  # noqa: F401  (the adapter chat() drives)

from .fakes.openai_server import FakeOpenAIServer
from .test_e2e_console import lines, reply

REPO = Path(__file__).resolve().parents[1]
FACT = "Sam keeps a tortoise named Gerald"
KNOWLEDGE = "The spare lighthouse key hangs behind the blue door of the boathouse."


async def test_without_embeddings_facts_and_knowledge_are_found_by_keywords(tmp_path: Path) -> None:
    body = json.loads((REPO / "characters" / "iris.json").read_text())
    body["knowledge"] = [KNOWLEDGE]
    (tmp_path / "iris.json").write_text(json.dumps(body))
    settings = DaemonSettings(db_path=tmp_path / "troupe.db")
    async with FakeOpenAIServer() as server:
        environ = {
            "OPENAI_API_KEY": "sk-e2e-key-1234",
            "OPENAI_BASE_URL": server.url,
            "OPENAI_EMBEDDING_MODEL": "none",
        }
        iris = load_character(tmp_path / "iris.json", environ=environ)
        reflection = (
            f"<response><thought>t</thought><facts><fact><claim>{FACT}</claim>"
            "<type>fact</type><in_bio>false</in_bio><already_known>false</already_known></fact></facts>"
            "<relationships></relationships></response>"
        )

        server.script_chat(lambda body: reply("Noted.") if body["model"] == "gpt-4o" else reflection)
        first = io.StringIO()
        said = lines("Hi Iris", "I have a pet at home", "It is slow", "It likes lettuce", "That is all")
        assert await chat(settings, iris, environ, user="sam", output=first, read_line=said) == 0
        assert [r.json["model"] for r in server.requests_for("chat")].count("gpt-4o-mini") == 1  # the reflection

        second = io.StringIO()
        question = lines("Where is the lighthouse key, and how is my tortoise?")
        assert await chat(settings, iris, environ, user="sam", output=second, read_line=question) == 0
        assert second.getvalue().splitlines()[1:] == ["Iris: Noted."]
        assert server.requests_for("embeddings") == []
        # The knowledge, found by "lighthouse key", in the prompt of the plan.
        assert "behind the blue door of the boathouse" in json.dumps(server.requests_for("chat")[-1].json)

        # The fact, found by "tortoise" when the plan asks for FACTS.
        assert iris.character is not None
        async with Database(settings.database) as db:
            runtime = AgentRuntime(
                iris.character, db.for_agent(iris.character.agent_id), environ=environ, plugins=runtime_plugins(iris)
            )
            await runtime.start()
            try:
                assert runtime.has_model(ModelType.TEXT_LARGE) and not runtime.has_model(ModelType.TEXT_EMBEDDING)
                (fact,) = await runtime.store.get_memories(table="facts")
                assert fact.content.text == FACT and fact.embedding is None
                asked = Memory(
                    entity_id=fact.entity_id,
                    room_id=fact.room_id,
                    content=Content(text="Do you remember my tortoise?"),
                    id=str(uuid.uuid4()),
                )
                state = await runtime.compose_state(asked, ["FACTS"])
                assert f"- {FACT}" in state.text
            finally:
                await runtime.close()
