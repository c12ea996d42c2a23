"""Log lines: the agent on every line, journal priorities under systemd, secrets scrubbed."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import tempfile
from collections.abc import Iterator

import pytest

from bot.kernel import logs
from bot.kernel.errors import ConfigError
from bot.kernel.redact import Redactor, filtering


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_human_lines_carry_time_level_agent_and_logger(restore_logging) -> None:
    out = io.StringIO()
    logs.configure("INFO", stream=out, environ={})
    log = logging.getLogger("platforms.discord")
    log.info("outside any agent")
    with logs.agent_context("Iris"):
        log.warning("Iris: could not reach discord")  # the agent's name is not said twice
        log.debug("not at INFO")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith(" INFO    [troupe] platforms.discord: outside any agent")
    assert lines[1].endswith(" WARNING [Iris] platforms.discord: could not reach discord")
    assert lines[0][:4].isdigit()  # a timestamp first


def test_journal_lines_carry_the_priority_on_every_line(restore_logging) -> None:
    with tempfile.TemporaryFile("w+") as stream:
        stat = os.fstat(stream.fileno())
        logs.configure("DEBUG", stream=stream, environ={"JOURNAL_STREAM": f"{stat.st_dev}:{stat.st_ino}"})
        log = logging.getLogger("bot.daemon.daemon")
        with logs.agent_context("Ada"):
            log.debug("d")
            log.info("i")
            log.warning("w")
            log.error("e")
            log.critical("c")
            try:
                raise ValueError("boom")
            except ValueError:
                log.exception("failed")
        stream.seek(0)
        lines = stream.read().splitlines()
    assert lines[:5] == [
        "<7>[Ada] bot.daemon.daemon: d",
        "<6>[Ada] bot.daemon.daemon: i",
        "<4>[Ada] bot.daemon.daemon: w",
        "<3>[Ada] bot.daemon.daemon: e",
        "<2>[Ada] bot.daemon.daemon: c",
    ]
    assert lines[5] == "<3>[Ada] bot.daemon.daemon: failed"
    assert all(line.startswith("<3>") for line in lines[6:]) and "ValueError: boom" in lines[-1]


def test_another_stream_is_not_taken_for_the_journal() -> None:
    with tempfile.TemporaryFile("w") as stream:
        assert not logs.journal_stream(stream, {"JOURNAL_STREAM": "1:2"})
        assert not logs.journal_stream(stream, {})
    assert not logs.journal_stream(io.StringIO(), {"JOURNAL_STREAM": "1:2"})


async def test_tasks_started_in_an_agent_context_keep_it(restore_logging) -> None:
    out = io.StringIO()
    logs.configure("INFO", stream=out, environ={})

    async def work() -> None:
        await asyncio.sleep(0)
        logging.getLogger("x").info("from a task")

    with logs.agent_context("Brann"):
        task = asyncio.create_task(work())
    await task
    assert "[Brann] x: from a task" in out.getvalue()


def test_secrets_are_scrubbed_from_lines_and_tracebacks(restore_logging) -> None:
    out = io.StringIO()
    logs.configure("INFO", stream=out, environ={})
    secrets = Redactor()
    secrets.add("sk-log-secret-123456")
    log = logging.getLogger("x")
    with filtering(secrets):
        log.info("calling with sk-log-secret-123456")
        try:
            raise RuntimeError("bad key sk-log-secret-123456")
        except RuntimeError:
            log.exception("failed")
    text = out.getvalue()
    assert "sk-log-secret-123456" not in text
    assert "calling with <redacted>" in text and "RuntimeError: bad key <redacted>" in text


def test_a_new_log_setup_keeps_the_secret_filters_of_the_one_it_replaces(restore_logging) -> None:
    logs.configure("INFO", stream=io.StringIO(), environ={})
    secrets = Redactor()
    secrets.add("sk-log-secret-654321")
    with filtering(secrets):
        out = io.StringIO()
        logs.configure("INFO", stream=out, environ={})  # a daemon is running: its secrets stay hidden
        logging.getLogger("x").warning("key sk-log-secret-654321")
    logging.getLogger("x").warning("after sk-log-secret-654321")  # its owner is gone: so is its filter
    assert "key <redacted>" in out.getvalue() and "after sk-log-secret-654321" in out.getvalue()


@pytest.fixture
def restore_levels() -> Iterator[None]:
    names = ("bot", "platforms", "plugins", "troupe", "aiosqlite", "discord")
    levels = {name: logging.getLogger(name).level for name in names}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


async def test_debug_shows_troupes_own_lines_but_not_every_sql_statement(
    restore_logging, restore_levels, tmp_path
) -> None:
    from bot.store import Database

    out = io.StringIO()
    logs.configure("DEBUG", stream=out, environ={})
    logging.getLogger("plugins.core.example").debug("a debug line of troupe's own")
    logging.getLogger("discord.gateway").info("a library's info line")
    logging.getLogger("discord.gateway").debug("a library's debug line")
    async with Database(tmp_path / "troupe.db") as db:
        await db.fetchall("SELECT 'a statement' AS marker")
    text = out.getvalue()
    assert "a debug line of troupe's own" in text
    assert "opened writer connection to" in text  # the store's own debug line
    assert "a library's info line" in text
    assert "a library's debug line" not in text
    assert "a statement" not in text  # aiosqlite logs every statement (and its vector bytes) at debug


def test_a_library_can_be_asked_for_its_debug_lines(restore_logging, restore_levels) -> None:
    out = io.StringIO()
    logs.configure("info,discord=debug", stream=out, environ={})
    logging.getLogger("discord.gateway").debug("a library's debug line")
    logging.getLogger("bot.daemon.daemon").debug("troupe's debug line")
    logging.getLogger("aiosqlite").debug("another library's debug line")
    text = out.getvalue()
    assert "a library's debug line" in text
    assert "troupe's debug line" not in text and "another library's debug line" not in text


@pytest.mark.parametrize("spec", ["LOUD", "DEBUG,discord", "DEBUG,=INFO", "DEBUG,discord=LOUD", ""])
def test_a_log_level_that_means_nothing_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError, match=r"log level .* is not .*DEBUG, INFO, WARNING, ERROR or CRITICAL"):
        logs.parse_level(spec)


def test_a_line_repeated_in_a_loop_is_cut_to_a_few_then_one_summary(restore_logging) -> None:
    """asyncio's failed accepts once logged 443,121 lines in two minutes, one template over and
    over; the daemon's handler lets a few through and then says how many it held back."""
    out = io.StringIO()
    logs.configure("INFO", stream=out, environ={})
    log = logging.getLogger("asyncio")
    for attempt in range(5000):
        log.error("socket.accept() out of system resource (attempt %d)", attempt)
    logging.getLogger("bot.daemon.daemon").warning("something else: %s", "shown")
    logging.getLogger("bot.daemon.daemon").info("an event, one line each")
    logs.flush_repeats()
    lines = out.getvalue().splitlines()
    accepts = [line for line in lines if "out of system resource" in line and "suppressed" not in line]
    assert len(accepts) == 10
    assert any("something else: shown" in line for line in lines)
    (summary,) = [line for line in lines if "suppressed" in line]
    assert "ERROR" in summary and "asyncio: suppressed 4990 similar lines" in summary
    assert "socket.accept() out of system resource" in summary
    assert len(lines) == 13
    handler = logging.getLogger().handlers[0]
    logs.configure("INFO", handler=handler)  # the same handler again: still one filter
    assert sum(isinstance(f, logs.RepeatFilter) for f in handler.filters) == 1


def test_repeats_are_counted_per_interval_and_said_when_the_next_one_starts() -> None:
    said: list[logging.LogRecord] = []
    now = [0.0]
    repeats = logs.RepeatFilter(said.append, burst=2, interval=60.0, clock=lambda: now[0])

    def warn(message: str = "model call failed: %s") -> bool:
        return repeats.filter(logging.LogRecord("plugins.openai", logging.WARNING, "", 0, message, ("x",), None))

    assert [warn() for _ in range(5)] == [True, True, False, False, False]
    assert repeats.filter(logging.LogRecord("bot", logging.INFO, "", 0, "event %s", ("x",), None))  # never counted
    assert said == []
    now[0] = 61.0
    assert warn("something else: %s")  # any line after the window ends brings its summary
    (summary,) = said
    assert summary.levelno == logging.WARNING and summary.name == "plugins.openai"
    assert summary.getMessage() == "suppressed 3 similar lines in 61 s (after 2 shown): model call failed: %s"
    assert [warn() for _ in range(3)] == [True, True, False]  # a new window
