"""``troupe chat`` in a real pseudo-terminal, as a person types into it: the real command against
the fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from subprocess import PIPE

import pytest

from bot.store import Database

from .fakes.openai_server import Fail, FakeOpenAIServer
from .terminal import CTRL_C, CTRL_D, LEFT, UP, Terminal

TROUPE = str(Path(sys.executable).with_name("troupe"))


def plan(text: str) -> str:
    return f"<response><thought>ok</thought><actions>REPLY</actions><text>{text}</text></response>"


async def said(tmp_path: Path) -> list[str]:
    """What the person said, as the character stored it, oldest first."""
    async with Database(tmp_path / "data" / "troupe.db") as db:
        rows = await db.fetchall(
            "SELECT content FROM memories WHERE type = 'messages' AND entity_id != agent_id ORDER BY seq"
        )
    return [json.loads(row[0])["text"] for row in rows]


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        fake.script_chat(lambda body: plan("Noted.") if body["model"] == "gpt-4o" else "<response></response>")
        yield fake


@pytest.fixture
def chat_env(tmp_path: Path, server: FakeOpenAIServer) -> dict[str, str]:
    character = tmp_path / "iris.json"
    character.write_text(json.dumps({"name": "Iris", "bio": "Iris helps.", "plugins": ["openai"]}))
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "TERM": "xterm",
        "LANG": "C.UTF-8",
        "OPENAI_API_KEY": "sk-terminal-test",
        "OPENAI_BASE_URL": server.url,
        "TROUPE_DATA_DIR": str(tmp_path / "data"),
    }


def chat(tmp_path: Path, env: dict[str, str]) -> Terminal:
    return Terminal([TROUPE, "chat", str(tmp_path / "iris.json"), "--as", "alex"], env=env, cwd=tmp_path)


async def test_arrow_keys_edit_the_line_and_recall_history_across_sessions(
    tmp_path: Path, chat_env: dict[str, str], server: FakeOpenAIServer
) -> None:
    async with chat(tmp_path, chat_env) as term:
        at = await term.expect("> ")
        await term.type(b"helo" + LEFT + b"l\r")  # a typo mended with the left arrow
        at = await term.expect("> ", start=await term.expect("Iris: Noted.", start=at))
        await term.type(UP + b"\r")  # the previous line again
        await term.expect("> ", start=await term.expect("Iris: Noted.", start=at))
        await term.press(CTRL_D)
        assert await term.wait_exit() == 0
    assert await said(tmp_path) == ["hello", "hello"]

    async with chat(tmp_path, chat_env) as term:  # a new session remembers what was typed
        at = await term.expect("> ")
        await term.type(UP + b" again\r")
        await term.expect("> ", start=await term.expect("Iris: Noted.", start=at))
        await term.press(CTRL_D)
        assert await term.wait_exit() == 0
    assert (await said(tmp_path))[-1] == "hello again"
    history = tmp_path / "data" / "chat_history"
    assert history.is_file() and oct(history.stat().st_mode & 0o777) == oct(0o600)


async def test_a_pasted_line_of_10000_characters_arrives_whole(
    tmp_path: Path, chat_env: dict[str, str], server: FakeOpenAIServer
) -> None:
    long_line = "".join(f"{i:05d}," for i in range(2000))[:10_000]
    assert len(long_line) == 10_000
    async with chat(tmp_path, chat_env) as term:
        at = await term.expect("> ")
        await term.type(long_line + "\r")
        await term.drained()
        await term.expect("> ", start=await term.expect("Iris: Noted.", start=at), timeout=30)
        await term.press(CTRL_D)
        assert await term.wait_exit() == 0
    assert await said(tmp_path) == [long_line]


async def press_ctrl_c_and_see_it_exit(term: Terminal, *, within: float) -> None:
    started = time.monotonic()
    await term.press(CTRL_C)
    status = await term.wait_exit(timeout=60)
    took = time.monotonic() - started
    assert status == 130, term.screen_text()  # what a shell reports for a command ended by Ctrl-C
    assert took < within, f"Ctrl-C took {took:.1f} s"
    assert "Traceback" not in term.screen_text()


async def test_ctrl_c_at_the_idle_prompt_exits_at_once(tmp_path: Path, chat_env: dict[str, str]) -> None:
    async with chat(tmp_path, chat_env) as term:
        await term.expect("> ")
        await press_ctrl_c_and_see_it_exit(term, within=3)


async def test_ctrl_d_ends_the_conversation_on_a_new_line(tmp_path: Path, chat_env: dict[str, str]) -> None:
    async with chat(tmp_path, chat_env) as term:
        at = await term.expect("> ")
        await term.press(CTRL_D)
        assert await term.wait_exit() == 0
    # The prompt's line is ended, so the shell's next prompt starts on a line of its own.
    assert term.screen_text()[at:].startswith("\n")


async def test_a_model_error_shows_as_one_line_in_the_conversation(
    tmp_path: Path, chat_env: dict[str, str], server: FakeOpenAIServer
) -> None:
    server.script_chat(Fail(500, message="the model is on fire"))
    async with chat(tmp_path, chat_env | {"OPENAI_MAX_RETRIES": "0"}) as term:
        at = await term.expect("> ")
        await term.type("hello\r")
        end = await term.expect("> ", start=at + 1)
        await term.press(CTRL_D)
        assert await term.wait_exit() == 0
    turn = [line for line in term.screen_text()[at:end].splitlines() if line.strip() and line.strip() != ">"]
    assert turn[0] == "hello"
    assert len(turn) == 2, turn
    assert re.fullmatch(r"! Iris could not answer: .*the model is on fire.*", turn[1]), turn[1]
    assert "WARNING" not in term.screen_text() and "Traceback" not in term.screen_text()


async def test_ctrl_c_while_the_character_answers_exits_at_once_and_keeps_the_message(
    tmp_path: Path, chat_env: dict[str, str]
) -> None:
    async with FakeOpenAIServer(latency=60) as slow, chat(tmp_path, chat_env | {"OPENAI_BASE_URL": slow.url}) as term:
        # a model that takes a minute to answer
        await term.expect("> ")
        await term.type("are you there?\r")
        await slow.wait_for(lambda: slow.requests_for("chat"), timeout=60)
        await press_ctrl_c_and_see_it_exit(term, within=5)
    assert await said(tmp_path) == ["are you there?"]


async def test_lines_from_a_pipe_are_answered(tmp_path: Path, chat_env: dict[str, str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        TROUPE,
        "chat",
        str(tmp_path / "iris.json"),
        "--as",
        "alex",
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        env=chat_env,
        cwd=tmp_path,
    )
    out, err = await asyncio.wait_for(proc.communicate(b"hello\nbye\n"), 60)
    assert proc.returncode == 0, err
    assert out.decode().count("Iris: Noted.") == 2
    # No prompt to run into what is printed (or into log lines): nobody is typing.
    assert out.decode().splitlines() == [
        "Talking to Iris. Type /quit or press Ctrl-D to leave.",
        "Iris: Noted.",
        "Iris: Noted.",
    ]
    assert err == b""


async def test_a_question_a_tool_answers_is_answered_with_it_from_the_first_line(
    tmp_path: Path, chat_env: dict[str, str], server: FakeOpenAIServer
) -> None:
    from .daemon.tools_run import asks_the_weather, weather_server

    server.script_chat(asks_the_weather)
    character = tmp_path / "wren.json"
    body = {"name": "Wren", "bio": "Wren knows the weather.", "plugins": ["openai", "mcp"]}
    character.write_text(json.dumps({**body, "settings": {"mcp": weather_server()}}))
    proc = await asyncio.create_subprocess_exec(
        TROUPE, "chat", str(character), stdin=PIPE, stdout=PIPE, stderr=PIPE, env=chat_env, cwd=tmp_path
    )
    # Piped at once: the first line comes before a slow server would be up, unless chat waits for it.
    out, err = await asyncio.wait_for(proc.communicate(b"what's the weather in Oslo?\n"), 90)
    assert proc.returncode == 0, err
    assert "Wren: Here is what I found: sunny in Oslo, 21 °C" in out.decode(), (out, err)
