"""End to end: two characters in the terminal, the real openai client against a local fake,
a follow/mute/unmute round trip, a restart, and state and memory still there."""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from pathlib import Path

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.chat import chat
from bot.kernel.types import RoomState
from bot.store import Database
from platforms.console import ConsoleAdapter  # noqa: F401  (the adapter chat() drives)

from .fakes.openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[1]


def reply(text: str, actions: str = "REPLY") -> str:
    return f"<response><thought>ok</thought><actions>{actions}</actions><text>{text}</text></response>"


def lines(*items: str) -> Callable:
    queue = list(items)

    async def read() -> str | None:
        return queue.pop(0) if queue else None

    return read


async def test_two_characters_follow_mute_unmute_and_restart(tmp_path: Path) -> None:
    for name in ("iris", "wren"):
        shutil.copy(REPO / "characters" / f"{name}.json", tmp_path / f"{name}.json")
    settings = DaemonSettings(db_path=tmp_path / "troupe.db")
    async with FakeOpenAIServer() as server:
        environ = {"OPENAI_API_KEY": "sk-e2e-key-1234", "OPENAI_BASE_URL": server.url}
        iris = load_character(tmp_path / "iris.json", environ=environ)
        wren = load_character(tmp_path / "wren.json", environ=environ)
        plans = [
            reply("Hello! How can I help?"),
            reply("I'll follow along.", "REPLY,FOLLOW_ROOM"),
            reply("Going quiet.", "REPLY,MUTE_ROOM"),
            reply("Oh, a visitor! Look up tonight!"),  # Wren
            reply("I'm back.", "REPLY,UNMUTE_ROOM"),  # Iris, after the restart
            reply("Glad to help."),
        ]
        reflection = (
            "<response><thought>t</thought><facts><fact><claim>Sam asked Iris to be quiet once</claim>"
            "<type>fact</type><in_bio>false</in_bio><already_known>false</already_known></fact></facts>"
            "<relationships></relationships></response>"
        )
        # The large model plans replies; the small one (here only reflection: DMs skip the gate).
        server.script_chat(lambda body: plans.pop(0) if body["model"] == "gpt-4o" else reflection)

        first = io.StringIO()
        assert (
            await chat(
                settings,
                iris,
                environ,
                user="sam",
                output=first,
                read_line=lines(
                    "Hi Iris",
                    "Iris, please follow this conversation",
                    "Iris, be quiet for a while",
                    "anyone there?",
                ),
            )
            == 0
        )
        wren_out = io.StringIO()
        assert await chat(settings, wren, environ, user="sam", output=wren_out, read_line=lines("Hello Wren")) == 0

        assert iris.character is not None
        async with Database(settings.database) as db:
            store = db.for_agent(iris.character.agent_id)
            room = (await store.get_rooms_by_world((await store.get_all_worlds())[0].id))[0]
            assert await store.get_participant_state(room.id, store.agent_id) is RoomState.MUTED

        # "Restart": a new process would open the same file; state and memory are still there.
        second = io.StringIO()
        assert (
            await chat(
                settings,
                iris,
                environ,
                user="sam",
                output=second,
                read_line=lines(
                    "still there?",
                    "Iris, you can talk again",
                    "thanks",
                ),
            )
            == 0
        )

    assert first.getvalue().splitlines()[1:] == [
        "Iris: Hello! How can I help?",
        "Iris: I'll follow along.",
        "Iris: Going quiet.",
    ]
    assert second.getvalue().splitlines()[1:] == ["Iris: I'm back.", "Iris: Glad to help."]
    assert wren_out.getvalue().splitlines()[1:] == ["Wren: Oh, a visitor! Look up tonight!"]
    chats = server.requests_for("chat")
    # Six planning calls (the muted lines cost no model call at all), and one reflection on the
    # small model once more than 32/4 new messages had come in.
    assert sorted(r.json["model"] for r in chats) == ["gpt-4o"] * 6 + ["gpt-4o-mini"]
    assert {r.auth_suffix for r in chats} == {"1234"}
    assert all("sk-e2e-key-1234" not in str(r.json) for r in chats)  # keys never reach prompts

    async with Database(settings.database) as db:
        store = db.for_agent(iris.character.agent_id)
        room = (await store.get_rooms_by_world((await store.get_all_worlds())[0].id))[0]
        assert await store.get_participant_state(room.id, store.agent_id) is None
        said = [
            m.content.text
            for m in reversed(await store.get_memories(table="messages", room_id=room.id))
            if m.content.text
        ]
        assert said == [
            "Hi Iris",
            "Hello! How can I help?",
            "Iris, please follow this conversation",
            "I'll follow along.",
            "Iris, be quiet for a while",
            "Going quiet.",
            "anyone there?",
            "still there?",
            "Iris, you can talk again",
            "I'm back.",
            "thanks",
            "Glad to help.",
        ]
        facts = await store.get_memories(table="facts")
        assert [f.content.text for f in facts] == ["Sam asked Iris to be quiet once"]
        assert facts[0].embedding is not None and len(facts[0].embedding) == 1536
        assert wren.character is not None
        wren_store = db.for_agent(wren.character.agent_id)
        assert [m.content.text for m in await wren_store.get_memories(table="messages") if m.content.text] == [
            "Oh, a visitor! Look up tonight!",
            "Hello Wren",
        ]
