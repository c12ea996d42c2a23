"""A tool that changes things, end to end: the real ``troupe start`` on the fake Telegram and the
fake Discord, the weather MCP server of tests/fakes (over stdio) whose ``delete`` tool writes in a
journal each time it runs, and the fake OpenAI-compatible API calling it. The reply says the call
waits for a yes and the question under it carries Yes and No buttons; Yes pressed runs the call on
the server once, however often it is pressed, the question shows "✓ chosen: Yes" in place of its
buttons and the person is told what came of it in a new message; No runs nothing, and the question
says so."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..fakes.discord_server import FakeDiscord
from ..fakes.openai_server import ToolCalls
from ..platforms.discord.scene import until
from .test_service import Service, service
from .tools_run import on_discord, on_telegram, tool_results, tools_offered

__all__ = ["service"]  # the fixture, imported to be used here

_QUESTION = "Shall I go ahead with this?"
_GONE = "That question is no longer open; ask me again."


def _model(body: dict[str, Any]) -> Any:
    """Asked with tools to delete a file, the model calls ``delete`` on the path the person gave
    last; given a result (the call waits, or it ran), it answers with it."""
    results = tool_results(body)
    if results:
        return "Here is what I found: " + " ".join(results)
    if "tools" in body:
        prompt = "\n".join(str(m.get("content")) for m in body["messages"])
        return ToolCalls((("weather__delete", {"path": re.findall(r"please delete (\S+)", prompt)[-1]}),))
    return "<response><thought>fine</thought><facts></facts><relationships></relationships></response>"


def _ran(journal: Path) -> list[str]:
    """The paths ``delete`` ran for, on the MCP server, in order."""
    return journal.read_text().splitlines() if journal.exists() else []


def _keys(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The buttons of a Telegram message's inline keyboard, row after row."""
    return [button for row in message["reply_markup"]["inline_keyboard"] for button in row]


def _asks_to_confirm(reply: str, question: str, path: str) -> None:
    assert "not run yet" in reply and "confirm" in reply, reply
    assert question == f'{_QUESTION}\n- weather__delete {{"path": "{path}"}}', question


@dataclass
class _OnTelegram:
    """Ada on the fake Telegram with the weather server (``delete`` writing in ``journal``), and
    Sam in a private chat with her."""

    journal: Path
    ada: Any
    sam: Any
    chat: Any


async def _on_telegram(s: Service) -> _OnTelegram:
    s.openai.script_chat(_model)
    journal = s.dir / "journal"
    on_telegram(s, "Ada", "--journal", str(journal))
    await s.start()
    await s.notify.wait("READY", timeout=60)
    await tools_offered(s)
    ada = s.bots["Ada"]
    sam = s.telegram.add_user("Sam", username="sam")
    return _OnTelegram(journal, ada, sam, s.telegram.private(sam, ada))


async def test_on_telegram_yes_runs_a_tool_that_changes_things_once_and_no_runs_nothing(service: Service) -> None:
    s = service
    t = await _on_telegram(s)
    journal, ada, sam, chat = t.journal, t.ada, t.sam, t.chat

    said = await s.telegram.user_says(sam, chat, "please delete /srv/notes/old.md")
    reply, question = await s.telegram.wait_for_sent(ada, 2, timeout=60)
    _asks_to_confirm(reply["text"], question["text"], "/srv/notes/old.md")
    yes, no = _keys(question)
    assert [yes["text"], no["text"]] == ["Yes: weather__delete", "No: weather__delete"]
    assert _ran(journal) == []  # not before the yes
    # Its trace says the call waits for the yes, not that it failed.
    code, out, err = await s.cli("why", str(said["message_id"]))
    assert code == 0, err
    waits = 'weather__delete {"path": "/srv/notes/old.md"}, not run: waiting for the person to press yes'
    assert [line.split(None, 1)[1] for line in out.splitlines() if line.strip().startswith("tool")] == [waits], out

    # Yes, pressed twice at once: the call runs once, and the second press is told it is done with.
    presses = [await s.telegram.user_presses(sam, question["message"], yes["callback_data"]) for _ in range(2)]
    answers = [m["text"] for m in (await s.telegram.wait_for_sent(ada, 4, timeout=60))[2:]]
    assert sorted(answers) == sorted(["Here is what I found: deleted /srv/notes/old.md", _GONE]), answers
    assert _ran(journal) == ["/srv/notes/old.md"]
    assert all(s.telegram.answered(query) for query in presses)
    # The question shows the answer in place of its buttons; the result is a new message.
    (edit,) = ada.edits
    assert edit["message_id"] == question["message"]["message_id"] and "reply_markup" not in edit["message"]
    assert edit["text"] == question["text"] + "\n\n✓ chosen: Yes (weather__delete)"
    # The press that ran it has the call in its trace (troupe why lists the room's messages).
    room = re.search(r" room (\S+),", out)
    assert room, out
    code, listed, err = await s.cli("why", room.group(1))
    assert code == 0, err
    (ran,) = re.findall(r"press of 'tool:\w+:yes': done  \[(\S+)\]", listed)
    code, out, err = await s.cli("why", ran)
    assert 'tool      weather__delete {"path": "/srv/notes/old.md"}, ' in out and " ms, ok: deleted" in out, out

    # No: nothing runs.
    await s.telegram.user_says(sam, chat, "please delete /srv/notes/new.md")
    reply, question = (await s.telegram.wait_for_sent(ada, 6, timeout=60))[4:]
    _asks_to_confirm(reply["text"], question["text"], "/srv/notes/new.md")
    _, no = _keys(question)
    await s.telegram.user_presses(sam, question["message"], no["callback_data"])
    await s.telegram.wait_for(lambda: len(ada.edits) == 2, 60, "the question answered no")
    assert ada.edits[-1]["text"] == question["text"] + "\n\n✓ chosen: No (weather__delete not run)"
    assert len(ada.sent) == 6 and _ran(journal) == ["/srv/notes/old.md"]  # said on the question alone


async def test_a_question_asked_before_a_kill_9_is_answered_after_the_restart(service: Service) -> None:
    s = service
    t = await _on_telegram(s)
    journal, ada, sam, chat = t.journal, t.ada, t.sam, t.chat
    await s.telegram.user_says(sam, chat, "please delete /srv/notes/old.md")
    _, question = await s.telegram.wait_for_sent(ada, 2, timeout=60)
    yes, _ = _keys(question)

    s.signal(signal.SIGKILL)
    await s.exit_code(60)
    await s.start()
    await s.notify.wait("READY", count=2, timeout=60)
    ups = lambda: [line for line in s.logs().splitlines() if "mcp server weather " in line and " is up: " in line]  # noqa: E731
    await until(lambda: len(ups()) >= 2, 60)  # the second daemon's session
    await s.telegram.user_presses(sam, question["message"], yes["callback_data"])
    (answer,) = (await s.telegram.wait_for_sent(ada, 3, timeout=60))[2:]
    assert answer["text"] == "Here is what I found: deleted /srv/notes/old.md"
    assert _ran(journal) == ["/srv/notes/old.md"]


async def test_on_discord_yes_runs_a_tool_that_changes_things_once(service: Service) -> None:
    s = service
    s.openai.script_chat(_model)
    journal = s.dir / "journal"
    async with FakeDiscord() as discord:
        ada = discord.add_bot("token-ada", "Ada")
        sam = discord.add_user("sam", global_name="Sam")
        guild = discord.add_guild("Writers", owner=sam, members=[ada])
        general = discord.add_channel(guild, "general")
        on_discord(s, "Ada", "token-ada", discord.api_base, "--journal", str(journal))
        await s.start()
        await s.notify.wait("READY", timeout=60)
        await discord.wait_connected(ada, timeout=60)
        await tools_offered(s)

        await discord.user_says(sam, general, f"{ada.mention} please delete /srv/notes/old.md")
        reply, question = await discord.wait_for_sent(ada, 2, timeout=60)
        _asks_to_confirm(reply.content, question.content, "/srv/notes/old.md")
        yes, no = [button for row in question.components for button in row["components"]]
        assert [yes["label"], no["label"]] == ["Yes: weather__delete", "No: weather__delete"]
        assert _ran(journal) == []

        clicks = [await discord.user_clicks(sam, question, yes["custom_id"]) for _ in range(2)]
        answers = [m.content for m in (await discord.wait_for_sent(ada, 4, timeout=60))[2:]]
        assert sorted(answers) == sorted(["Here is what I found: deleted /srv/notes/old.md", _GONE]), answers
        assert _ran(journal) == ["/srv/notes/old.md"]
        assert all(click.responses for click in clicks)  # each press acknowledged
        await until(lambda: ada.edits)  # the question shows the answer, its buttons gone
        assert question.content.endswith("\n\n✓ chosen: Yes (weather__delete)") and not question.components
        # Stopped while the fake Discord still answers, so the daemon leaves cleanly.
        s.signal(signal.SIGTERM)
        assert await s.exit_code(60) == 0
