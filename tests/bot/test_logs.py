"""Log lines: the agent on every line, journal priorities under systemd, secrets scrubbed."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import tempfile
from collections.abc import Iterator

import pytest

from bot import logs
from bot.redact import register_secret


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
        log = logging.getLogger("bot.daemon")
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
    assert lines[:5] == ["<7>[Ada] bot.daemon: d", "<6>[Ada] bot.daemon: i", "<4>[Ada] bot.daemon: w",
                         "<3>[Ada] bot.daemon: e", "<2>[Ada] bot.daemon: c"]
    assert lines[5] == "<3>[Ada] bot.daemon: failed"
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
    register_secret("sk-log-secret-123456")
    log = logging.getLogger("x")
    log.info("calling with sk-log-secret-123456")
    try:
        raise RuntimeError("bad key sk-log-secret-123456")
    except RuntimeError:
        log.exception("failed")
    text = out.getvalue()
    assert "sk-log-secret-123456" not in text
    assert "calling with <redacted>" in text and "RuntimeError: bad key <redacted>" in text
