"""Prometheus metrics: a small registry and troupe's own metrics.

::

    metrics = Metrics()
    metrics.messages_received.labels(agent="Ada", platform="discord").inc()
    with_latency = metrics.model_latency.labels(agent="Ada", model_type="TEXT_LARGE")
    with_latency.observe(1.7)
    metrics.agents.set(3)
    text = metrics.render()          # what GET /metrics serves

The registry speaks the text exposition format 0.0.4 and nothing else, so troupe needs no
client library. Everything runs on the daemon's one event loop, so nothing here takes a lock.
A family is created with fixed label names; ``family.labels(**values)`` returns (and creates on
first use) the child holding one series. A family without labels is used directly.
"""

from __future__ import annotations

import bisect
import itertools
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

__all__ = [
    "Counter",
    "CounterChild",
    "DEFAULT_BUCKETS",
    "Gauge",
    "GaugeChild",
    "Histogram",
    "HistogramChild",
    "Metrics",
    "Registry",
]

#: Bucket bounds (seconds) for latencies, from a quick gate decision to a slow model call.
DEFAULT_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _format_value(value: float) -> str:
    """A sample value as the exposition format writes it (``+Inf``, ``NaN``, ``3``, ``0.25``)."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def _escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _series(name: str, labels: Iterable[tuple[str, str]], value: float) -> str:
    pairs = ",".join(f'{k}="{_escape_label_value(v)}"' for k, v in labels)
    return f"{name}{{{pairs}}} {_format_value(value)}" if pairs else f"{name} {_format_value(value)}"


class CounterChild:
    """One counter series: only goes up."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError(f"a counter only goes up; cannot add {amount}")
        self.value += amount


class GaugeChild:
    """One gauge series: goes up and down."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = float(value)

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount


class HistogramChild:
    """One histogram series: counts per bucket (kept per bucket, summed up when rendered)."""

    __slots__ = ("_bounds", "count", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds  # ends with +Inf
        self.counts = [0] * len(bounds)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        # NaN compares false with every bound; count it only in +Inf rather than in the first bucket.
        index = len(self._bounds) - 1 if math.isnan(value) else bisect.bisect_left(self._bounds, value)
        self.counts[index] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it) for every bucket, ``+Inf`` last."""
        total, out = 0, []
        for bound, n in zip(self._bounds, self.counts, strict=True):
            total += n
            out.append((bound, total))
        return out


Child = TypeVar("Child", CounterChild, GaugeChild, HistogramChild)


class _Family(Generic[Child]):
    """A metric name with fixed label names and one child per combination of label values."""

    type_name = ""

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        if not _METRIC_NAME.fullmatch(name):
            raise ValueError(f"invalid metric name {name!r}")
        for label in labelnames:
            if not _LABEL_NAME.fullmatch(label) or label.startswith("__"):
                raise ValueError(f"invalid label name {label!r} for {name}")
        if len(set(labelnames)) != len(labelnames):
            raise ValueError(f"duplicate label names for {name}: {list(labelnames)}")
        self.name = name
        self.help = help
        self.labelnames: tuple[str, ...] = tuple(labelnames)
        self._children: dict[tuple[str, ...], Child] = {}
        if not self.labelnames:
            # Unlabelled families always have their one series, so it shows as 0 before first use.
            self._children[()] = self._new_child()

    def _new_child(self) -> Child:
        raise NotImplementedError

    def labels(self, **values: str) -> Child:
        """The child for these label values (every label name, no other), created on first use."""
        if set(values) != set(self.labelnames):
            raise ValueError(f"{self.name} takes labels {list(self.labelnames)}, not {sorted(values)}")
        key = tuple(str(values[label]) for label in self.labelnames)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._new_child()
        return child

    def items(self) -> list[tuple[tuple[str, ...], Child]]:
        """Every series: its label values (in the order of ``labelnames``) and its child."""
        return list(self._children.items())

    def forget(self, **match: str) -> int:
        """Remove every series whose labels include all of ``match``; returns how many went."""
        unknown = set(match) - set(self.labelnames)
        if unknown:
            raise ValueError(f"{self.name} has no labels {sorted(unknown)}")
        indexes = [(self.labelnames.index(k), str(v)) for k, v in match.items()]
        doomed = [key for key in self._children if all(key[i] == v for i, v in indexes)]
        for key in doomed:
            del self._children[key]
        return len(doomed)

    def _unlabelled(self) -> Child:
        if self.labelnames:
            raise ValueError(f"{self.name} has labels {list(self.labelnames)}; call .labels(...) first")
        return self._children[()]

    def _sorted_children(self) -> Iterator[tuple[list[tuple[str, str]], Child]]:
        for key in sorted(self._children):
            yield list(zip(self.labelnames, key, strict=True)), self._children[key]

    def _samples(self) -> Iterator[str]:
        raise NotImplementedError

    def render_lines(self) -> Iterator[str]:
        yield f"# HELP {self.name} {_escape_help(self.help)}"
        yield f"# TYPE {self.name} {self.type_name}"
        yield from self._samples()


class Counter(_Family[CounterChild]):
    """A counter family; name it ``..._total``."""

    type_name = "counter"

    def _new_child(self) -> CounterChild:
        return CounterChild()

    def inc(self, amount: float = 1.0) -> None:
        self._unlabelled().inc(amount)

    def _samples(self) -> Iterator[str]:
        for labels, child in self._sorted_children():
            yield _series(self.name, labels, child.value)


class Gauge(_Family[GaugeChild]):
    """A gauge family."""

    type_name = "gauge"

    def _new_child(self) -> GaugeChild:
        return GaugeChild()

    def set(self, value: float) -> None:
        self._unlabelled().set(value)

    def inc(self, amount: float = 1.0) -> None:
        self._unlabelled().inc(amount)

    def dec(self, amount: float = 1.0) -> None:
        self._unlabelled().dec(amount)

    def _samples(self) -> Iterator[str]:
        for labels, child in self._sorted_children():
            yield _series(self.name, labels, child.value)


class Histogram(_Family[HistogramChild]):
    """A histogram family: ``_bucket{le=...}`` (cumulative, ending at ``+Inf``), ``_sum``, ``_count``."""

    type_name = "histogram"

    def __init__(
        self, name: str, help: str, labelnames: Sequence[str] = (), buckets: Sequence[float] = DEFAULT_BUCKETS
    ) -> None:
        if "le" in labelnames:
            raise ValueError(f"{name}: a histogram cannot have a label named le")
        bounds = [float(b) for b in buckets]
        if not bounds or any(a >= b for a, b in itertools.pairwise(bounds)) or any(math.isnan(b) for b in bounds):
            raise ValueError(f"{name}: buckets must be increasing numbers, not {list(buckets)}")
        if bounds[-1] != math.inf:
            bounds.append(math.inf)
        self.bounds = tuple(bounds)
        super().__init__(name, help, labelnames)

    def _new_child(self) -> HistogramChild:
        return HistogramChild(self.bounds)

    def observe(self, value: float) -> None:
        self._unlabelled().observe(value)

    def _samples(self) -> Iterator[str]:
        for labels, child in self._sorted_children():
            for bound, count in child.cumulative():
                yield _series(f"{self.name}_bucket", [*labels, ("le", _format_value(bound))], count)
            yield _series(f"{self.name}_sum", labels, child.sum)
            yield _series(f"{self.name}_count", labels, child.count)


class _Computed:
    """A family of one unlabelled sample computed when rendered; skipped when the value is ``None``."""

    def __init__(self, name: str, help: str, type_name: str, value: Callable[[], float | None]) -> None:
        self.name, self.help, self.type_name, self._value = name, help, type_name, value

    def render_lines(self) -> Iterator[str]:
        value = self._value()
        if value is None:
            return
        yield f"# HELP {self.name} {_escape_help(self.help)}"
        yield f"# TYPE {self.name} {self.type_name}"
        yield _series(self.name, (), value)


class Registry:
    """Families in the order they were created; :meth:`render` writes them all."""

    def __init__(self) -> None:
        self._families: list[_Family[Any] | _Computed] = []
        self._names: set[str] = set()

    def _add(self, family: _Family[Any] | _Computed) -> None:
        if family.name in self._names:
            raise ValueError(f"metric {family.name} is already registered")
        self._names.add(family.name)
        self._families.append(family)

    def counter(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Counter:
        family = Counter(name, help, labelnames)
        self._add(family)
        return family

    def gauge(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Gauge:
        family = Gauge(name, help, labelnames)
        self._add(family)
        return family

    def histogram(
        self, name: str, help: str, labelnames: Sequence[str] = (), buckets: Sequence[float] = DEFAULT_BUCKETS
    ) -> Histogram:
        family = Histogram(name, help, labelnames, buckets)
        self._add(family)
        return family

    def computed(self, name: str, help: str, type_name: str, value: Callable[[], float | None]) -> None:
        """A one-sample family whose value is read at render time (``None`` leaves it out)."""
        self._add(_Computed(name, help, type_name, value))

    @property
    def families(self) -> list[Counter | Gauge | Histogram]:
        """The label-carrying families (not the computed ones)."""
        return [f for f in self._families if isinstance(f, (Counter, Gauge, Histogram))]

    def render(self) -> str:
        """Everything in text exposition format 0.0.4."""
        return "".join(f"{line}\n" for family in self._families for line in family.render_lines())


def _resident_memory_bytes() -> float | None:
    # procfs reads do not block on disk, so this is fine on the event loop. Absent off Linux.
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[1])
        return float(pages * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        return None


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


class Metrics:
    """troupe's metrics for one daemon."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.registry = r = Registry()
        self.start_time = clock()
        self.messages_received = r.counter(
            "troupe_messages_received_total", "Messages the agents received from chat platforms.", ("agent", "platform")
        )
        self.messages_sent = r.counter(
            "troupe_messages_sent_total", "Messages the agents sent to chat platforms.", ("agent", "platform")
        )
        self.gate_decisions = r.counter(
            "troupe_gate_decisions_total", "Should-respond gate decisions, by decision.", ("agent", "decision")
        )
        self.model_calls = r.counter(
            "troupe_model_calls_total",
            "Model calls by model type, provider and outcome (ok or error).",
            ("agent", "model_type", "provider", "outcome"),
        )
        self.model_latency = r.histogram(
            "troupe_model_latency_seconds", "How long model calls took.", ("agent", "model_type")
        )
        self.model_answers = r.counter(
            "troupe_model_answers_total",
            "Model answers by what they were for (plan, should_respond, troupe_decision, reflection) "
            "and whether they parsed (parsed or unparsed).",
            ("agent", "call", "outcome"),
        )
        self.reply_latency = r.histogram(
            "troupe_reply_latency_seconds", "From a message received to the first reply sent.", ("agent", "platform")
        )
        self.messages_handled = r.counter(
            "troupe_messages_handled_total",
            "Messages the pipeline finished, by how they ended (replied, ignored, "
            "send_failed, model_unreachable, duplicate …).",
            ("agent", "outcome"),
        )
        self.in_flight = r.gauge("troupe_messages_in_flight", "Messages being handled (the queue depth).", ("agent",))
        self.reconnects = r.counter(
            "troupe_reconnects_total",
            "Times a platform connection was attempted again after failing.",
            ("agent", "platform"),
        )
        self.platform_connected = r.gauge(
            "troupe_platform_connected", "1 while the platform connection is up, else 0.", ("agent", "platform")
        )
        self.token_refused = r.gauge(
            "troupe_platform_token_refused",
            "1 while the platform refuses the bot token (revoked: set a new one and reload), else 0.",
            ("agent", "platform"),
        )
        self.agents = r.gauge(
            "troupe_agents", "Agents started, with a platform up or not (troupe_platform_connected says which)."
        )
        self.reloads = r.counter("troupe_reloads_total", "Character reloads, by outcome.", ("outcome",))
        self.store_writable = r.gauge("troupe_store_writable", "1 while the database can write, else 0.")
        self.store_state = r.gauge(
            "troupe_store_state",
            "1 for the database's state now (ok, disk full, locked, corrupt, read-only, failing), 0 for the others.",
            ("cause",),
        )
        self.model_requests_waiting = r.gauge(
            "troupe_model_requests_waiting",
            "Model requests waiting for their turn at a server that answers so many at a time (OPENAI_SERVER=local).",
            ("server",),
        )
        self.model_last_call = r.gauge(
            "troupe_model_last_call_timestamp_seconds",
            "Unix time of the last model call, by provider and outcome (ok or error): how long ago a model "
            "last answered, or last failed.",
            ("agent", "provider", "outcome"),
        )
        start_time = self.start_time
        r.computed("troupe_start_time_seconds", "Unix time the daemon started.", "gauge", lambda: start_time)
        r.computed("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", _resident_memory_bytes)
        r.computed("process_cpu_seconds_total", "User and system CPU time spent, in seconds.", "counter", _cpu_seconds)

    def forget_agent(self, agent: str) -> None:
        """Drop every series of this agent (one removed by a reload must not linger as stale series)."""
        for family in self.registry.families:
            if "agent" in family.labelnames:
                family.forget(agent=agent)

    def render(self) -> str:
        return self.registry.render()
