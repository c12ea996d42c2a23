"""``MessageTracer``: what the runtime notes about one message while it is handled, for its trace.

The pipeline opens one per message (:func:`tracing`); the model calls made while handling it —
in its task or in tasks it starts, which inherit the context — are noted in it as they end
(``ModelHandlers`` appends directly: an event listener would cost a task per call on the
hot path). Calls made outside any message (a background task) are noted nowhere. A model
plugin says which model served a call and the tokens the server counted
(:func:`note_model_call`); ``ModelHandlers`` gives each call its own :class:`CallDetails`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from bot.kernel.traces import ModelCall, ToolCallRun

__all__ = [
    "CallDetails",
    "MessageTracer",
    "current_tracer",
    "model_call",
    "note_model_call",
    "note_tool_calls",
    "tracing",
]

# The tracer of the message being handled in this context (a task and the tasks it starts).
_CURRENT: ContextVar[MessageTracer | None] = ContextVar("troupe_message_tracer", default=None)
# The details of the model call under way in this context, while a message is traced.
_CALL: ContextVar[CallDetails | None] = ContextVar("troupe_model_call", default=None)


@dataclass(slots=True)
class MessageTracer:
    """The model calls (and tool calls) made for one message so far."""

    model_calls: list[ModelCall] = field(default_factory=list)
    tool_calls: list[ToolCallRun] = field(default_factory=list)


@contextmanager
def tracing() -> Iterator[MessageTracer]:
    """A new tracer for the message handled inside the block."""
    tracer = MessageTracer()
    token = _CURRENT.set(tracer)
    try:
        yield tracer
    finally:
        _CURRENT.reset(token)


def current_tracer() -> MessageTracer | None:
    """The tracer of the message being handled here, if any."""
    return _CURRENT.get()


@dataclass(slots=True)
class CallDetails:
    """What the plugin that served one model call said of it (empty when it said nothing)."""

    model: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@contextmanager
def model_call(tracer: MessageTracer) -> Iterator[CallDetails]:
    """The details of the one model call made inside the block, for ``tracer``."""
    details = CallDetails()
    token = _CALL.set(details)
    try:
        yield details
    finally:
        _CALL.reset(token)


def note_model_call(model: str, prompt_tokens: object = None, completion_tokens: object = None) -> None:
    """For a model plugin: the model that served the call under way, and the tokens the server
    counted (anything but a whole number is taken as unsaid). Nothing happens outside a traced message."""
    details = _CALL.get()
    if details is not None:
        details.model = model
        details.prompt_tokens = prompt_tokens if type(prompt_tokens) is int else None
        details.completion_tokens = completion_tokens if type(completion_tokens) is int else None


def note_tool_calls(runs: Iterable[ToolCallRun]) -> None:
    """For whatever runs tools for a message: the calls, for its trace. Nothing happens outside a
    traced message."""
    tracer = _CURRENT.get()
    if tracer is not None:
        tracer.tool_calls.extend(runs)
