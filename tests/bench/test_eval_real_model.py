"""The real-model evaluation, run against the fake server, counts what it says it counts: a real
answer, a placeholder sent, the parse rate per call kind and the tokens the server reported."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.bench._common import chat_kind, prompt_of
from tests.bench.eval_real_model import SCRIPT, placeholders
from tests.fakes.openai_server import FakeOpenAIServer

EVAL = Path(__file__).with_name("eval_real_model.py")


def answer(body: dict[str, Any], plans: Iterator[int]) -> str:
    kind = chat_kind(prompt_of(body))
    if kind == "plan":
        # The fourth plan is the template's placeholder, as a weak model writes it.
        text = "the message to send" if next(plans) == 4 else "Sure."
        content = f"<response><thought>ok</thought><actions>REPLY</actions><text>{text}</text></response>"
    elif kind == "should_respond":
        content = "<response><action>RESPOND</action></response>"
    else:
        content = "not XML at all"
    return content


def test_the_template_placeholders_are_known() -> None:
    fake = placeholders("Iris")
    assert "the message to send" in fake
    assert "respond | ignore | stop" in fake
    assert "sure." not in fake


async def test_the_evaluation_reports_answers_placeholders_and_parse_rates(tmp_path: Path) -> None:
    async with FakeOpenAIServer() as server:
        plans = itertools.count(1)
        server.script_chat(lambda body: answer(body, plans))
        out = tmp_path / "figures.json"
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(EVAL),
            "--base-url",
            server.url,
            "--set",
            "OPENAI_EMBEDDING_DIMENSIONS=1536",
            "--json",
            str(out),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode == 0, stderr.decode()
    figures = json.loads(out.read_text())
    assert figures["lines"] == len(SCRIPT)
    replies = [r for line in figures["per_line"] for r in line["replies"]]
    placeholder_sent = replies.count("the message to send")
    assert figures["placeholder_replies"] == placeholder_sent
    assert (
        figures["answered_with_real_text"]
        == figures["lines_with_a_reply"]
        == sum(1 for line in figures["per_line"] if any(r and r != "the message to send" for r in line["replies"]))
    )
    assert placeholder_sent == 0  # the placeholder plan is asked again, not sent
    plans = figures["parse_rate"]["plan"]
    assert plans["calls"] >= len(SCRIPT)
    assert (plans["parsed"], plans["placeholder"]) == (plans["calls"] - 1, 1)
    # The fake reports usage as a server does; every line's requests are counted.
    assert all(line["prompt_tokens"] > 0 for line in figures["per_line"] if line["requests"])
    assert sum(line["requests"] for line in figures["per_line"]) >= len(SCRIPT)
    assert b"answered with the model's own text" in stdout
