"""Each character's models as the daemon's metrics see them: did the last call answer, when, and
how many failed in the last hour."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bot.daemon.console._history import MetricHistory, growth

__all__ = ["ModelHealth", "ModelState", "model_health"]


class ModelState(StrEnum):
    """How a character's last model call went."""

    OK = "ok"
    FAILING = "failing"
    UNUSED = "no call yet"


@dataclass(frozen=True)
class ModelHealth:
    """One character's model calls (Unix seconds for the times)."""

    agent: str
    state: ModelState
    #: The providers it called, by name (``openai``, ``anthropic`` …).
    providers: tuple[str, ...]
    last_ok_at: float | None
    last_error_at: float | None
    calls_last_hour: int
    errors_last_hour: int

    @property
    def last_call_at(self) -> float | None:
        times = [t for t in (self.last_ok_at, self.last_error_at) if t is not None]
        return max(times) if times else None


def model_health(history: MetricHistory) -> dict[str, ModelHealth]:
    """By character name: every character that called a model since the daemon started (a
    character with no entry has made no call)."""
    metrics = history.metrics
    last: dict[str, dict[str, float]] = {}
    providers: dict[str, set[str]] = {}
    for (agent, provider, outcome), child in metrics.model_last_call.items():
        kept = last.setdefault(agent, {})
        kept[outcome] = max(kept.get(outcome, 0.0), child.value)
        providers.setdefault(agent, set()).add(provider)
    for (agent, _type, provider, _outcome), _child in metrics.model_calls.items():
        providers.setdefault(agent, set()).add(provider)
    before, now = history.baseline()
    before_calls = before.model_calls if before is not None else {}
    before_errors = before.model_errors if before is not None else {}
    out: dict[str, ModelHealth] = {}
    for agent in sorted(providers):
        ok_at, error_at = last.get(agent, {}).get("ok"), last.get(agent, {}).get("error")
        if error_at is not None and (ok_at is None or error_at > ok_at):
            state = ModelState.FAILING
        elif ok_at is not None:
            state = ModelState.OK
        else:
            state = ModelState.UNUSED
        out[agent] = ModelHealth(
            agent=agent,
            state=state,
            providers=tuple(sorted(providers[agent])),
            last_ok_at=ok_at,
            last_error_at=error_at,
            calls_last_hour=round(growth(before_calls.get(agent, 0.0), now.model_calls.get(agent, 0.0))),
            errors_last_hour=round(growth(before_errors.get(agent, 0.0), now.model_errors.get(agent, 0.0))),
        )
    return out
