"""The console reads what a terminal gives it: bytes that are not UTF-8 arrive (under a POSIX
locale) as lone surrogates, and are repaired before anything stores or sends them."""

from __future__ import annotations

import io
import shutil
import time
from pathlib import Path

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.chat import chat
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
        said = [m.content.text for m in await store.get_memories(table="messages") if m.content.text]
    assert "caf\ufffd au lait" in said


async def test_a_long_summary_is_printed_whole_below_the_name_of_its_file(tmp_path: Path) -> None:
    """Discord and Telegram get a long summary as a document; a terminal prints the document."""
    shutil.copy(REPO / "characters" / "iris.json", tmp_path / "iris.json")
    settings = DaemonSettings(db_path=tmp_path / "troupe.db")
    bullets = "\n".join(f"- point {i}: " + "word " * 30 for i in range(20))  # about 3,300 characters

    plans: list[str] = []

    def answer(body: dict) -> str:
        prompt = "\n".join(str(m.get("content")) for m in body["messages"])
        if "to sum up the conversation in" in prompt:
            return f"<response><summary>{bullets}</summary></response>"
        if "Write the next turn of" not in prompt:
            return "<response><thought>fine</thought></response>"  # reflection
        plans.append(prompt)
        if len(plans) == 3:  # "tl;dr"
            return "<response><thought>ok</thought><actions>SUMMARIZE_CONVERSATION</actions></response>"
        return "<response><thought>ok</thought><actions>REPLY</actions><text>Noted.</text></response>"

    async with FakeOpenAIServer() as server:
        environ = {"OPENAI_API_KEY": "sk-e2e-key-1234", "OPENAI_BASE_URL": server.url}
        iris = load_character(tmp_path / "iris.json", environ=environ)
        server.script_chat(answer)
        lines = ["the tea is cold", "the cake is late", "tl;dr"]

        async def read() -> str | None:
            return lines.pop(0) if lines else None

        output = io.StringIO()
        assert await chat(settings, iris, environ, user="sam", output=output, read_line=read) == 0
    name = f"summary-console-with-sam-{time.strftime('%Y-%m-%d', time.gmtime())}.md"
    covers = "Summary of the conversation between us (4 messages)"  # a private chat: all of it
    assert output.getvalue().splitlines()[3:] == [
        f"Iris: {covers}: it is long, so here it is as a file, {name}. [file: {name}, text/markdown]",
        f"--- {name} ---",
        f"{covers}:",
        "",
        *bullets.strip().splitlines(),
        f"--- end of {name} ---",
    ]
