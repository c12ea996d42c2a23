"""How many of the model's answers parsed, per kind of call: ``troupe_model_answers_total``,
and a debug line per answer, so that a weak model's failures are seen (and a benchmark can
report the rate with a JSON schema and without)."""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["AnswerKind", "count_answer"]

_log = logging.getLogger(__name__)


class AnswerKind(StrEnum):
    """What a model call whose answer is parsed was for."""

    PLAN = "plan"
    SHOULD_RESPOND = "should_respond"
    TROUPE_DECISION = "troupe_decision"
    REFLECTION = "reflection"


def count_answer(runtime: AgentRuntime, kind: AnswerKind, *, parsed: bool) -> None:
    """Count one answer of ``kind``: ``parsed`` when it gave what the call needs."""
    outcome = "parsed" if parsed else "unparsed"
    runtime.metrics.model_answers.labels(agent=runtime.character.name, call=kind.value, outcome=outcome).inc()
    _log.debug("%s: %s answer %s", runtime.character.name, kind.value, outcome)
