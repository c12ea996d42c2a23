"""The console's history of the metrics: percentiles of a histogram, the one-hour window of
minute samples, counters reset by a reload, and each character's model health. A fake clock: no
test waits."""

from __future__ import annotations

import math

import pytest

from bot.daemon.console._history import KEPT, MetricHistory, quantile
from bot.daemon.console._model_health import ModelState, model_health
from bot.kernel.metrics import Metrics


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def replies(metrics: Metrics, *seconds: float, agent: str = "Ada", outcome: str = "replied") -> None:
    for s in seconds:
        metrics.messages_handled.labels(agent=agent, outcome=outcome).inc()
        metrics.reply_latency.labels(agent=agent, platform="telegram").observe(s)


def test_quantile_interpolates_inside_the_bucket_it_falls_in() -> None:
    bounds = (1.0, 2.0, 4.0, math.inf)
    # 10 observations: 4 at or below 1 s, 4 in (1, 2], 2 in (2, 4].
    counts = [4, 4, 2, 0]
    assert quantile(0.5, bounds, counts) == pytest.approx(1.25)  # rank 5: 1 of the 4 in (1, 2]
    assert quantile(0.95, bounds, counts) == pytest.approx(2.0 + 2.0 * 1.5 / 2)  # rank 9.5
    assert quantile(0.2, bounds, counts) == pytest.approx(0.5)  # the first bucket starts at 0
    assert quantile(1.0, bounds, counts) == pytest.approx(4.0)


def test_quantile_in_the_open_bucket_is_the_last_bound_and_none_without_observations() -> None:
    bounds = (1.0, 2.0, math.inf)
    assert quantile(0.95, bounds, [1, 0, 9]) == 2.0
    assert quantile(0.5, bounds, [0, 0, 0]) is None
    with pytest.raises(ValueError, match="between 0 and 1"):
        quantile(95, bounds, [1, 0, 0])


def test_the_series_has_a_point_per_minute_and_the_current_minute_so_far() -> None:
    metrics, clock = Metrics(), Clock()
    history = MetricHistory(metrics, clock=clock)
    history.sample()  # the daemon starts
    clock.advance(60)
    replies(metrics, 0.3, 0.3, 0.3, 3.0)
    replies(metrics, 0.0, outcome="ignored")
    metrics.model_calls.labels(agent="Ada", model_type="TEXT_LARGE", provider="openai", outcome="ok").inc(10)
    history.sample()
    clock.advance(20)
    replies(metrics, 0.07)

    series = history.series()
    assert series.times == [clock.now - 20, clock.now]
    assert series.outcomes == {"ignored": [1, 0], "replied": [4, 1]}
    # Minute one: 5 latencies, three in (0.25, 0.5], one in (2.5, 5], one at 0 (in the first bucket).
    assert series.p50_s[0] == pytest.approx(0.25 + 0.25 * (2.5 - 1) / 3)
    assert series.p95_s[0] == pytest.approx(2.5 + 2.5 * (4.75 - 4) / 1)
    assert series.p50_s[1] == pytest.approx(0.05 + 0.05 * 0.5)  # one reply, in (0.05, 0.1]
    assert series.model_per_message == [2.0, 0.0]
    totals = series.totals
    assert totals.messages == 6
    assert totals.by_outcome == {"replied": 5, "ignored": 1}
    assert totals.model_per_message == pytest.approx(10 / 6)
    assert totals.p50_s is not None and totals.p95_s is not None and totals.p50_s < totals.p95_s
    assert series.to_json()["totals"] == {
        "messages": 6,
        "by_outcome": {"replied": 5, "ignored": 1},
        "p50_s": totals.p50_s,
        "p95_s": totals.p95_s,
        "model_per_message": totals.model_per_message,
    }


def test_a_minute_without_replies_has_no_latency_and_no_model_rate() -> None:
    metrics, clock = Metrics(), Clock()
    history = MetricHistory(metrics, clock=clock)
    replies(metrics, 1.0)
    history.sample()
    clock.advance(60)
    history.sample()
    clock.advance(60)
    series = history.series()
    assert series.outcomes == {}
    assert series.p50_s == [None, None] and series.model_per_message == [None, None]
    assert series.totals.messages == 0 and series.totals.p50_s is None


def test_before_any_sample_and_with_nothing_handled_the_series_are_empty() -> None:
    history = MetricHistory(Metrics(), clock=Clock())
    series = history.series()
    assert series.times == [] and series.outcomes == {}
    assert series.totals.messages == 0 and series.totals.model_per_message is None


def test_only_the_last_hour_counts_and_only_sixty_samples_are_kept() -> None:
    metrics, clock = Metrics(), Clock()
    history = MetricHistory(metrics, clock=clock)
    history.sample()
    replies(metrics, 0.5, 0.5)  # in the first minute: gone from the window an hour later
    for _ in range(KEPT + 30):
        clock.advance(60)
        history.sample()
    assert len(history) == KEPT
    clock.advance(20)
    replies(metrics, 0.5)
    series = history.series()
    assert series.totals.messages == 1
    # The minutes between the 60 samples kept, and the 20 s since the last one.
    assert len(series.times) == KEPT
    assert series.times[0] == clock.now - 20 - 58 * 60 and series.times[-1] == clock.now


def test_a_counter_that_went_down_was_reset_and_counts_from_zero() -> None:
    metrics, clock = Metrics(), Clock()
    history = MetricHistory(metrics, clock=clock)
    history.sample()
    clock.advance(60)
    replies(metrics, 0.5, 0.5, 0.5)
    history.sample()
    clock.advance(60)
    metrics.forget_agent("Ada")  # reloaded: its series start again
    replies(metrics, 0.5)
    series = history.series()
    assert series.outcomes == {"replied": [3, 1]}
    assert series.p50_s[1] is not None
    # The hour as a whole is the sum of its minutes, the reset included (not 1 - 3).
    assert series.totals.messages == 4 and series.totals.by_outcome == {"replied": 4}
    assert series.totals.p50_s == pytest.approx(0.25 + 0.25 * 2 / 4)


def test_model_health_says_how_the_last_call_went_and_how_many_failed_this_hour() -> None:
    metrics, clock = Metrics(), Clock()
    history = MetricHistory(metrics, clock=clock)

    def call(agent: str, outcome: str, provider: str = "openai") -> None:
        metrics.model_calls.labels(agent=agent, model_type="TEXT_LARGE", provider=provider, outcome=outcome).inc()
        metrics.model_last_call.labels(agent=agent, provider=provider, outcome=outcome).set(clock.now)

    call("Ada", "error")  # before the window: not counted as this hour's
    history.sample()
    clock.advance(30)
    call("Ada", "ok")
    clock.advance(30)
    call("Ada", "error", provider="anthropic")
    call("Brann", "error")
    clock.advance(5)
    call("Brann", "ok")

    health = model_health(history)
    assert set(health) == {"Ada", "Brann"}
    ada = health["Ada"]
    assert ada.state is ModelState.FAILING
    assert ada.providers == ("anthropic", "openai")
    assert ada.last_error_at == clock.now - 5 and ada.last_ok_at == clock.now - 35
    assert ada.last_call_at == ada.last_error_at
    assert (ada.calls_last_hour, ada.errors_last_hour) == (2, 1)
    brann = health["Brann"]
    assert brann.state is ModelState.OK  # it failed, then answered
    assert (brann.calls_last_hour, brann.errors_last_hour) == (2, 1)
    assert brann.last_call_at == clock.now
