"""A character that uses a tool, end to end: the real ``troupe start`` on the fake Telegram Bot
API and on the fake Discord (REST and gateway), the real MCP SDK talking to a real MCP server
(tests/fakes/mcp_server.py, started over stdio by the daemon), and the fake OpenAI-compatible API
calling that server's tool. The answer uses what the tool returned, and ``troupe why`` shows the
call."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

from ..fakes.discord_server import FakeDiscord
from ..fakes.openai_server import ToolCalls
from ..platforms.discord.scene import until
from .test_service import TOKENS, Service, service

__all__ = ["service"]  # the fixture, imported to be used here

ROOT = Path(__file__).resolve().parents[2]


#: The weather MCP server of tests/fakes, started by the daemon over stdio.
MCP = {
    "servers": {
        "weather": {
            "type": "stdio",
            "command": sys.executable,
            "args": ["-m", "tests.fakes.mcp_server"],
            "cwd": str(ROOT),
        }
    }
}


def _with_tools(s: Service, name: str, platform: str, settings: dict[str, Any]) -> None:
    """``name`` on ``platform`` (its plugin and ``settings``), with the weather MCP server of
    tests/fakes over stdio."""
    (s.dir / "characters" / f"{name.lower()}.json").write_text(
        json.dumps(
            {
                "name": name,
                "bio": [f"{name} answers questions about the weather."],
                "plugins": [f"@elizaos/plugin-{platform}", "@elizaos/plugin-openai", "@elizaos/plugin-mcp"],
                "settings": {**settings, "mcp": MCP},
            }
        )
    )


def _on_telegram(s: Service, name: str) -> None:
    settings = {"TELEGRAM_API_ROOT": s.telegram.url, "TELEGRAM_POLL_TIMEOUT_S": "1"}
    _with_tools(s, name, "telegram", {"secrets": {"TELEGRAM_BOT_TOKEN": TOKENS[name]}, **settings})


def _on_discord(s: Service, name: str, token: str, api_base: str) -> None:
    settings = {"DISCORD_API_BASE": api_base, "DISCORD_GUILD_READY_TIMEOUT_S": "0.05"}
    _with_tools(s, name, "discord", {"secrets": {"DISCORD_API_TOKEN": token}, **settings})


async def _tools_offered(s: Service) -> None:
    """Until the weather server is up: the daemon is ready without it and offers its tools once
    it has connected (in the background), which a loaded machine makes later than READY."""
    await until(lambda: any("mcp server weather " in line and " is up: " in line for line in s.logs().splitlines()), 60)


def _model(body: dict[str, Any]) -> Any:
    """Asked with tools, the model calls the weather tool; given its result, it answers with it."""
    results = [m["content"] for m in body["messages"] if m.get("role") == "tool"]
    if results:
        return "Here is what I found: " + " ".join(str(r) for r in results)
    if "tools" in body:
        names = [t["function"]["name"] for t in body["tools"]]
        assert "weather__weather" in names, names
        return ToolCalls((("weather__weather", {"city": "Oslo"}),))
    return "<response><thought>fine</thought><facts></facts><relationships></relationships></response>"


async def test_a_telegram_question_is_answered_with_an_mcp_tools_result(service: Service) -> None:
    s = service
    s.openai.script_chat(_model)
    _on_telegram(s, "Ada")
    await s.start()
    await s.notify.wait("READY", timeout=60)
    await _tools_offered(s)

    sam = s.telegram.add_user("Sam", username="sam")
    chat = s.telegram.private(sam, s.bots["Ada"])
    said = await s.telegram.user_says(sam, chat, "what's the weather in Oslo?")
    sent = await s.telegram.wait_for_sent(s.bots["Ada"], 1, timeout=60)
    assert "sunny in Oslo, 21 °C" in sent[0]["text"]

    # The tool's result went back to the model once, as a tool message.
    asked = [r.json for r in s.openai.requests_for("chat") if any(m.get("role") == "tool" for m in r.json["messages"])]
    assert len(asked) == 1
    # The message's trace names the call: troupe why, by the Telegram message's own id.
    code, out, err = await s.cli("why", str(said["message_id"]))
    assert code == 0, err
    tool_lines = [line for line in out.splitlines() if line.strip().startswith("tool")]
    assert len(tool_lines) == 1 and "weather__weather" in tool_lines[0] and "Oslo" in tool_lines[0], out


async def test_a_discord_question_is_answered_with_an_mcp_tools_result(service: Service) -> None:
    s = service
    s.openai.script_chat(_model)
    async with FakeDiscord() as discord:
        ada = discord.add_bot("token-ada", "Ada")
        sam = discord.add_user("sam", global_name="Sam")
        guild = discord.add_guild("Writers", owner=sam, members=[ada])
        general = discord.add_channel(guild, "general")
        _on_discord(s, "Ada", "token-ada", discord.api_base)
        await s.start()
        await s.notify.wait("READY", timeout=60)
        await discord.wait_connected(ada, timeout=60)
        await _tools_offered(s)

        said = await discord.user_says(sam, general, f"{ada.mention} what's the weather in Oslo?")
        sent = await discord.wait_for_sent(ada, 1, timeout=60)
        assert "sunny in Oslo, 21 °C" in sent[0].content and sent[0].reference is said

        # The tool's result went back to the model once, as a tool message.
        asked = [
            r.json for r in s.openai.requests_for("chat") if any(m.get("role") == "tool" for m in r.json["messages"])
        ]
        assert len(asked) == 1
        # The message's trace names the call: troupe why, by the Discord message's link.
        link = f"https://discord.com/channels/{guild.id}/{general.id}/{said.id}"
        code, out, err = await s.cli("why", link)
        assert code == 0, err
        tool_lines = [line for line in out.splitlines() if line.strip().startswith("tool")]
        assert len(tool_lines) == 1 and "weather__weather" in tool_lines[0] and "Oslo" in tool_lines[0], out
        # Stopped while the fake Discord still answers, so the daemon leaves cleanly.
        s.signal(signal.SIGTERM)
        assert await s.exit_code(60) == 0
