"""`troupe chat` on a first start: the first message is answered with the knowledge being loaded."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from pathlib import Path

from bot.cli.main import main
from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.chat import chat
from bot.store import SHARED_KNOWLEDGE_ID, Database
from tests.fakes.openai_server import FakeOpenAIServer

from .conftest import big_document


def one_line(text: str) -> Callable:
    queue = [text]

    async def read() -> str | None:
        return queue.pop(0) if queue else None

    return read


async def test_troupe_chat_answers_the_first_message_from_a_50_kb_file_still_being_loaded(tmp_path: Path) -> None:
    (tmp_path / "hives.md").write_text(big_document())
    (tmp_path / "ada.json").write_text(json.dumps({"name": "Ada", "bio": "Ada keeps bees."}))
    settings = DaemonSettings(db_path=tmp_path / "troupe.db")
    # Every request of a slow service takes 0.3 s: the first sync (embedding 30-odd chunks) is
    # still running when the first line arrives.
    async with FakeOpenAIServer(latency=0.3) as server:
        environ = {
            "OPENAI_API_KEY": "sk-test-1234",
            "OPENAI_BASE_URL": server.url,
            "KNOWLEDGE_PATH": str(tmp_path / "hives.md"),
        }
        server.script_chat(
            "<response><thought>t</thought><actions>REPLY</actions><text>Her name is Marigold.</text></response>"
        )
        out = io.StringIO()
        character = load_character(tmp_path / "ada.json", environ=environ)
        assert (
            await chat(
                settings,
                character,
                environ,
                user="sam",
                output=out,
                read_line=one_line("What is the queen of hive 137 named?"),
            )
            == 0
        )
    plans = [r.json for r in server.requests_for("chat") if r.json["model"] == "gpt-4o"]
    assert len(plans) == 1
    assert "The queen of hive 137 is named Marigold." in json.dumps(plans[0])
    assert out.getvalue().splitlines()[1:] == ["Ada: Her name is Marigold."]

    # KNOWLEDGE_PATH set for this run is Ada's own, and `troupe memory forget --all` removes it.
    assert character.character is not None
    async with Database(settings.database) as db:
        assert (await db.for_agent(character.character.agent_id).count_knowledge())[1] > 20
        assert not await db.for_agent(SHARED_KNOWLEDGE_ID).count_memories_by_table()
    assert (
        await asyncio.to_thread(main, ["memory", "--db", str(settings.database), "forget", "Ada", "--all", "--yes"])
        == 0
    )
    async with Database(settings.database) as db:
        assert await db.for_agent(character.character.agent_id).count_knowledge() == (0, 0)
