"""What the model benchmarks share: the fake OpenAI-compatible server in a process of its own, the
answers it is scripted with, and the sorting of chat requests by the template that wrote them.

The fake (tests/fakes/openai_server.py) answers at once. It runs in a child process so that its
work (parsing prompts, hashing 1536-float embeddings) does not eat the CPU of the troupe code
being measured, as a real model server would not; the real openai client reaches it over HTTP.

Chat requests are sorted by a phrase only their template has (plugins/core/_templates.py, and
the troupe decision's "Which of these characters should answer"): see :func:`chat_kind`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from bot.config.character import LoadResult
    from bot.runtime.agent import AgentRuntime
    from bot.runtime.shared import Shared
    from bot.store import Database

ROOT = Path(__file__).resolve().parents[2]

#: The kinds of chat request, in the order they are printed.
CHAT_KINDS = ("should_respond", "troupe_decision", "plan", "tool_turn", "reflection", "other")

# A phrase of each template that no other template has. The troupe decision comes first: its
# prompt may quote parts of the others.
_MARKERS = (
    ("troupe_decision", "Which of these characters should answer"),
    ("should_respond", "does with the newest message in this conversation"),  # shouldRespondTemplate
    ("plan", "Write the next turn of "),  # messageHandlerTemplate
    ("tool_turn", "Write the next message of "),  # toolUseTemplate
    ("reflection", "Look back over the conversation as "),  # reflectionTemplate
)

_PLAN_FOR = re.compile(r"Write the next turn of (.+?) in this conversation")
_DECIDER = re.compile(r"Decide what (.+?) does with the newest message")
_RECEIVED = re.compile(r"# Received Message\n([^:\n]+): ([^\n]*)")


def chat_kind(prompt: str) -> str:
    """Which template wrote ``prompt``: one of :data:`CHAT_KINDS`."""
    for kind, marker in _MARKERS:
        if marker in prompt:
            return kind
    return "other"


def prompt_of(body: dict[str, Any]) -> str:
    """Every message of a chat request, joined: the system prompt and the template's prompt."""
    return "\n".join(str(m.get("content")) for m in body.get("messages") or [])


@dataclass
class Script:
    """The model's answers, the same for every benchmark: each character answers when it plans;
    a character deciding alone answers a person's message that names no character and lets
    the rest pass (a message naming another is for that one, another bot's message is
    chatter); the troupe decision picks, by the same rule, every character it is asked about;
    a reflection learns one new fact (or, with ``reflections_parse`` false, answers prose that
    does not parse, as a model that ignores the format does).

    ``characters`` are the names of the benchmark's characters (to tell a bot's message from a
    person's, and to find them in a troupe decision's prompt).
    """

    characters: Sequence[str] = ()
    reflections_parse: bool = True
    _facts: itertools.count[int] = field(default_factory=itertools.count)

    def answer(self, body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        kind = chat_kind(prompt)
        if kind == "plan":
            match = _PLAN_FOR.search(prompt)
            name = match.group(1) if match else "I"
            return f"<response><thought>ok</thought><actions>REPLY</actions><text>{name} here, on it.</text></response>"
        if kind == "should_respond":
            match = _DECIDER.search(prompt)
            action = "RESPOND" if self._for_anyone(prompt) else "IGNORE"
            name = match.group(1) if match else ""
            return f"<response><name>{name}</name><reasoning>ok</reasoning><action>{action}</action></response>"
        if kind == "troupe_decision":
            # Every character the prompt names, in the order they appear, when the message is for
            # anyone; none otherwise.
            named = sorted((prompt.find(n), n) for n in self.characters if n in prompt)
            chosen = ", ".join(n for _, n in named) if self._for_anyone(prompt) else ""
            return f"<response><reasoning>ok</reasoning><answer>{chosen}</answer><stop></stop></response>"
        if kind == "reflection" and not self.reflections_parse:
            return "The conversation is going well; nobody said anything new."
        if kind == "reflection":
            claim = f"The person asked question {next(self._facts)}."
            return (
                "<response><thought>It is going well.</thought><facts><fact>"
                f"<claim>{claim}</claim><type>fact</type><about></about>"
                "<in_bio>false</in_bio><already_known>false</already_known>"
                "</fact></facts><relationships></relationships></response>"
            )
        return "<response><thought>ok</thought></response>"

    def _for_anyone(self, prompt: str) -> bool:
        """Whether the message being decided on is a person's and names no character."""
        match = _RECEIVED.search(prompt)
        if match is None:
            return False
        sender, text = match.group(1).strip(), match.group(2)
        return sender not in self.characters and not any(n in text for n in self.characters)


@dataclass
class Tally:
    """Model requests counted by endpoint (chat, embeddings …) and chat requests by kind."""

    endpoints: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.endpoints.values())

    def add(self, endpoint: str, body: Any) -> None:
        self.endpoints[endpoint] += 1
        if endpoint == "chat":
            self.kinds[chat_kind(prompt_of(body if isinstance(body, dict) else {}))] += 1

    def __sub__(self, other: Tally) -> Tally:
        return Tally(self.endpoints - other.endpoints, self.kinds - other.kinds)

    def to_json(self) -> dict[str, dict[str, int]]:
        return {"endpoints": dict(self.endpoints), "kinds": dict(self.kinds)}

    @classmethod
    def from_json(cls, data: dict[str, dict[str, int]]) -> Tally:
        return cls(Counter(data["endpoints"]), Counter(data["kinds"]))

    def per(self, count: int, what: str = "message") -> str:
        """The requests per ``count`` units of ``what``, by endpoint and by kind, in one line."""
        count = max(count, 1)
        endpoints = ", ".join(f"{e} {n / count:.2f}" for e, n in sorted(self.endpoints.items()))
        kinds = ", ".join(f"{k} {self.kinds[k] / count:.2f}" for k in CHAT_KINDS if self.kinds[k])
        return f"{self.total / count:.2f} model requests per {what} ({endpoints or 'none'}; chat: {kinds or 'none'})"


class ModelServer:
    """The fake OpenAI-compatible server in a child process (:mod:`tests.bench._model_server`),
    scripted with :class:`Script` for ``characters`` (and ``reflections_parse``). ``url`` is the base URL to give the openai
    plugin; :meth:`tally` counts what it was asked so far."""

    def __init__(self, characters: Iterable[str] = (), *, reflections_parse: bool = True) -> None:
        self.characters = list(characters)
        self.reflections_parse = reflections_parse
        self.url = ""
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Self:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.bench._model_server",
            *([] if self.reflections_parse else ["--reflections-do-not-parse"]),
            *self.characters,
            cwd=ROOT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        self.url = json.loads(await self._line())["url"]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        process = self._process
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()  # end of input: the server stops
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()

    async def _line(self) -> str:
        assert self._process is not None and self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), 30)
        if not line:
            raise RuntimeError("the fake model server ended; see its error above")
        return line.decode()

    async def tally(self) -> Tally:
        """Every request the server answered so far, counted."""
        async with self._lock:
            assert self._process is not None and self._process.stdin is not None
            self._process.stdin.write(b"tally\n")
            await self._process.stdin.drain()
            return Tally.from_json(json.loads(await self._line()))


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (nearest rank); NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def p50_p95(values: Sequence[float]) -> str:
    """``p50 … p95 …`` of latencies in seconds, printed in milliseconds."""
    if not values:
        return "p50 -  p95 - (none)"
    return f"p50 {statistics.median(values) * 1000:7.1f} ms  p95 {percentile(values, 0.95) * 1000:7.1f} ms"


def runtime_of(db: Database, result: LoadResult, environ: dict[str, str], shared: Shared | None = None) -> AgentRuntime:
    """The runtime the daemon would make of a loaded character file (its plugins, plus a model
    plugin if it names none), not started."""
    from bot.daemon.chat import runtime_plugins
    from bot.runtime.agent import AgentRuntime

    character = result.raise_for_problems()
    return AgentRuntime(
        character,
        db.for_agent(character.agent_id),
        environ=environ,
        plugins=runtime_plugins(result),
        model_preset=result.model_preset,
        shared=shared,  # what the daemon gives its characters: connection pools, vectors, batches
    )
