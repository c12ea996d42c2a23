"""The Prometheus registry: exact exposition text, escaping, histograms, forgetting an agent."""

from __future__ import annotations

import math
import re

import pytest

from bot.kernel.metrics import Counter, Gauge, Histogram, Metrics, Registry

# One sample line of text format 0.0.4: name, optional {labels}, value (no timestamps from us).
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
_SAMPLE = re.compile(
    rf"(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{{(?:{_LABEL}(?:,{_LABEL})*)?\}})? "
    r"(?P<value>[+-]?Inf|NaN|[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
)
_HELP = re.compile(r"# HELP (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*) (?:[^\\\n]|\\[\\n])*")
_TYPE = re.compile(r"# TYPE (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*) (?P<type>counter|gauge|histogram|summary|untyped)")


def first_group(pattern: str, text: str, flags: int = 0) -> str:
    found = re.search(pattern, text, flags)
    assert found is not None, f"{pattern!r} not in {text!r}"
    return found[1]


def check_exposition(text: str) -> dict[str, str]:
    """Fail unless ``text`` is valid exposition format; returns each family's type."""
    assert text.endswith("\n"), "the text must end with a newline"
    helped: set[str] = set()
    types: dict[str, str] = {}
    for number, line in enumerate(text[:-1].split("\n"), 1):
        if m := _HELP.fullmatch(line):
            assert m["name"] not in helped, f"line {number}: second HELP for {m['name']}"
            helped.add(m["name"])
        elif m := _TYPE.fullmatch(line):
            assert m["name"] in helped, f"line {number}: TYPE before HELP for {m['name']}"
            assert m["name"] not in types, f"line {number}: second TYPE for {m['name']}"
            types[m["name"]] = m["type"]
        else:
            m = _SAMPLE.fullmatch(line)
            assert m, f"line {number} is not a sample: {line!r}"
            name = m["name"]
            family = next((f for f in (name, re.sub(r"_(bucket|sum|count)$", "", name)) if f in types), None)
            assert family is not None, f"line {number}: {name} has no HELP/TYPE before it"
            if family != name:
                assert types[family] == "histogram", f"line {number}: {name} suffix on a {types[family]}"
    return types


@pytest.mark.parametrize(
    "text",
    [
        "x 1\n",  # no HELP/TYPE
        '# HELP x X.\n# TYPE x gauge\nx{a="b"} one\n',  # not a number
        '# HELP x X.\n# TYPE x gauge\nx{a="b\\q"} 1\n',  # bad escape
        "# HELP x X.\n# TYPE x counter\nx_bucket 1\n",  # histogram suffix on a counter
        "# HELP x X.\n# TYPE x gauge\nx 1",  # no final newline
    ],
)
def test_the_checker_rejects_invalid_text(text: str) -> None:
    with pytest.raises(AssertionError):
        check_exposition(text)


def test_counter_gauge_histogram_render_exactly_with_escaped_labels() -> None:
    registry = Registry()
    sent = registry.counter("demo_sent_total", 'Messages sent.\nBy "agent" \\ platform.', ("agent", "platform"))
    depth = registry.gauge("demo_depth", "Queue depth.", ("agent",))
    latency = registry.histogram("demo_latency_seconds", "Latency.", ("agent",), buckets=(0.1, 1))
    sent.labels(agent='Ada "the\\first"\nLovelace', platform="discord").inc()
    sent.labels(agent="Ada", platform="telegram").inc(2.5)
    sent.labels(agent="Ada", platform="discord").inc()
    depth.labels(agent="Ada").set(3)
    depth.labels(agent="Ada").dec()
    latency.labels(agent="Ada").observe(0.05)
    latency.labels(agent="Ada").observe(0.5)
    latency.labels(agent="Ada").observe(7)

    assert registry.render() == (
        '# HELP demo_sent_total Messages sent.\\nBy "agent" \\\\ platform.\n'
        "# TYPE demo_sent_total counter\n"
        'demo_sent_total{agent="Ada",platform="discord"} 1\n'
        'demo_sent_total{agent="Ada",platform="telegram"} 2.5\n'
        'demo_sent_total{agent="Ada \\"the\\\\first\\"\\nLovelace",platform="discord"} 1\n'
        "# HELP demo_depth Queue depth.\n"
        "# TYPE demo_depth gauge\n"
        'demo_depth{agent="Ada"} 2\n'
        "# HELP demo_latency_seconds Latency.\n"
        "# TYPE demo_latency_seconds histogram\n"
        'demo_latency_seconds_bucket{agent="Ada",le="0.1"} 1\n'
        'demo_latency_seconds_bucket{agent="Ada",le="1"} 2\n'
        'demo_latency_seconds_bucket{agent="Ada",le="+Inf"} 3\n'
        'demo_latency_seconds_sum{agent="Ada"} 7.55\n'
        'demo_latency_seconds_count{agent="Ada"} 3\n'
    )
    check_exposition(registry.render())


def test_unlabelled_families_are_used_directly_and_show_zero_before_first_use() -> None:
    registry = Registry()
    restarts = registry.counter("demo_restarts_total", "Restarts.")
    agents = registry.gauge("demo_agents", "Agents.")
    registry.counter("demo_errors_total", "Errors.", ("kind",))
    assert registry.render() == (
        "# HELP demo_restarts_total Restarts.\n# TYPE demo_restarts_total counter\ndemo_restarts_total 0\n"
        "# HELP demo_agents Agents.\n# TYPE demo_agents gauge\ndemo_agents 0\n"
        "# HELP demo_errors_total Errors.\n# TYPE demo_errors_total counter\n"
    )
    restarts.inc()
    agents.set(4)
    agents.inc(2)
    agents.dec()
    assert "demo_restarts_total 1\n" in registry.render()
    assert "demo_agents 5\n" in registry.render()


def test_histogram_buckets_are_cumulative_and_end_with_inf() -> None:
    histogram = Histogram("h_seconds", "H.")
    assert histogram.bounds[-1] == math.inf and histogram.bounds[:3] == (0.005, 0.01, 0.025)
    for value in (0.001, 0.005, 0.007, 0.3, 59, 61, 1000):
        histogram.observe(value)
    lines = list(histogram.render_lines())
    buckets = {first_group(r'le="([^"]+)"', line): int(line.rsplit(" ", 1)[1]) for line in lines if "_bucket" in line}
    assert buckets == {
        "0.005": 2,
        "0.01": 3,
        "0.025": 3,
        "0.05": 3,
        "0.1": 3,
        "0.25": 3,
        "0.5": 4,
        "1": 4,
        "2.5": 4,
        "5": 4,
        "10": 4,
        "30": 4,
        "60": 5,
        "+Inf": 7,
    }
    assert lines[-2:] == ["h_seconds_sum 1120.313", "h_seconds_count 7"]


def test_histogram_counts_nan_only_in_inf() -> None:
    histogram = Histogram("h_seconds", "H.", buckets=(1,))
    histogram.observe(math.nan)
    assert list(histogram.render_lines())[2:] == [
        'h_seconds_bucket{le="1"} 0',
        'h_seconds_bucket{le="+Inf"} 1',
        "h_seconds_sum NaN",
        "h_seconds_count 1",
    ]


def test_series_sort_by_label_values() -> None:
    family = Counter("c_total", "C.", ("agent", "platform"))
    for agent, platform in [("b", "x"), ("a", "z"), ("a", "y")]:
        family.labels(agent=agent, platform=platform).inc()
    assert [line.split(" ")[0] for line in family.render_lines()][2:] == [
        'c_total{agent="a",platform="y"}',
        'c_total{agent="a",platform="z"}',
        'c_total{agent="b",platform="x"}',
    ]


def test_misuse_is_refused() -> None:
    family = Counter("c_total", "C.", ("agent",))
    with pytest.raises(ValueError, match=r"takes labels \['agent'\], not \['platform'\]"):
        family.labels(platform="x")
    with pytest.raises(ValueError, match="call .labels"):
        family.inc()
    with pytest.raises(ValueError, match="only goes up"):
        family.labels(agent="a").inc(-1)
    with pytest.raises(ValueError, match="label named le"):
        Histogram("h", "H.", ("le",))
    with pytest.raises(ValueError, match="increasing"):
        Histogram("h", "H.", buckets=(1, 0.5))
    with pytest.raises(ValueError, match="invalid metric name"):
        Gauge("bad-name", "B.")
    registry = Registry()
    registry.gauge("g", "G.")
    with pytest.raises(ValueError, match="already registered"):
        registry.counter("g", "G.")


def test_forget_agent_removes_all_its_series_and_keeps_the_others() -> None:
    metrics = Metrics()
    for agent in ("Ada", "Brann"):
        metrics.messages_received.labels(agent=agent, platform="discord").inc()
        metrics.model_calls.labels(agent=agent, model_type="TEXT_LARGE", provider="openai", outcome="ok").inc()
        metrics.model_latency.labels(agent=agent, model_type="TEXT_LARGE").observe(1.2)
        metrics.in_flight.labels(agent=agent).set(1)
        metrics.platform_connected.labels(agent=agent, platform="telegram").set(1)
    metrics.reloads.labels(outcome="ok").inc()
    metrics.forget_agent("Brann")
    text = metrics.render()
    assert 'agent="Brann"' not in text
    assert text.count('agent="Ada"') == 5 + len(metrics.model_latency.bounds) + 1  # histogram: buckets, sum, count
    assert 'troupe_reloads_total{outcome="ok"} 1\n' in text


def test_troupe_metrics_render_as_valid_exposition_with_process_metrics() -> None:
    metrics = Metrics(clock=lambda: 1700000000.5)
    metrics.messages_received.labels(agent="Ada", platform="discord").inc()
    metrics.messages_sent.labels(agent="Ada", platform="discord").inc()
    metrics.gate_decisions.labels(agent="Ada", decision="RESPOND").inc()
    metrics.model_calls.labels(agent="Ada", model_type="TEXT_SMALL", provider="openai", outcome="error").inc()
    metrics.model_latency.labels(agent="Ada", model_type="TEXT_SMALL").observe(0.2)
    metrics.reply_latency.labels(agent="Ada", platform="discord").observe(2.0)
    metrics.messages_handled.labels(agent="Ada", outcome="send_failed").inc()
    metrics.in_flight.labels(agent="Ada").inc()
    metrics.reconnects.labels(agent="Ada", platform="telegram").inc()
    metrics.platform_connected.labels(agent="Ada", platform="discord").set(1)
    metrics.agents.set(1)
    metrics.reloads.labels(outcome="error").inc()
    text = metrics.render()
    types = check_exposition(text)
    assert list(types)[:16] == [
        "troupe_messages_received_total",
        "troupe_messages_sent_total",
        "troupe_gate_decisions_total",
        "troupe_model_calls_total",
        "troupe_model_latency_seconds",
        "troupe_model_answers_total",
        "troupe_reply_latency_seconds",
        "troupe_messages_handled_total",
        "troupe_messages_in_flight",
        "troupe_reconnects_total",
        "troupe_platform_connected",
        "troupe_platform_token_refused",
        "troupe_agents",
        "troupe_reloads_total",
        "troupe_store_writable",
        "troupe_store_state",
    ]
    assert types["troupe_start_time_seconds"] == "gauge"
    assert types["process_cpu_seconds_total"] == "counter"
    assert "troupe_start_time_seconds 1700000000.5\n" in text
    assert (
        'troupe_model_calls_total{agent="Ada",model_type="TEXT_SMALL",outcome="error",provider="openai"}' not in text
    )  # labels keep their declared order, not alphabetical
    assert 'troupe_model_calls_total{agent="Ada",model_type="TEXT_SMALL",provider="openai",outcome="error"} 1\n' in text
    cpu = float(first_group(r"^process_cpu_seconds_total (\S+)$", text, re.MULTILINE))
    assert cpu > 0


def test_resident_memory_is_reported_where_proc_exists_and_skipped_elsewhere(monkeypatch) -> None:
    import bot.kernel.metrics as module

    text = Metrics().render()
    if module._resident_memory_bytes() is not None:
        assert int(first_group(r"^process_resident_memory_bytes (\d+)$", text, re.MULTILINE)) > 1_000_000
    monkeypatch.setattr(module, "_resident_memory_bytes", lambda: None)
    text = Metrics().render()
    assert "process_resident_memory_bytes" not in text
    check_exposition(text)
