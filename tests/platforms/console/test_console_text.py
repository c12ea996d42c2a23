"""The console reads what a terminal gives it: bytes that are not UTF-8 arrive (under a POSIX
locale) as lone surrogates, and are repaired before anything stores or sends them."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from bot.character import load_character
from bot.chat import chat
from bot.settings import DaemonSettings
from bot.store import Database

from ...fakes.openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[3]


async def test_a_line_with_undecodable_bytes_is_answered_and_stored_repaired(tmp_path: Path) -> None:
    shutil.copy(REPO / "characters" / "iris.json", tmp_path / "iris.json")
    settings = DaemonSettings(db_path=tmp_path / "troupe.db")
    async with FakeOpenAIServer() as server:
        environ = {"OPENAI_API_KEY": "sk-e2e-key-1234", "OPENAI_BASE_URL": server.url}
        iris = load_character(tmp_path / "iris.json", environ=environ)
        server.script_chat(
            lambda body: "<response><thought>ok</thought><actions>REPLY</actions><text>Got it.</text></response>"
        )
        lines = [b"caf\xe9 au lait".decode("utf-8", "surrogateescape")]  # Latin-1 typed into a UTF-8 terminal

        async def read() -> str | None:
            return lines.pop(0) if lines else None

        output = io.StringIO()
        assert await chat(settings, iris, environ, user="sam", output=output, read_line=read) == 0
    assert output.getvalue().splitlines()[1:] == ["Iris: Got it."]
    assert iris.character is not None
    async with Database(settings.database) as db:
        store = db.for_agent(iris.character.agent_id)
        said = [m.content.get("text") for m in await store.get_memories(table="messages") if m.content.get("text")]
    assert "caf\ufffd au lait" in said
