"""``MessageTrace``: how the handling of one message a character heard ended, and why.

One record per (character, message): who said it where and when, the outcome and its reason
(the gate's rule, the troupe's decision), the model calls made for it, the tools called (with
their arguments and a short cut of what they returned), the actions run, and the reply's ids. What happened, never what was asked: no prompt text and no secret is kept.
``troupe why`` prints these; the store keeps them for a bounded number of days.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from bot.kernel.messages import Status

__all__ = ["ActionRun", "MessageTrace", "ModelCall", "ToolCallRun", "ToolRunState", "TraceQuery"]

# What a trace keeps of a tool call's arguments and result: enough to see what happened.
TOOL_ARGUMENTS_CHARS = 300
TOOL_RESULT_CHARS = 300


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call made for the message (a failed attempt is one too)."""

    model_type: str
    """``ModelType``'s value (``TEXT_LARGE``)."""
    provider: str
    """The plugin that served it (``openai``)."""
    duration_ms: float
    ok: bool = True
    error: str = ""
    """The exception's name when it failed."""
    model: str = ""
    """The model's name, when the plugin said it."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    """The tokens the server counted, when it said them."""

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {"type": self.model_type, "provider": self.provider, "ms": self.duration_ms}
        if self.model:
            body["model"] = self.model
        if self.prompt_tokens is not None:
            body["promptTokens"] = self.prompt_tokens
        if self.completion_tokens is not None:
            body["completionTokens"] = self.completion_tokens
        if not self.ok:
            body["ok"] = False
            body["error"] = self.error
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, object]) -> ModelCall:
        ms, prompt, completion = body.get("ms"), body.get("promptTokens"), body.get("completionTokens")
        return cls(
            model_type=str(body.get("type", "")),
            provider=str(body.get("provider", "")),
            duration_ms=float(ms) if isinstance(ms, int | float) else 0.0,
            ok=body.get("ok", True) is not False,
            error=str(body.get("error", "")),
            model=str(body.get("model", "")),
            prompt_tokens=prompt if isinstance(prompt, int) else None,
            completion_tokens=completion if isinstance(completion, int) else None,
        )


class ToolRunState(StrEnum):
    """How a tool call made for a message ended."""

    OK = "ok"
    FAILED = "failed"
    WAITING = "waiting"
    """Not run: it changes things, and runs only once the person presses yes under the reply."""


@dataclass(frozen=True, slots=True)
class ToolCallRun:
    """One tool call made for the message: what was asked, how long it took, what it gave."""

    name: str
    arguments: str
    """The arguments as JSON, cut to :data:`TOOL_ARGUMENTS_CHARS`."""
    duration_ms: float
    state: ToolRunState
    result: str
    """The start of the result (or of the error), cut to :data:`TOOL_RESULT_CHARS`; empty for a
    call that waits."""

    @property
    def ok(self) -> bool:
        return self.state is ToolRunState.OK

    @classmethod
    def of(cls, name: str, arguments: str, duration_ms: float, state: ToolRunState, result: str) -> ToolCallRun:
        """A run with ``arguments`` and ``result`` cut to what a trace keeps."""
        return cls(name, _cut(arguments, TOOL_ARGUMENTS_CHARS), duration_ms, state, _cut(result, TOOL_RESULT_CHARS))

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "arguments": self.arguments,
            "ms": self.duration_ms,
            "ok": self.ok,  # what traces written before ``state`` had (and a daemon rolled back reads)
            "state": self.state.value,
            "result": self.result,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, object]) -> ToolCallRun:
        ms = body.get("ms")
        return cls(
            name=str(body.get("name", "")),
            arguments=str(body.get("arguments", "")),
            duration_ms=float(ms) if isinstance(ms, int | float) else 0.0,
            state=_run_state(body),
            result=str(body.get("result", "")),
        )


def _run_state(body: Mapping[str, object]) -> ToolRunState:
    """A stored run's state; a trace written before there were states says only ``ok``."""
    state = body.get("state")
    if isinstance(state, str) and state in {s.value for s in ToolRunState}:
        return ToolRunState(state)
    return ToolRunState.OK if body.get("ok") is True else ToolRunState.FAILED


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class ActionRun:
    """One action run for the message, and whether it succeeded."""

    name: str
    ok: bool

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok}

    @classmethod
    def from_json(cls, body: Mapping[str, object]) -> ActionRun:
        return cls(name=str(body.get("name", "")), ok=body.get("ok") is True)


@dataclass(frozen=True, slots=True)
class MessageTrace:
    """How one character's handling of one message ended (times in ms since the epoch)."""

    message_id: str
    agent_id: str
    room_id: str
    entity_id: str
    status: Status
    reason: str = ""
    agent_name: str = ""
    entity_name: str = ""
    platform: str = ""
    world_id: str | None = None
    said_at: int = 0
    """When the message was said (as the platform dated it)."""
    ended_at: int = 0
    """When its handling ended: what listings sort by and retention counts from."""
    duration_ms: int = 0
    rule: str = ""
    """The gate's rule that decided (``named``, ``muted``, ``undecided`` …)."""
    decision: str = ""
    """Who decided when the rules did not (``troupe: …``, ``small model``), and what it picked."""
    model_calls: tuple[ModelCall, ...] = ()
    actions: tuple[ActionRun, ...] = ()
    reply_ids: tuple[str, ...] = ()
    """The ids of the reply's messages, as stored (in the same room)."""
    error: str = ""
    """What failed (the exception's name), when the outcome is an error."""
    tool_calls: tuple[ToolCallRun, ...] = ()
    """The tools the model called for the message, in the order they were asked."""

    def body(self) -> dict[str, object]:
        """What the store keeps besides the columns it filters on, as JSON."""
        body = self._columns()
        if self.tool_calls:  # absent when none: traces written before tools read the same
            body["toolCalls"] = [c.to_json() for c in self.tool_calls]
        return body

    def _columns(self) -> dict[str, object]:
        return {
            "agentName": self.agent_name,
            "entityName": self.entity_name,
            "platform": self.platform,
            "worldId": self.world_id,
            "saidAt": self.said_at,
            "durationMs": self.duration_ms,
            "reason": self.reason,
            "rule": self.rule,
            "decision": self.decision,
            "modelCalls": [c.to_json() for c in self.model_calls],
            "actions": [a.to_json() for a in self.actions],
            "replyIds": list(self.reply_ids),
            "error": self.error,
        }

    @classmethod
    def of_row(
        cls,
        *,
        message_id: str,
        agent_id: str,
        room_id: str,
        entity_id: str,
        status: str,
        ended_at: int,
        body: Mapping[str, object],
    ) -> MessageTrace:
        """A trace as the store read it (``body`` as :meth:`body` wrote it)."""

        def text(key: str) -> str:
            value = body.get(key)
            return value if isinstance(value, str) else ""

        def number(key: str) -> int:
            value = body.get(key)
            return int(value) if isinstance(value, int | float) else 0

        def items(key: str) -> list[Mapping[str, object]]:
            value = body.get(key)
            return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []

        replies = body.get("replyIds")
        world = body.get("worldId")
        return cls(
            message_id=message_id,
            agent_id=agent_id,
            room_id=room_id,
            entity_id=entity_id,
            status=Status(status),
            reason=text("reason"),
            agent_name=text("agentName"),
            entity_name=text("entityName"),
            platform=text("platform"),
            world_id=world if isinstance(world, str) else None,
            said_at=number("saidAt"),
            ended_at=ended_at,
            duration_ms=number("durationMs"),
            rule=text("rule"),
            decision=text("decision"),
            model_calls=tuple(ModelCall.from_json(c) for c in items("modelCalls")),
            actions=tuple(ActionRun.from_json(a) for a in items("actions")),
            reply_ids=tuple(r for r in replies if isinstance(r, str)) if isinstance(replies, list) else (),
            error=text("error"),
            tool_calls=tuple(ToolCallRun.from_json(c) for c in items("toolCalls")),
        )

    def to_json(self) -> dict[str, object]:
        """The whole trace as JSON (``troupe why --json``)."""
        return {
            "messageId": self.message_id,
            "agentId": self.agent_id,
            "roomId": self.room_id,
            "entityId": self.entity_id,
            "status": self.status.value,
            "endedAt": self.ended_at,
            **self.body(),
        }


@dataclass(frozen=True, slots=True)
class TraceQuery:
    """Which traces a listing wants (``Store.find_traces``): each field None for any, else one of
    its values (an empty tuple matches nothing); all of them together."""

    message_ids: tuple[str, ...] | None = None
    room_ids: tuple[str, ...] | None = None
    entity_ids: tuple[str, ...] | None = None
    statuses: tuple[Status, ...] | None = None
    before: tuple[int, str] | None = None
    """Only traces listed after this one, as ``(ended_at, message_id)``: the next page of a
    listing that ended there (listings run newest first, by ``ended_at`` then ``message_id``)."""

    def matches_nothing(self) -> bool:
        """Whether a field is an empty choice, so no trace can match."""
        chosen = (self.message_ids, self.room_ids, self.entity_ids, self.statuses)
        return any(values is not None and not values for values in chosen)
