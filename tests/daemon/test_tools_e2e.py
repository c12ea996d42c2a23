"""A character that uses a tool, end to end: the real ``troupe start`` on the fake Telegram Bot
API and on the fake Discord (REST and gateway), the real MCP SDK talking to a real MCP server
(tests/fakes/mcp_server.py, started over stdio by the daemon), and the fake OpenAI-compatible API
calling that server's tool. The answer uses what the tool returned, and ``troupe why`` shows the
call."""

from __future__ import annotations

import signal

from ..fakes.discord_server import FakeDiscord
from .test_service import Service, service
from .tools_run import asks_the_weather, on_discord, on_telegram, tools_offered

__all__ = ["service"]  # the fixture, imported to be used here


async def test_a_telegram_question_is_answered_with_an_mcp_tools_result(service: Service) -> None:
    s = service
    s.openai.script_chat(asks_the_weather)
    on_telegram(s, "Ada")
    await s.start()
    await s.notify.wait("READY", timeout=60)
    await tools_offered(s)

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
    s.openai.script_chat(asks_the_weather)
    async with FakeDiscord() as discord:
        ada = discord.add_bot("token-ada", "Ada")
        sam = discord.add_user("sam", global_name="Sam")
        guild = discord.add_guild("Writers", owner=sam, members=[ada])
        general = discord.add_channel(guild, "general")
        on_discord(s, "Ada", "token-ada", discord.api_base)
        await s.start()
        await s.notify.wait("READY", timeout=60)
        await discord.wait_connected(ada, timeout=60)
        await tools_offered(s)

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
