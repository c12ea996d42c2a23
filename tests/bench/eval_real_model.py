"""Evaluation: a scripted conversation with a real model, through the real ``troupe chat`` path.

    .venv/bin/python tests/bench/eval_real_model.py --base-url http://127.0.0.1:8080/v1 \\
        [--model NAME] [--character characters/iris.json] [--set KEY=VALUE ...] [--json FILE]

Nine lines (greetings, a question, a fact to remember and recall, "stop talking", a very long
line, a follow-up) go to one character as a person types them into ``troupe chat``; each is
answered (or not) before the next, as in the terminal. Every model request passes through a
recording proxy on loopback in front of ``--base-url``, so the figures are the server's own:

- lines answered with real text (not empty, not a template's placeholder), and which were not,
  with the last warning logged during the line (why);
- placeholder answers sent;
- parse rate per call kind (should-respond, plan, reflection …): of the answers (refused
  requests aside), those that read as the template's fields, and how many of them copied a
  placeholder of the template's example;
- prompt tokens per line, and of the plan request, from the server's ``usage``;
- model requests per line, and seconds per line.

``--tools`` runs a shorter script whose lines a tool answers, with the character given the MCP
plugin, the fake weather server of tests/fakes/mcp_server.py (over stdio) and troupe's own tools
(``TROUPE_TOOLS=all``); the report adds the tool calls the model made, per line. The server must
call tools (llama-cpp-python: ``--chat_format chatml-function-calling``).

It needs no key for a local server; ``--set`` passes any character setting through the
environment (``--set OPENAI_STRUCTURED_OUTPUT=none`` to compare the prose format, say). See
docs/local-models.md for running SmolLM2-135M under llama-cpp-python. Not part of the test
command: it needs a model server and takes minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from plugins.core._mustache import render
from plugins.core._parse import parse_response
from plugins.core._templates import DEFAULT_TEMPLATES
from tests.bench._common import ROOT, chat_kind, prompt_of

#: The scripted conversation: (what the person types, what it tests).
LONG_LINE = " ".join(
    f"Item {n}: the {colour} crate of {thing} arrived on day {n % 28 + 1}, was checked by {who}, "
    f"and went to shelf {n % 40 + 1} in aisle {n % 9 + 1}."
    for n, (colour, thing, who) in enumerate(
        [
            (c, t, w)
            for c in ("red", "blue", "green", "yellow", "grey", "white", "black", "orange")
            for t in ("apples", "bolts", "cables", "paper", "tiles", "lamps", "boots", "seeds", "glass", "rope")
            for w in ("Sam", "Ana")
        ][:80]
    )
)
SCRIPT: tuple[tuple[str, str], ...] = (
    ("Hi Iris!", "greeting"),
    ("How are you today?", "small talk"),
    ("What is the capital of France?", "a question"),
    ("Please remember this: my favourite colour is green.", "a fact to remember"),
    ("What is my favourite colour?", "recall"),
    ("Please stop talking for a moment.", "stop talking"),
    (f"Here is our stock list. {LONG_LINE} How many items is that, roughly?", "a very long line"),
    ("Sorry for the wall of text. Are you still there?", "the line after the long one"),
    ("Thanks, bye!", "goodbye"),
)

#: The script with ``--tools``: lines a tool answers.
TOOL_SCRIPT: tuple[tuple[str, str], ...] = (
    ("Hi Iris!", "greeting (the tools connect meanwhile)"),
    ("What's the weather in Oslo right now?", "a tool: the weather"),
    ("Can you check the weather in Bergen for me?", "a tool again"),
    ("How many characters can a Telegram message hold? Search your knowledge.", "search_knowledge"),
    ("Thanks, bye!", "goodbye"),
)

# What each kind's answer must carry to count as parsed.
_FIELDS = {
    "plan": ("text", "actions"),
    "should_respond": ("action",),
    "troupe_decision": ("answer",),
    "reflection": ("thought", "facts", "relationships"),
}
_TEMPLATE_OF_KIND = {
    "plan": "messageHandlerTemplate",
    "should_respond": "shouldRespondTemplate",
    "troupe_decision": "troupeDecisionTemplate",
    "reflection": "reflectionTemplate",
}


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _leaves(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [part for part in str(value).split(",") if part.strip()] if value is not None else []


def placeholders(agent: str) -> frozenset[str]:
    """Every example value the built-in templates show in their <output> section, normalised."""
    found: set[str] = set()
    for name in _TEMPLATE_OF_KIND.values():
        text = render(DEFAULT_TEMPLATES[name], {"agentName": agent})
        start, end = text.find("<output>"), text.find("</output>")
        if start < 0 or end < 0:
            continue
        found.update(_norm(leaf) for leaf in _leaves(parse_response(text[start + 8 : end]) or {}))
    return frozenset(found)


@dataclass
class Call:
    """One model request as the proxy saw it."""

    line: int
    path: str
    kind: str
    status: int
    seconds: float
    structured: str
    """The request's ``response_format`` type with ``+schema`` when it carried one, or ``none``."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    answer: str = ""
    tool_calls: list[str] = field(default_factory=list)
    """The calls the model asked for (``name(arguments)``)."""


@dataclass
class Line:
    number: int
    text: str
    purpose: str
    seconds: float = 0.0
    replies: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _structured(body: Mapping[str, Any]) -> str:
    form = body.get("response_format")
    if not isinstance(form, Mapping):
        return "none"
    kind = str(form.get("type"))
    return f"{kind}+schema" if "schema" in form or "json_schema" in form else kind


class RecordingProxy:
    """Forwards every request to the real server and keeps what went and came back."""

    def __init__(self, target: str, timeout_s: float) -> None:
        self.target = target.rstrip("/")
        self.timeout_s = timeout_s
        self.calls: list[Call] = []
        self.line = 0
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""

    async def __aenter__(self) -> RecordingProxy:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        raw = await request.read()
        path = "/" + request.match_info["tail"]
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        line, started = self.line, time.perf_counter()
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("authorization", "content-type")}
        async with self._session.request(request.method, self.target + path, data=raw, headers=headers) as answer:
            data = await answer.read()
            status, content_type = answer.status, answer.headers.get("Content-Type", "application/json")
        call = Call(
            line=line,
            path=path,
            kind=chat_kind(prompt_of(body)) if path.endswith("/chat/completions") else path.rsplit("/", 1)[-1],
            status=status,
            seconds=time.perf_counter() - started,
            structured=_structured(body) if isinstance(body, Mapping) else "none",
        )
        self._read_answer(call, data)
        self.calls.append(call)
        return web.Response(body=data, status=status, content_type=content_type.split(";")[0])

    @staticmethod
    def _read_answer(call: Call, data: bytes) -> None:
        try:
            reply = json.loads(data)
        except ValueError:
            # A streamed answer: its text is the deltas of its events.
            pieces = []
            for event in data.decode(errors="replace").splitlines():
                if event.startswith("data: {"):
                    chunk = json.loads(event[6:])
                    for choice in chunk.get("choices") or []:
                        pieces.append((choice.get("delta") or {}).get("content") or "")
                    usage = chunk.get("usage") or {}
                    call.prompt_tokens = usage.get("prompt_tokens", call.prompt_tokens)
            call.answer = "".join(pieces)
            return
        if not isinstance(reply, dict):
            return
        usage = reply.get("usage") or {}
        call.prompt_tokens = usage.get("prompt_tokens")
        call.completion_tokens = usage.get("completion_tokens")
        choices = reply.get("choices") or []
        if choices and isinstance(choices[0], dict):
            message = choices[0].get("message") or {}
            call.answer = str(message.get("content") or "")
            for asked in message.get("tool_calls") or []:
                function = asked.get("function") or {}
                call.tool_calls.append(f"{function.get('name')}({function.get('arguments')})")
        elif call.status >= 400:
            call.answer = json.dumps(reply.get("error") or reply)[:300]


def _plan_texts(calls: list[Call]) -> list[str]:
    """The ``text`` of each plan answered, normalised."""
    texts = []
    for call in calls:
        answer = parse_response(call.answer) if call.status < 400 else None
        if answer and answer.get("text"):
            texts.append(_norm(str(answer["text"])))
    return texts


def read_as(call: Call, fake: frozenset[str]) -> str:
    """How the answer reads: ``parsed`` (the template's fields, with real values), ``placeholder``
    (the fields, with a value copied from the template's example) or ``unparsed``."""
    fields = _FIELDS.get(call.kind)
    if call.status >= 400 or fields is None:
        return "unparsed"
    answer = parse_response(call.answer) or {}
    leaves = [leaf for f in fields for leaf in _leaves(answer.get(f))]
    real = [leaf for leaf in leaves if _norm(leaf) not in fake]
    if call.kind == "should_respond":
        chosen = [_norm(v) for v in leaves if _norm(v) in ("respond", "ignore", "stop")]
        return "parsed" if chosen else "placeholder" if leaves else "unparsed"
    if call.kind == "reflection":
        if "thought" not in answer:
            return "unparsed"
        return "placeholder" if _norm(str(answer["thought"])) in fake else "parsed"
    if not leaves:
        return "unparsed"
    return "parsed" if len(real) == len(leaves) else "placeholder"  # one copied value spoils it


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.current: list[str] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.current is not None:
            self.current.append(record.getMessage()[:300])


class _Said:
    """The terminal: lines the character printed, with the name taken off."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.current: list[str] | None = None

    def write(self, text: str) -> int:
        for row in text.splitlines():
            if row.startswith(self.prefix) and self.current is not None:
                self.current.append(row[len(self.prefix) :].strip())
        return len(text)

    def flush(self) -> None:
        pass


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from bot.config.character import load_characters
    from bot.config.settings import DaemonSettings
    from bot.daemon.chat import chat
    from bot.kernel import logs

    script_lines = TOOL_SCRIPT if args.tools else SCRIPT
    lines = [Line(n, text, purpose) for n, (text, purpose) in enumerate(script_lines, start=1)]
    async with RecordingProxy(args.base_url, args.timeout) as proxy:
        with tempfile.TemporaryDirectory() as data:
            character_file = _with_tools(Path(args.character), Path(data)) if args.tools else Path(args.character)
            environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OLLAMA_", "OPENROUTER_"))}
            environ |= {
                "OPENAI_BASE_URL": proxy.url,
                "OPENAI_API_KEY": args.api_key,
                "OPENAI_SMALL_MODEL": args.model,
                "OPENAI_LARGE_MODEL": args.model,
            }
            if args.tools:
                environ["TROUPE_TOOLS"] = "all"
            environ |= dict(kv.split("=", 1) for kv in args.set)
            settings = DaemonSettings(data_dir=Path(data), database_url=None)
            logs.configure("WARNING")
            warnings = _Warnings()
            logging.getLogger().addHandler(warnings)
            results = load_characters([character_file], environ=environ)
            if not results[0].ok:
                raise SystemExit(f"eval: {args.character}: {results[0].problems}")
            name = results[0].character.name if results[0].character else "?"
            said = _Said(f"{name}: ")
            script = iter(lines)
            current: list[Line] = []
            started = 0.0

            async def read_line() -> str | None:
                nonlocal started
                if current:
                    current[-1].seconds = time.perf_counter() - started
                    print(
                        f"line {current[-1].number}: {current[-1].seconds:.1f} s, "
                        f"{'answered' if current[-1].replies else 'no answer'}",
                        file=sys.stderr,
                        flush=True,
                    )
                line = next(script, None)
                if line is None:
                    return None
                current.append(line)
                proxy.line = line.number
                said.current, warnings.current = line.replies, line.warnings
                started = time.perf_counter()
                return line.text

            status = await chat(settings, results[0], environ, user="eval", read_line=read_line, output=said)  # type: ignore[arg-type]
    return report(name, lines, proxy.calls, status)


def _with_tools(path: Path, folder: Path) -> Path:
    """A copy of the character file in ``folder`` with the MCP plugin and the fake weather server
    (its knowledge must be facts: a copy elsewhere reads no relative path)."""
    data = json.loads(path.read_text())
    data["plugins"] = [*data.get("plugins", []), "@elizaos/plugin-mcp"]
    server = {"type": "stdio", "command": sys.executable, "args": ["-m", "tests.fakes.mcp_server"], "cwd": str(ROOT)}
    data.setdefault("settings", {})["mcp"] = {"servers": {"weather": server}}
    copy = folder / path.name
    copy.write_text(json.dumps(data))
    return copy


def report(name: str, lines: list[Line], calls: list[Call], status: int) -> dict[str, Any]:
    fake = placeholders(name)
    # A real answer is the model's own text: an action's canned notice ("I can't draw pictures
    # here") is a reply, but not an answer to the line.
    written = {
        ln.number: _plan_texts([c for c in calls if c.line == ln.number and c.kind == "plan"])
        + [_norm(c.answer) for c in calls if c.line == ln.number and c.kind == "tool_turn" and c.answer.strip()]
        for ln in lines
    }
    replied = [ln for ln in lines if any(r and _norm(r) not in fake for r in ln.replies)]
    real = [
        ln
        for ln in lines
        if any(r and _norm(r) not in fake and any(_norm(r) in t for t in written[ln.number]) for r in ln.replies)
    ]
    placeholder_replies = [r for ln in lines for r in ln.replies if _norm(r) in fake]
    kinds: dict[str, dict[str, int]] = {}
    for call in calls:
        # A refused request (a schema form the server does not take, a prompt too long) is no
        # answer: it is counted with the failed requests, not against the parse rate.
        if call.kind in _FIELDS and call.status < 400:
            tally = kinds.setdefault(call.kind, {"parsed": 0, "placeholder": 0, "calls": 0})
            tally["calls"] += 1
            outcome = read_as(call, fake)
            if outcome != "unparsed":
                tally[outcome] += 1
    per_line = []
    for ln in lines:
        mine = [c for c in calls if c.line == ln.number]
        plan = [c.prompt_tokens for c in mine if c.kind == "plan" and c.prompt_tokens]
        per_line.append(
            {
                "line": ln.number,
                "purpose": ln.purpose,
                "seconds": round(ln.seconds, 1),
                "requests": len(mine),
                "failed_requests": sum(c.status >= 400 for c in mine),
                "prompt_tokens": sum(c.prompt_tokens or 0 for c in mine),
                "plan_prompt_tokens": max(plan) if plan else None,
                "structured": sorted({c.structured for c in mine if c.path.endswith("/chat/completions")}),
                "tool_calls": [t for c in mine for t in c.tool_calls],
                "replies": ln.replies,
                "answers": [f"{c.kind} {c.status} {c.structured}: {c.answer[:300]}" for c in mine],
                "why_not": ln.warnings[-1] if ln.warnings and not ln.replies else None,
            }
        )
    seconds = [ln.seconds for ln in lines]
    return {
        "status": status,
        "lines": len(lines),
        "answered_with_real_text": len(real),
        "lines_with_a_reply": len(replied),
        "placeholder_replies": len(placeholder_replies),
        "parse_rate": {k: v for k, v in sorted(kinds.items())},
        "model_requests_per_line": round(len(calls) / len(lines), 2),
        "lines_with_a_tool_call": sum(any(c.tool_calls for c in calls if c.line == ln.number) for ln in lines),
        "seconds_per_line": {"p50": round(statistics.median(seconds), 1), "max": round(max(seconds), 1)},
        "per_line": per_line,
    }


def print_report(result: dict[str, Any]) -> None:
    print(
        f"answered with the model's own text: {result['answered_with_real_text']} of {result['lines']} lines "
        f"(with any reply: {result['lines_with_a_reply']}); placeholder replies: {result['placeholder_replies']}"
    )
    rates = ", ".join(
        f"{kind} {v['parsed'] + v['placeholder']}/{v['calls']} "
        f"({100 * (v['parsed'] + v['placeholder']) / v['calls']:.0f}%; {v['placeholder']} copying a placeholder)"
        for kind, v in result["parse_rate"].items()
    )
    print(f"parse rate: {rates or 'no structured calls'}")
    print(f"lines with a tool call: {result['lines_with_a_tool_call']}")
    print(
        f"model requests per line: {result['model_requests_per_line']}; seconds per line: "
        f"p50 {result['seconds_per_line']['p50']}, max {result['seconds_per_line']['max']}"
    )
    print(f"{'line':>4} {'s':>6} {'req':>4} {'fail':>4} {'prompt tok':>10} {'plan tok':>8}  purpose / reply")
    for row in result["per_line"]:
        reply = " | ".join(row["replies"]) or f"(none: {row['why_not'] or 'no warning'})"
        print(
            f"{row['line']:>4} {row['seconds']:>6} {row['requests']:>4} {row['failed_requests']:>4} "
            f"{row['prompt_tokens']:>10} {row['plan_prompt_tokens'] or '-':>8}  {row['purpose']}: {reply[:100]}"
        )
        if row["tool_calls"]:
            print(f"{'':>38}tools: {', '.join(row['tool_calls'])[:160]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", default="local", help="the model name sent (small and large)")
    parser.add_argument("--api-key", default="no-key")
    parser.add_argument("--character", default=str(ROOT / "characters" / "iris.json"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting, repeatable")
    parser.add_argument("--timeout", type=float, default=900.0, help="the proxy's bound on one request, seconds")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--tools", action="store_true", help="the tool script, with an MCP server and own tools")
    args = parser.parse_args()
    if any("=" not in kv for kv in args.set):
        parser.error("--set takes KEY=VALUE")
    result = asyncio.run(run(args))
    print_report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
