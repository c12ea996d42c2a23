"""A turn that uses tools: ask ``TEXT_TOOLS``, run the calls the model asks for, give it the
results, until it writes its reply or a bound is met.

Bounded every way: rounds of calls per turn (``TOOL_MAX_ROUNDS``), time per call
(``TOOL_CALL_TIMEOUT_S``) and per turn (``TOOL_TURN_TIMEOUT_S``), and the characters of results one
turn puts into the prompt (``TOOL_RESULTS_MAX_CHARS``: the Toolbox cuts each result; the loop cuts
the total, with a note). Several calls in one round run concurrently. When a bound stops the loop,
the model is asked once more, with no tools, to answer with what it has and say what it could not
do; if it still does not write, the reply says so in troupe's own words.

Who may run what (access, rate limits, confirmation) is the ``run`` callable's business
(``_tool_rules``): a refused call comes back as an error result, which the model tells the person.

Given a reply channel's ``stream``, each request's text is shown as the model writes it. Text
written before calls is not the reply: once the calls come (or the request fails), it is
withdrawn — the channel is given an empty text, and the next request's text starts afresh. Every
channel that streams takes such a restart (``ReplyChannel.stream``): the console's Chat shows the
latest text in place of the last, voice starts its sentences again (what it already said stays
said: a model's "let me look that up" before its calls). Holding each request's text back until
its end would be the alternative, but a model may write its reply and then call a tool after
all: nothing short of the end of the answer tells, and the reply would no longer stream. The
reply is sent whole at the end, as any other.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from bot.sdk import (
    ModelContextExceeded,
    ModelType,
    ToolCall,
    ToolCallRun,
    ToolResult,
    ToolRound,
    ToolRunState,
    ToolSpec,
    ToolTurn,
    ToolTurnParams,
)

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

    from ._budget import FittedPrompt

__all__ = ["RunCall", "ToolBounds", "ToolLoop", "ToolStop", "ToolTurnResult", "trace_runs"]

#: Runs one call within ``timeout`` seconds; never raises for the call's failure.
RunCall = Callable[[ToolCall, float], Awaitable[ToolResult]]

_CUT_NOTE = "\n[cut: this turn's tool results reached their bound of {limit} characters]"
_NO_ROOM = "[not shown: this turn's tool results already reached their bound of {limit} characters]"
_LAST_WORD = (
    "\n\nNo more tools can be used for this message ({why}). Answer now with what the tool results "
    "above gave you, and say plainly what you could not find out or do."
)


class ToolStop(StrEnum):
    """Why a turn's loop ended."""

    ANSWERED = "answered"
    ROUNDS = "rounds"
    """It asked for more rounds of calls than a turn may have."""
    TIME = "time"
    """The turn's time ran out."""


@dataclass(frozen=True, slots=True)
class ToolBounds:
    """How far one turn's tool loop may go."""

    rounds: int = 4
    call_timeout_s: float = 30.0
    turn_timeout_s: float = 120.0
    result_chars: int = 16_000

    @classmethod
    def of(cls, runtime: AgentRuntime) -> ToolBounds:
        """The character's bounds (``TOOL_MAX_ROUNDS`` …), each at least a sensible minimum."""
        default = cls()
        return cls(
            rounds=max(1, runtime.get_int("TOOL_MAX_ROUNDS", default.rounds)),
            call_timeout_s=max(1.0, runtime.get_number("TOOL_CALL_TIMEOUT_S", default.call_timeout_s)),
            turn_timeout_s=max(5.0, runtime.get_number("TOOL_TURN_TIMEOUT_S", default.turn_timeout_s)),
            result_chars=max(500, runtime.get_int("TOOL_RESULTS_MAX_CHARS", default.result_chars)),
        )


@dataclass(frozen=True, slots=True)
class ToolTurnResult:
    """How a turn's loop ended: the reply's text, the rounds of calls, and why it stopped."""

    text: str
    rounds: tuple[ToolRound, ...]
    stop: ToolStop
    model_requests: int


class ToolLoop:
    """One turn's loop: :meth:`run` it once."""

    def __init__(
        self,
        runtime: AgentRuntime,
        prompt: FittedPrompt,
        tools: Sequence[ToolSpec],
        run: RunCall,
        bounds: ToolBounds,
        *,
        system: str | None,
        stream: Callable[[str], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self._prompt = prompt
        self.tools = tuple(tools)
        self._run = run
        self.bounds = bounds
        self.system = system
        self._stream = stream  # the reply channel's, when it shows the reply as it is written
        self._room = bounds.result_chars  # characters of results the prompt still takes
        self._requests = 0

    async def run(self) -> ToolTurnResult:
        """The reply to the prompt. Raises ModelError when the model cannot be asked (the caller
        falls back, or says so); a tool's failure is a result, never an exception. A prompt the
        model refuses as too long is built again smaller, once (:meth:`FittedPrompt.shrink`)."""
        rounds: list[ToolRound] = []
        deadline = time.monotonic() + self.bounds.turn_timeout_s
        stop = ToolStop.ROUNDS
        for _ in range(self.bounds.rounds):
            left = deadline - time.monotonic()
            if left <= 0:
                stop = ToolStop.TIME
                break
            try:
                async with asyncio.timeout(left):
                    turn = await self._ask("", self.tools, rounds)
            except TimeoutError:
                stop = ToolStop.TIME
                break
            if turn.done:
                return ToolTurnResult(turn.text.strip(), tuple(rounds), ToolStop.ANSWERED, self._requests)
            left = deadline - time.monotonic()
            results = await self._run_all(turn.calls, max(0.0, left))
            rounds.append(ToolRound(calls=turn.calls, results=results, text=turn.text))
            if time.monotonic() >= deadline:
                stop = ToolStop.TIME
                break
        return await self._last_word(rounds, stop)

    async def _ask(self, extra: str, tools: Sequence[ToolSpec], rounds: Sequence[ToolRound]) -> ToolTurn:
        """The model's answer to the prompt (plus ``extra``) with ``tools`` and the ``rounds`` so far."""
        try:
            return await self._ask_once(self._prompt.prompt + extra, tools, rounds)
        except ModelContextExceeded as exc:
            if not self._prompt.shrink(exc):
                raise
        return await self._ask_once(self._prompt.prompt + extra, tools, rounds)

    async def _ask_once(self, prompt: str, tools: Sequence[ToolSpec], rounds: Sequence[ToolRound]) -> ToolTurn:
        params = ToolTurnParams(prompt=prompt, tools=list(tools), rounds=list(rounds))
        if self.system:
            params["system"] = self.system
        shown = _Shown(self._stream) if self._stream is not None else None
        if shown is not None:
            params["on_delta"] = shown.feed
        self._requests += 1
        try:
            turn = await self.runtime.use_model(ModelType.TEXT_TOOLS, params)
        except BaseException:  # cancelled by the turn's bound too
            if shown is not None:
                shown.withdraw()
            raise
        if not isinstance(turn, ToolTurn):  # a plugin's handler that breaks the contract
            raise TypeError(f"a TEXT_TOOLS handler returned {type(turn).__name__}, not a ToolTurn")
        if shown is not None and not turn.done:
            shown.withdraw()  # written before calls: not the reply
        return turn

    async def _run_all(self, calls: Sequence[ToolCall], left: float) -> tuple[ToolResult, ...]:
        """Every call at once, each within its bound (and the turn's); results in the calls' order."""
        timeout = max(0.0, min(self.bounds.call_timeout_s, left))
        results = await asyncio.gather(*(self._run_one(call, timeout) for call in calls))
        return tuple(self._fit(result) for result in results)

    async def _run_one(self, call: ToolCall, timeout: float) -> ToolResult:
        started = time.monotonic()
        if timeout <= 0:
            return ToolResult(call, f"{call.name} was not run: the time for this message ran out", ok=False)
        try:
            # A little over the call's own bound: a Toolbox that overruns it is cut off here.
            async with asyncio.timeout(timeout + 1.0):
                return await self._run(call, timeout)
        except TimeoutError:
            elapsed = (time.monotonic() - started) * 1000
            return ToolResult(call, f"{call.name} gave no answer within {timeout:g} s", ok=False, duration_ms=elapsed)
        except Exception as exc:  # a Toolbox's bug is the call's failure, not the turn's
            elapsed = (time.monotonic() - started) * 1000
            return ToolResult(call, f"{call.name} failed ({type(exc).__name__})", ok=False, duration_ms=elapsed)

    def _fit(self, result: ToolResult) -> ToolResult:
        """``result`` cut to what is left of the turn's room for results, with a note when cut."""
        limit = self.bounds.result_chars
        if self._room <= 0:
            return replace(result, text=_NO_ROOM.format(limit=limit), truncated=True)
        if len(result.text) <= self._room:
            self._room -= len(result.text)
            return result
        kept = result.text[: self._room]
        self._room = 0
        return replace(result, text=kept + _CUT_NOTE.format(limit=limit), truncated=True)

    async def _last_word(self, rounds: list[ToolRound], stop: ToolStop) -> ToolTurnResult:
        """The bound was met: one more request, with no tools, for a reply made of what there is."""
        why = (
            f"the {self.bounds.rounds} rounds of tool calls a message may have are used up"
            if stop is ToolStop.ROUNDS
            else "the time for this message ran out"
        )
        text = ""
        left = max(5.0, self.bounds.call_timeout_s)
        try:
            async with asyncio.timeout(left):
                turn = await self._ask(_LAST_WORD.format(why=why), (), rounds)
            text = turn.text.strip() if turn.done else ""
        except TimeoutError:
            text = ""
        if not text:
            text = _could_not(rounds, why)
        return ToolTurnResult(text, tuple(rounds), stop, self._requests)


class _Shown:
    """One request's text, shown on the reply channel as it grows (leading space aside)."""

    def __init__(self, stream: Callable[[str], None]) -> None:
        self.stream = stream
        self._text = ""
        self._shown = False

    def feed(self, piece: str) -> None:
        self._text += piece
        text = self._text.lstrip()
        if text:
            self._shown = True
            self.stream(text)

    def withdraw(self) -> None:
        """Take back what was shown: it was not the reply."""
        if self._shown:
            self._shown = False
            self.stream("")


def _could_not(rounds: Sequence[ToolRound], why: str) -> str:
    """The reply when the model wrote none after the bound: what was tried, in troupe's words."""
    names = list(dict.fromkeys(call.name for done in rounds for call in done.calls))
    tried = f" (I tried {', '.join(names)})" if names else ""
    return f"Sorry, I couldn't finish that: {why}{tried}. Could you ask for less at once?"


def trace_runs(rounds: Sequence[ToolRound], waiting: Collection[ToolCall] = ()) -> tuple[ToolCallRun, ...]:
    """Every call of ``rounds`` as the message's trace keeps it; those in ``waiting`` were not run
    but wait for the person's yes (their result is only what the model was told of that)."""
    return tuple(
        ToolCallRun.of(
            result.call.name,
            json.dumps(dict(result.call.arguments), ensure_ascii=False, default=str),
            result.duration_ms,
            _state(result, waiting),
            "" if result.call in waiting else result.text,
        )
        for done in rounds
        for result in done.results
    )


def _state(result: ToolResult, waiting: Collection[ToolCall]) -> ToolRunState:
    if result.call in waiting:
        return ToolRunState.WAITING
    return ToolRunState.OK if result.ok else ToolRunState.FAILED
