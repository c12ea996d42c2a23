"""What the daemon's tests with MCP tools share: a character file with the weather MCP server of
tests/fakes (tests/fakes/mcp_server.py, started by the daemon over stdio), on the fake Telegram, the
fake Discord or the console only, and the wait for the server to be up."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from ..fakes.openai_server import ToolCalls
from ..platforms.discord.scene import until
from .test_service import TOKENS, Service

__all__ = [
    "asks_the_weather",
    "on_discord",
    "on_telegram",
    "tool_results",
    "tools_offered",
    "weather_server",
    "with_tools",
]

ROOT = Path(__file__).resolve().parents[2]


def weather_server(*args: str) -> dict[str, Any]:
    """A character's ``mcp`` settings: the weather MCP server of tests/fakes, started by the
    daemon over stdio with ``args``."""
    server = {"type": "stdio", "command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", *args]}
    return {"servers": {"weather": {**server, "cwd": str(ROOT)}}}


def with_tools(s: Service, name: str, settings: dict[str, Any], *server_args: str, platform: str = "") -> None:
    """``name`` on ``platform`` (its plugin and ``settings``; none: the console only), with the
    weather MCP server of tests/fakes over stdio, started with ``server_args``."""
    plugins = [f"@elizaos/plugin-{platform}"] if platform else []
    (s.dir / "characters" / f"{name.lower()}.json").write_text(
        json.dumps(
            {
                "name": name,
                "bio": [f"{name} answers questions about the weather."],
                "plugins": [*plugins, "@elizaos/plugin-openai", "@elizaos/plugin-mcp"],
                "settings": {**settings, "mcp": weather_server(*server_args)},
            }
        )
    )


def on_telegram(s: Service, name: str, *server_args: str) -> None:
    settings = {"TELEGRAM_API_ROOT": s.telegram.url, "TELEGRAM_POLL_TIMEOUT_S": "1"}
    secrets = {"TELEGRAM_BOT_TOKEN": TOKENS[name]}
    with_tools(s, name, {"secrets": secrets, **settings}, *server_args, platform="telegram")


def on_discord(s: Service, name: str, token: str, api_base: str, *server_args: str) -> None:
    settings = {"DISCORD_API_BASE": api_base, "DISCORD_GUILD_READY_TIMEOUT_S": "0.05"}
    with_tools(s, name, {"secrets": {"DISCORD_API_TOKEN": token}, **settings}, *server_args, platform="discord")


async def tools_offered(s: Service) -> None:
    """Until the weather server is up: the daemon is ready without it and offers its tools once
    it has connected (in the background), which a loaded machine makes later than READY."""
    await until(lambda: any("mcp server weather " in line and " is up: " in line for line in s.logs().splitlines()), 60)


def tool_results(body: dict[str, Any]) -> list[str]:
    """What the tools said, in the results a chat request gives the model (each marked as
    untrusted, in a ``<tool_result>`` section)."""
    results = [str(m["content"]) for m in body["messages"] if m.get("role") == "tool"]
    return [re.sub(r"^<tool_result[^>]*>\s*|\s*</tool_result>$", "", result) for result in results]


def asks_the_weather(body: dict[str, Any]) -> Any:
    """Asked with tools, the model calls the weather tool; given its result, it answers with it."""
    results = tool_results(body)
    if results:
        return "Here is what I found: " + " ".join(results)
    if "tools" in body:
        names = [t["function"]["name"] for t in body["tools"]]
        assert "weather__weather" in names, names
        return ToolCalls((("weather__weather", {"city": "Oslo"}),))
    return "<response><thought>fine</thought><facts></facts><relationships></relationships></response>"
