"""A character that uses a tool, end to end: the real ``troupe start`` on the fake Telegram Bot
API, the real MCP SDK talking to a real MCP server (tests/fakes/mcp_server.py, started over stdio
by the daemon), and the fake OpenAI-compatible API calling that server's tool. The answer uses
what the tool returned, and ``troupe why`` shows the call."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..fakes.openai_server import ToolCalls
from .test_service import TOKENS, Service, service

__all__ = ["service"]  # the fixture, imported to be used here

ROOT = Path(__file__).resolve().parents[2]


def _with_tools(s: Service, name: str) -> None:
    """``name`` on Telegram, with the weather MCP server of tests/fakes over stdio."""
    (s.dir / "characters" / f"{name.lower()}.json").write_text(
        json.dumps(
            {
                "name": name,
                "bio": [f"{name} answers questions about the weather."],
                "plugins": ["@elizaos/plugin-telegram", "@elizaos/plugin-openai", "@elizaos/plugin-mcp"],
                "settings": {
                    "secrets": {"TELEGRAM_BOT_TOKEN": TOKENS[name]},
                    "TELEGRAM_API_ROOT": s.telegram.url,
                    "TELEGRAM_POLL_TIMEOUT_S": "1",
                    "mcp": {
                        "servers": {
                            "weather": {
                                "type": "stdio",
                                "command": sys.executable,
                                "args": ["-m", "tests.fakes.mcp_server"],
                                "cwd": str(ROOT),
                            }
                        }
                    },
                },
            }
        )
    )


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
    _with_tools(s, "Ada")
    await s.start()
    await s.notify.wait("READY", timeout=60)

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
