"""The last hour of the daemon's metrics, one sample a minute, for the Troupe page's plots.

The daemon's :class:`~bot.kernel.metrics.Metrics` only count up since it started; a plot of the
last hour needs what they were a minute ago, and a minute before that. :class:`MetricHistory`
copies the counters it plots once a minute (60 samples kept: bounded whatever runs) and turns
the differences into series: messages by outcome, reply latency p50 and p95, and model requests
per message, for each minute, and the current minute so far read live.

Everything is read on the event loop, as the metrics are written, so nothing takes a lock. A
counter that went down was reset (an agent reloaded): it counts from zero again.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from bot.kernel.metrics import Metrics

__all__ = ["INTERVAL_S", "KEPT", "WINDOW_S", "MetricHistory", "Sample", "Series", "Totals", "growth", "quantile"]

#: How often a sample is taken.
INTERVAL_S = 60.0
#: How many samples are kept: an hour of them.
KEPT = 60
#: How far back the series go.
WINDOW_S = 3600.0

K = TypeVar("K", bound=Hashable)

#: (agent, outcome) → messages handled so far.
Handled = dict[tuple[str, str], float]
#: (agent, platform) → reply latencies so far, per bucket (not cumulative).
Latencies = dict[tuple[str, str], tuple[int, ...]]


@dataclass(frozen=True)
class Sample:
    """The plotted counters at one moment (Unix seconds)."""

    at: float
    handled: Handled
    latency: Latencies
    #: Model calls so far, by agent.
    model_calls: dict[str, float]
    #: Failed model calls so far, by agent.
    model_errors: dict[str, float]


@dataclass(frozen=True)
class Totals:
    """The whole window at once."""

    messages: int
    by_outcome: dict[str, int]
    p50_s: float | None
    p95_s: float | None
    model_per_message: float | None


@dataclass(frozen=True)
class Series:
    """What the page plots: for each interval (ending at ``times[i]``) its values; ``None`` where
    nothing was measured (no reply in that minute)."""

    times: list[float]
    outcomes: dict[str, list[int]]
    p50_s: list[float | None]
    p95_s: list[float | None]
    model_per_message: list[float | None]
    totals: Totals
    window_s: float = WINDOW_S

    def to_json(self) -> dict[str, object]:
        totals = self.totals
        return {
            "window_s": self.window_s,
            "times": self.times,
            "outcomes": self.outcomes,
            "p50_s": self.p50_s,
            "p95_s": self.p95_s,
            "model_per_message": self.model_per_message,
            "totals": {
                "messages": totals.messages,
                "by_outcome": totals.by_outcome,
                "p50_s": totals.p50_s,
                "p95_s": totals.p95_s,
                "model_per_message": totals.model_per_message,
            },
        }


def quantile(q: float, bounds: Sequence[float], counts: Sequence[int]) -> float | None:
    """The ``q`` quantile (0.5 for the median) of a histogram: ``counts[i]`` observations at or below
    ``bounds[i]`` and above the bound before it (the last bound is +Inf). Interpolated linearly
    inside the bucket it falls in, as Prometheus' ``histogram_quantile`` does; in the +Inf bucket,
    the last finite bound. None without observations."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"a quantile is between 0 and 1, not {q}")
    total = sum(counts)
    if total <= 0:
        return None
    rank = q * total
    below, lower = 0, 0.0
    for bound, n in zip(bounds, counts, strict=True):
        if n and below + n >= rank:
            if math.isinf(bound):
                return lower
            return lower + (bound - lower) * max(0.0, rank - below) / n
        below += n
        if not math.isinf(bound):
            lower = bound
    return lower


def growth(old: float, new: float) -> float:
    """How much a counter grew from ``old`` to ``new``; one that went down was reset (its agent
    was reloaded) and counts from zero."""
    return new if new < old else new - old


def _grown(before: Mapping[K, float], now: Mapping[K, float]) -> dict[K, float]:
    """How much each counter grew."""
    return {key: growth(before.get(key, 0.0), value) for key, value in now.items()}


def _grown_buckets(before: Latencies, now: Latencies) -> list[int] | None:
    """The observations each bucket gained, summed over every series; None when none have buckets."""
    total: list[int] | None = None
    for key, counts in now.items():
        old = before.get(key)
        if old is None or sum(counts) < sum(old):
            gained = list(counts)
        else:
            gained = [n - o for n, o in zip(counts, old, strict=True)]
        total = gained if total is None else [a + b for a, b in zip(total, gained, strict=True)]
    return total


@dataclass
class _Interval:
    """What happened between two samples."""

    end: float
    outcomes: dict[str, int] = field(default_factory=dict)
    buckets: list[int] | None = None
    model_calls: float = 0.0

    @property
    def messages(self) -> int:
        return sum(self.outcomes.values())

    @classmethod
    def summed(cls, intervals: Sequence[_Interval], end: float) -> _Interval:
        """The intervals as one: summed minute by minute, so that a counter reset between two
        samples counts as it does in the plots."""
        whole = cls(end)
        for i in intervals:
            for name, n in i.outcomes.items():
                whole.outcomes[name] = whole.outcomes.get(name, 0) + n
            if i.buckets is not None:
                whole.buckets = (
                    list(i.buckets)
                    if whole.buckets is None
                    else [a + b for a, b in zip(whole.buckets, i.buckets, strict=True)]
                )
            whole.model_calls += i.model_calls
        return whole


class MetricHistory:
    """Samples ``metrics`` every ``interval_s`` (:meth:`run`), keeps the last ``kept``, and makes
    :class:`Series` of them (:meth:`series`).

    ``clock`` gives Unix seconds: the page's axis shows wall-clock time.
    """

    def __init__(
        self,
        metrics: Metrics,
        *,
        clock: Callable[[], float] = time.time,
        interval_s: float = INTERVAL_S,
        kept: int = KEPT,
        window_s: float = WINDOW_S,
    ) -> None:
        self.metrics = metrics
        self.interval_s = interval_s
        self.window_s = window_s
        self._clock = clock
        self._samples: deque[Sample] = deque(maxlen=kept)

    def __len__(self) -> int:
        return len(self._samples)

    def read(self) -> Sample:
        """The counters now (not kept)."""
        m = self.metrics
        handled: Handled = {}
        for (agent, outcome), child in m.messages_handled.items():
            handled[agent, outcome] = child.value
        latency: Latencies = {(agent, platform): tuple(c.counts) for (agent, platform), c in m.reply_latency.items()}
        calls: dict[str, float] = {}
        errors: dict[str, float] = {}
        for (agent, _type, _provider, outcome), child in m.model_calls.items():
            calls[agent] = calls.get(agent, 0.0) + child.value
            if outcome == "error":
                errors[agent] = errors.get(agent, 0.0) + child.value
        return Sample(self._clock(), handled, latency, calls, errors)

    def sample(self) -> Sample:
        """Take a sample and keep it (the oldest goes when ``kept`` are kept)."""
        taken = self.read()
        self._samples.append(taken)
        return taken

    async def run(self) -> None:
        """A sample every ``interval_s``, until cancelled (the first one is the caller's)."""
        while True:
            await asyncio.sleep(self.interval_s)
            self.sample()

    def _window(self) -> list[Sample]:
        """The kept samples inside the window, oldest first, then the counters now."""
        now = self.read()
        since = now.at - self.window_s
        return [*(s for s in self._samples if since <= s.at < now.at), now]

    def baseline(self) -> tuple[Sample | None, Sample]:
        """The oldest sample inside the window (None before the first) and the counters now."""
        window = self._window()
        return (window[0] if len(window) > 1 else None), window[-1]

    def series(self) -> Series:
        """Each minute of the window (the last one so far), and the window as a whole."""
        window = self._window()
        intervals = [self._interval(before, after) for before, after in itertools.pairwise(window)]
        whole = _Interval.summed(intervals, window[-1].at)
        names = sorted({name for i in intervals for name in i.outcomes})
        bounds = self.metrics.reply_latency.bounds
        return Series(
            times=[i.end for i in intervals],
            outcomes={name: [i.outcomes.get(name, 0) for i in intervals] for name in names},
            p50_s=[_quantile(0.5, bounds, i.buckets) for i in intervals],
            p95_s=[_quantile(0.95, bounds, i.buckets) for i in intervals],
            model_per_message=[_per_message(i) for i in intervals],
            totals=Totals(
                messages=whole.messages,
                by_outcome=dict(sorted(whole.outcomes.items(), key=lambda item: -item[1])),
                p50_s=_quantile(0.5, bounds, whole.buckets),
                p95_s=_quantile(0.95, bounds, whole.buckets),
                model_per_message=_per_message(whole),
            ),
            window_s=self.window_s,
        )

    @staticmethod
    def _interval(before: Sample, after: Sample) -> _Interval:
        outcomes: dict[str, int] = {}
        for (_agent, outcome), grown in _grown(before.handled, after.handled).items():
            outcomes[outcome] = outcomes.get(outcome, 0) + round(grown)
        return _Interval(
            end=after.at,
            outcomes={name: n for name, n in outcomes.items() if n},
            buckets=_grown_buckets(before.latency, after.latency),
            model_calls=sum(_grown(before.model_calls, after.model_calls).values()),
        )


def _quantile(q: float, bounds: Sequence[float], buckets: Iterable[int] | None) -> float | None:
    return None if buckets is None else quantile(q, bounds, list(buckets))


def _per_message(interval: _Interval) -> float | None:
    return interval.model_calls / interval.messages if interval.messages else None
