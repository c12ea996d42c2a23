"""The words a :class:`~bot.kernel.traces.MessageTrace` is told in: ``troupe why`` prints them,
the console's "Why" page shows them (one wording for both).

A trace is told as a heading (``message m-1, heard by Ada``) and labelled lines (``from``,
``when``, ``outcome``, ``gate``, one ``model`` per call, one ``tool`` per tool call, ``actions``,
``reply``, ``error``); a
listing tells each trace on one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from bot.kernel.traces import MessageTrace, ModelCall, ToolCallRun, ToolRunState

__all__ = [
    "TraceLine",
    "describe",
    "heading",
    "model_call",
    "outcome",
    "summary",
    "tool_call",
    "trace_lines",
    "when",
]

#: The width of a line's label in a terminal (``  outcome   replied``).
_LABEL_WIDTH = 10


@dataclass(frozen=True, slots=True)
class TraceLine:
    """One labelled line of a trace: ``outcome`` → ``ignored: small model: IGNORE``."""

    label: str
    text: str


def when(ms: int) -> str:
    """A time in ms since the epoch as UTC, to the second (``2024-01-02 03:04:00``)."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _count(tokens: int | None) -> str:
    return "?" if tokens is None else str(tokens)


def outcome(trace: MessageTrace) -> str:
    """The outcome and its reason (``ignored: small model: IGNORE``)."""
    return f"{trace.status.value}: {trace.reason}" if trace.reason else trace.status.value


def model_call(call: ModelCall) -> str:
    """One model call: type, provider and model, duration, tokens, whether it failed."""
    state = "" if call.ok else f", failed ({call.error})"
    model = f" ({call.model})" if call.model else ""
    tokens = ""
    if call.prompt_tokens is not None or call.completion_tokens is not None:
        tokens = f", tokens {_count(call.prompt_tokens)} in, {_count(call.completion_tokens)} out"
    return f"{call.model_type} via {call.provider}{model}, {call.duration_ms:.0f} ms{tokens}{state}"


def tool_call(call: ToolCallRun) -> str:
    """One tool call: name and arguments, duration, whether it failed, the start of its result;
    or that it waits for the person's yes."""
    if call.state is ToolRunState.WAITING:
        return f"{call.name} {call.arguments}, not run: waiting for the person to press yes"
    return f"{call.name} {call.arguments}, {call.duration_ms:.0f} ms, {call.state.value}: {call.result}"


def heading(trace: MessageTrace) -> str:
    return f"message {trace.message_id}, heard by {trace.agent_name or trace.agent_id}"


def _room(trace: MessageTrace, room_name: str) -> str:
    return f"{room_name} ({trace.room_id})" if room_name else trace.room_id


def trace_lines(trace: MessageTrace, *, room_name: str = "") -> list[TraceLine]:
    """The whole trace, line by line; ``room_name`` (when the caller knows it) names its room."""
    who = f"{trace.entity_name} ({trace.entity_id})" if trace.entity_name else trace.entity_id
    where = f"room {_room(trace, room_name)}" + (f", world {trace.world_id}" if trace.world_id else "")
    lines = [
        TraceLine("from", f"{who} on {trace.platform or 'an unknown platform'}, {where}"),
        TraceLine("when", f"said {when(trace.said_at)} UTC, handled in {trace.duration_ms} ms"),
        TraceLine("outcome", outcome(trace)),
    ]
    if trace.rule:
        lines.append(TraceLine("gate", trace.rule + (f"; decided by {trace.decision}" if trace.decision else "")))
    lines += [TraceLine("model", model_call(call)) for call in trace.model_calls]
    lines += [TraceLine("tool", tool_call(call)) for call in trace.tool_calls]
    if trace.actions:
        lines.append(TraceLine("actions", ", ".join(f"{a.name} {'ok' if a.ok else 'failed'}" for a in trace.actions)))
    if trace.reply_ids:
        lines.append(TraceLine("reply", f"{', '.join(trace.reply_ids)} (in room {_room(trace, room_name)})"))
    if trace.error:
        lines.append(TraceLine("error", trace.error))
    return lines


def describe(trace: MessageTrace, *, room_name: str = "") -> str:
    """The whole trace of one message, as ``troupe why MESSAGE`` prints it."""
    rows = [heading(trace)]
    rows += [f"  {line.label:<{_LABEL_WIDTH}}{line.text}" for line in trace_lines(trace, room_name=room_name)]
    return "\n".join(rows)


def summary(trace: MessageTrace) -> str:
    """One message on one line: when, who, which character, the outcome and why, and its id."""
    who = trace.entity_name or trace.entity_id
    return (
        f"{when(trace.said_at)}  {who} -> {trace.agent_name or trace.agent_id}  {outcome(trace)}  [{trace.message_id}]"
    )
