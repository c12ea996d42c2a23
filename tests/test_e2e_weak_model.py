"""End to end with a model that answers the way a small local one does: the prompt's placeholders
copied back, actions it made up, a reply that runs on to its bound. ``troupe chat``'s conversation
with the real openai client against the fake server; what is sent and stored is real text only."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.chat import chat
from bot.store import Database

from .fakes.openai_server import FakeOpenAIServer
from .test_e2e_console import lines
from .test_e2e_console import reply as plan

REPO = Path(__file__).resolve().parents[1]
# What SmolLM2-135M wrote, near enough: the template's example answer, copied.
COPIED = (
    "<response><thought>what Iris is thinking</thought><actions>FIRST_ACTION,SECOND_ACTION</actions>"
    "<providers>PROVIDER_A,PROVIDER_B</providers><text>the message to send</text></response>"
)
RUN_ON = " ".join(f"Sentence number {n} goes on." for n in range(1, 40))


async def test_placeholders_are_never_sent_and_unknown_actions_still_reply(tmp_path: Path) -> None:
    shutil.copy(REPO / "characters" / "iris.json", tmp_path / "iris.json")
    settings = DaemonSettings(db_path=tmp_path / "troupe.db")
    async with FakeOpenAIServer() as server:
        environ = {"OPENAI_API_KEY": "x", "OPENAI_BASE_URL": server.url, "PLAN_MAX_TOKENS": "64"}
        iris = load_character(tmp_path / "iris.json", environ=environ)
        plans = [
            COPIED,  # line 1: nothing but placeholders, asked again
            plan("Hello Sam!", "FIRST_ACTION"),  # … then real text with a made-up action: said
            COPIED,  # line 2: never anything but placeholders: nothing said
            plan("the message to send", "REPLY"),
            plan("The Message to send.", "REPLY,SECOND_ACTION"),
            plan(RUN_ON, "REPLY"),  # line 3: runs on; cut at the bound, said to its last sentence
        ]
        server.script_chat(lambda body: plans.pop(0) if body["model"] == "gpt-4o" else "<response></response>")
        out = io.StringIO()
        said = lines("Hi Iris", "how are you?", "tell me more")
        assert await chat(settings, iris, environ, user="sam", output=out, read_line=said) == 0

    # The fake counts words as tokens: 64 of them end inside the 13th sentence.
    cut = " ".join(f"Sentence number {n} goes on." for n in range(1, 13))
    assert out.getvalue().splitlines()[1:] == ["Iris: Hello Sam!", f"Iris: {cut}"]
    plans_asked = [r for r in server.requests_for("chat") if r.json["model"] == "gpt-4o"]
    assert len(plans_asked) == 6 and {r.json["max_tokens"] for r in plans_asked} == {64}
    assert all("max_tokens" in r.json for r in server.requests_for("chat"))  # every call is bounded

    assert iris.character is not None
    async with Database(settings.database) as db:
        store = db.for_agent(iris.character.agent_id)
        stored = [str(m.content) for m in await store.get_memories(table="messages")]
    assert stored and not any("message to send" in m.lower() or "FIRST_ACTION" in m for m in stored)
    # And the placeholder never came back in a later prompt as something Iris said.
    assert all("Iris: the message to send" not in r.json["messages"][-1]["content"] for r in plans_asked)
