"""``MessageTracer``: what the runtime notes about one message while it is handled, for its trace.

The pipeline opens one per message (:func:`tracing`); the model calls made while handling it —
in its task or in tasks it starts, which inherit the context — are noted in it as they end
(``ModelHandlers`` appends directly: an event listener would cost a task per call on the
hot path). Calls made outside any message (a background task) are noted nowhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from bot.kernel.traces import ModelCall

__all__ = ["MessageTracer", "current_tracer", "tracing"]

# The tracer of the message being handled in this context (a task and the tasks it starts).
_CURRENT: ContextVar[MessageTracer | None] = ContextVar("troupe_message_tracer", default=None)


@dataclass(slots=True)
class MessageTracer:
    """The model calls made for one message so far."""

    model_calls: list[ModelCall] = field(default_factory=list)


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
