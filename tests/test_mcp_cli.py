"""``troupe mcp``: a character's own tools served over MCP's stdio transport, to the SDK's own
client, to a raw pipe and to another troupe character; and the ways it refuses to start."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from bot.kernel.errors import EXIT_CONFIG
from bot.store import Database

from .fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.xdist_group("mcp")

TROUPE = str(Path(sys.executable).with_name("troupe"))
FACT = "Ada's favourite colour is teal, the colour of the harbour at dawn."
LEARNED = "The lighthouse keeper of Skerry Point is called Brannoc Vey and keeps goats."
SECRET_KEY = "sk-mcp-test-0123456789"


@pytest.fixture
async def openai() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def env(tmp_path: Path, openai: FakeOpenAIServer) -> dict[str, str]:
    """Ada (a fact, and a knowledge folder to learn into) and Nell (no knowledge), with the
    daemon's database already there; the environment ``troupe mcp`` runs in."""
    (tmp_path / "knowledge").mkdir()
    (tmp_path / "knowledge" / "harbour.md").write_text("# Harbour\n\nThe harbour master rings the bell at noon.\n")
    character = {"name": "Ada", "bio": "Ada knows the coast.", "plugins": ["openai"]}
    (tmp_path / "ada.json").write_text(json.dumps(character | {"knowledge": [FACT, {"directory": "knowledge"}]}))
    (tmp_path / "nell.json").write_text(
        json.dumps({"name": "Nell", "bio": "Nell knows nothing.", "plugins": ["openai"]})
    )
    (tmp_path / "broken.json").write_text('{"name": "Ada", ')
    (tmp_path / "data").mkdir()
    async with Database(tmp_path / "data" / "troupe.db"):
        pass  # the daemon's database: troupe mcp opens it, never makes one
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "OPENAI_API_KEY": SECRET_KEY,
        "OPENAI_BASE_URL": openai.url,
        "TROUPE_DATA_DIR": str(tmp_path / "data"),
    }


@asynccontextmanager
async def session(tmp_path: Path, env: dict[str, str], *args: str) -> AsyncIterator[ClientSession]:
    """The SDK's stdio client, initialised, on ``troupe mcp ARGS``; its stderr in tmp_path/stderr.txt."""
    params = StdioServerParameters(command=TROUPE, args=["mcp", *args], env=env, cwd=tmp_path)
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            async with asyncio.timeout(60):
                await client.initialize()
            yield client


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def call(client: ClientSession, name: str, **arguments: object) -> types.CallToolResult:
    async with asyncio.timeout(60):
        return await client.call_tool(name, arguments)


async def test_serves_the_characters_own_tools(tmp_path: Path, env: dict[str, str]) -> None:
    async with session(tmp_path, env, "ada.json") as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(listed) == {"search_knowledge", "process_knowledge", "read_link"}
        search = listed["search_knowledge"]
        assert search.input_schema["required"] == ["query"] and search.description
        assert search.annotations is not None and search.annotations.read_only_hint is True
        learn = listed["process_knowledge"].annotations
        assert learn is not None and learn.read_only_hint is False and learn.destructive_hint is False

        found = await call(client, "search_knowledge", query="favourite colour")
        assert not found.is_error and "teal" in text_of(found)
        from_folder = await call(client, "search_knowledge", query="harbour master bell")
        assert "rings the bell at noon" in text_of(from_folder)

        learned = await call(client, "process_knowledge", text=LEARNED, title="Skerry Point")
        assert not learned.is_error and "Learned" in text_of(learned)
        files = [p.read_text() for p in (tmp_path / "knowledge").glob("skerry-point-*.md")]
        assert len(files) == 1 and LEARNED in files[0]
        keeper = await call(client, "search_knowledge", query="lighthouse keeper")
        assert "Brannoc Vey" in text_of(keeper)

        no_query = await call(client, "search_knowledge")
        assert no_query.is_error and "'query' is a required property" in text_of(no_query)
        unknown = await call(client, "weather__forecast", city="Oslo")
        assert unknown.is_error and "no tool named 'weather__forecast'" in text_of(unknown)
        private = await call(client, "read_link", url="http://127.0.0.1:9/")
        assert private.is_error and "not read" in text_of(private)
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "[Ada] bot.cli.mcp._command: serving read_link, search_knowledge, process_knowledge over MCP" in stderr
    assert "Traceback" not in stderr and SECRET_KEY not in stderr


async def test_tools_narrows_what_is_served(tmp_path: Path, env: dict[str, str]) -> None:
    async with session(tmp_path, env, "ada.json", "--tools", "search_knowledge") as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["search_knowledge"]
        refused = await call(client, "process_knowledge", text=LEARNED)
        assert refused.is_error and "no tool named 'process_knowledge'" in text_of(refused)
    assert not list((tmp_path / "knowledge").glob("*-*.md"))  # nothing learned


async def exchange(process: asyncio.subprocess.Process, message: dict[str, object]) -> dict[str, object]:
    """Send one JSON-RPC request on the server's stdin; its answer (every line on stdout is one)."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    await process.stdin.drain()
    async with asyncio.timeout(60):
        answer = json.loads(await process.stdout.readline())
    assert answer["id"] == message["id"]
    return dict(answer)


async def start_raw(tmp_path: Path, env: dict[str, str]) -> asyncio.subprocess.Process:
    """``troupe mcp ada.json`` on bare pipes, initialised."""
    process = await asyncio.create_subprocess_exec(
        TROUPE,
        "mcp",
        "ada.json",
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    answer = await exchange(process, init)
    assert answer["result"]["serverInfo"]["name"] == "troupe Ada"  # type: ignore[index]
    assert process.stdin is not None
    process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    return process


async def test_stdout_is_the_protocol_alone_and_end_of_input_ends_it(tmp_path: Path, env: dict[str, str]) -> None:
    process = await start_raw(tmp_path, env)
    listed = await exchange(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert len(listed["result"]["tools"]) == 3  # type: ignore[index]
    assert process.stdin is not None
    process.stdin.close()
    async with asyncio.timeout(60):
        rest, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    assert rest == b""  # nothing but answers on stdout
    assert b"Traceback" not in stderr and b"closed database" in stderr


async def test_sigterm_ends_it_at_once(tmp_path: Path, env: dict[str, str]) -> None:
    process = await start_raw(tmp_path, env)
    process.send_signal(signal.SIGTERM)  # stdin stays open: the client did not leave
    async with asyncio.timeout(30):
        _, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    assert b"stopping (SIGTERM)" in stderr and b"closed database" in stderr
    assert b"Traceback" not in stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["broken.json"], "broken.json: $: invalid JSON at line 1"),
        (["missing.json"], "missing.json: $: no such file; check the path"),
        (["nell.json"], "Nell has no knowledge to serve: list facts, files or folders"),
        (
            ["ada.json", "--tools", "search_knowledge,files__read"],
            "--tools names files__read, which Ada does not offer",
        ),
    ],
)
async def test_bad_input_is_one_line_and_exit_78(
    tmp_path: Path, env: dict[str, str], args: list[str], said: str
) -> None:
    process = await asyncio.to_thread(
        subprocess.run,
        [TROUPE, "mcp", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert process.returncode == EXIT_CONFIG
    assert process.stdout == ""
    last = process.stderr.splitlines()[-1]
    assert last.startswith("troupe mcp: ") and said in last, process.stderr
    assert "Traceback" not in process.stderr


async def test_no_database_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    elsewhere = env | {"TROUPE_DATA_DIR": str(tmp_path / "nowhere")}
    process = await asyncio.to_thread(
        subprocess.run,
        [TROUPE, "mcp", "ada.json"],
        cwd=tmp_path,
        env=elsewhere,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == EXIT_CONFIG
    assert "troupe mcp: no database at" in process.stderr and not (tmp_path / "nowhere").exists()


async def test_a_troupe_character_uses_another_as_its_mcp_server(tmp_path: Path, env: dict[str, str]) -> None:
    """Troupe talking to troupe: Bob's MCP plugin starts ``troupe mcp ada.json`` over stdio."""
    from bot.sdk import ToolCall
    from plugins.mcp._config import McpConfig, ServerConfig, ServerPolicy, Transport
    from plugins.mcp._pool import ServerPool
    from plugins.mcp._toolbox import McpToolbox

    ada = ServerConfig(
        name="ada",
        transport=Transport.STDIO,
        command=TROUPE,
        args=("mcp", "ada.json"),
        env=env,
        cwd=str(tmp_path),
        timeout=60,
    )
    pool = ServerPool()
    try:
        box = McpToolbox("Bob", McpConfig(servers=(ada,), policies={"ada": ServerPolicy()}), [pool.acquire(ada)])
        async with asyncio.timeout(60):
            while not box.tools():
                await asyncio.sleep(0.05)
        specs = {spec.name: spec for spec in box.tools()}
        assert set(specs) == {"ada__search_knowledge", "ada__process_knowledge", "ada__read_link"}
        assert not specs["ada__search_knowledge"].changes_things
        assert specs["ada__process_knowledge"].changes_things  # not read-only: Bob asks before learning
        found = await box.call(ToolCall("c1", "ada__search_knowledge", {"query": "favourite colour"}), timeout=60)
        assert found.ok and "teal" in found.text
        failed = await box.call(ToolCall("c2", "ada__search_knowledge", {"query": ""}), timeout=60)
        assert not failed.ok and "give the words to search" in failed.text
    finally:
        await pool.aclose()


def test_a_tool_that_changes_things_is_destructive_and_secrets_leave_results() -> None:
    from bot.cli.mcp._serving import as_result, as_tool
    from bot.kernel.redact import Redactor
    from bot.kernel.tools import ToolCall, ToolResult, ToolSpec

    schema = {"type": "object", "properties": {}}
    notes = as_tool(ToolSpec("write_note", "Write a note.", schema, source="troupe", changes_things=True))
    assert notes.annotations is not None
    assert notes.annotations.read_only_hint is False and notes.annotations.destructive_hint is True
    secrets = Redactor()
    secrets.add(SECRET_KEY)
    call = ToolCall("c1", "read_link", {})
    failed = as_result(ToolResult(call, f"the server refused key {SECRET_KEY}", ok=False), secrets)
    shown = text_of(failed)
    assert failed.is_error and SECRET_KEY not in shown and "the server refused key" in shown
    assert not as_result(ToolResult(call, "fine")).is_error
