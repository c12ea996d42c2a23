"""End to end: a character on the real openai plugin against a server with a small context
window, which refuses longer prompts in the words real servers use. Every line is answered, a
very long one too, and the line after it; once the server has named its window, prompts are
built to it and no longer refused."""

from __future__ import annotations

import io
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.chat import chat
from platforms.console import ConsoleAdapter  # noqa: F401  (the adapter chat() drives)

from .fakes.openai_server import Fail, FakeOpenAIServer
from .test_e2e_console import lines, reply

REPO = Path(__file__).resolve().parents[1]
WINDOW = 2048
REFLECTION = "<response><thought>t</thought><facts></facts><relationships></relationships></response>"

# How servers say it, each with whether it names the window.
WORDINGS = {
    "openai": (
        "This model's maximum context length is {window} tokens. However, you requested {asked} tokens "
        "({asked} in the messages, 0 in the completion). Please reduce the length of the messages.",
        True,
    ),
    "llama-cpp-python": ("Requested tokens ({asked}) exceed context window of {window}", True),
    "vllm": (
        "The decoder prompt (length {asked}) is longer than the maximum model length of {window}. "
        "Make sure that `max_model_len` is no smaller than the number of text tokens.",
        True,
    ),
    "ollama": ("prompt too long; exceeded max context length by {over} tokens", False),
}


@dataclass
class SmallServer:
    """Counts a request's tokens as a typical tokenizer would (four characters each, the reply's
    bound included) and refuses those over the window in ``wording``."""

    wording: str
    requests: list[tuple[str, int, bool]] = field(default_factory=list)  # (model, tokens, refused)
    accepted: list[str] = field(default_factory=list)  # the prompts of the plans answered
    bounds: list[int] = field(default_factory=list)  # their max_tokens
    replies: int = 0

    def __call__(self, body: dict[str, Any]) -> str | Fail:
        text = "".join(str(m.get("content") or "") for m in body["messages"])
        asked = len(text) // 4 + int(body.get("max_tokens") or 0)
        refused = asked > WINDOW
        self.requests.append((body["model"], asked, refused))
        if refused:
            message = self.wording.format(window=WINDOW, asked=asked, over=asked - WINDOW)
            return Fail(400, times=1, message=message)
        if body["model"] != "gpt-4o":
            return REFLECTION
        self.replies += 1
        self.accepted.append(body["messages"][-1]["content"])
        self.bounds.append(int(body.get("max_tokens") or 0))
        return reply(f"Answer {self.replies}.")

    def refusals(self, model: str = "gpt-4o") -> int:
        return sum(1 for m, _, refused in self.requests if m == model and refused)


async def converse(tmp_path: Path, server: FakeOpenAIServer, said: list[str]) -> list[str]:
    shutil.copy(REPO / "characters" / "iris.json", tmp_path / "iris.json")
    settings = DaemonSettings(db_path=tmp_path / "troupe.db")
    environ = {"OPENAI_API_KEY": "sk-e2e-key-1234", "OPENAI_BASE_URL": server.url}
    iris = load_character(tmp_path / "iris.json", environ=environ)
    out = io.StringIO()
    assert await chat(settings, iris, environ, user="sam", output=out, read_line=lines(*said)) == 0
    return out.getvalue().splitlines()[1:]


@pytest.mark.parametrize("server_kind", sorted(WORDINGS))
async def test_a_refused_prompt_is_built_again_smaller_and_the_window_learned(tmp_path: Path, server_kind: str) -> None:
    wording, names_window = WORDINGS[server_kind]
    long_line = " ".join(f"word{n} and some more of the story" for n in range(1300))  # ~9,000 tokens
    said = ["Hi Iris", "What can I see tonight?", long_line, "And what about Saturn?", "Thanks!"]
    async with FakeOpenAIServer() as server:
        small = SmallServer(wording)
        server.script_chat(small)
        answered = await converse(tmp_path, server, said)

    # Every line is answered: the long one, and those after it.
    assert answered == [f"Iris: Answer {n}." for n in range(1, len(said) + 1)]
    plans = [refused for model, _, refused in small.requests if model == "gpt-4o"]
    refused_at = [i for i, refused in enumerate(plans) if refused]
    assert refused_at  # the long line did not fit the preset's guess of 8,192 tokens
    assert all(not plans[i + 1] for i in refused_at)  # each refusal answered by a smaller prompt, accepted
    assert len(plans) - len(refused_at) == len(said)  # one accepted plan per line
    if names_window:
        assert len(refused_at) == 1  # the window learned: prompts built to it from then on
    # The reply's bound is counted as part of the request: a quarter of the small window, not 1,024.
    assert small.bounds == [512] * len(said)


async def test_a_very_long_line_is_cut_with_a_note_and_the_next_line_leaves_it_out(tmp_path: Path) -> None:
    long_line = "Listen: " + " ".join(f"star{n} is bright tonight" for n in range(2000))
    async with FakeOpenAIServer() as server:
        small = SmallServer(WORDINGS["llama-cpp-python"][0])
        server.script_chat(small)
        answered = await converse(tmp_path, server, ["Hi Iris", long_line, "Which star was first?"])
    assert answered == ["Iris: Answer 1.", "Iris: Answer 2.", "Iris: Answer 3."]
    long_prompt, next_prompt = small.accepted[1], small.accepted[2]
    assert "Listen: star0 is bright" in long_prompt and "were cut to fit the model's context" in long_prompt
    assert "star1999" not in long_prompt
    # The next line: the long one is an old message now, given up for the newest.
    assert "Which star was first?" in next_prompt and "Listen: star0" not in next_prompt
    assert small.refusals() == 1
