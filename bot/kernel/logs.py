"""Log output: the journal's priorities under systemd, readable lines in a terminal, and the agent
on every line.

Which agent a line is about comes from a context variable: :meth:`AgentRuntime.create_task`
starts every agent task (and so every platform client, event handler and model call below it)
with the agent set, and :func:`agent_context` sets it for code the daemon runs on an agent's
behalf. Lines outside any agent say ``troupe``.

The level applies to troupe's own code (``bot``, ``platforms``, ``plugins``); other libraries
stay at INFO even at DEBUG (aiosqlite alone would log every statement, vectors included) unless
they are named: ``DEBUG,discord=DEBUG`` (see :func:`parse_level`).

Under systemd stderr is a journal stream (``JOURNAL_STREAM`` names its device and inode); the
journal reads a ``<N>`` prefix on each line as its syslog priority, so no journal library is
needed. Every line of a multi-line record (a traceback) carries the prefix, so none of it is
demoted to the default priority.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TextIO

from bot.kernel import redact
from bot.kernel.errors import ConfigError

__all__ = [
    "LEVELS",
    "RepeatFilter",
    "agent_context",
    "configure",
    "current_agent",
    "flush_repeats",
    "journal_stream",
    "parse_level",
]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_NO_AGENT = "troupe"
#: The loggers the level is for; every other library logs from INFO up unless named.
_OURS = ("bot", "platforms", "plugins", "troupe")

current_agent: contextvars.ContextVar[str | None] = contextvars.ContextVar("troupe_agent", default=None)

# HTTP client libraries log every request at INFO; in a daemon's journal that is noise.
_NOISY = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "aiohttp.access")


@contextlib.contextmanager
def agent_context(name: str) -> Iterator[None]:
    """Lines logged inside this block (and in tasks started from it) carry ``name``."""
    token = current_agent.set(name)
    try:
        yield
    finally:
        current_agent.reset(token)


def _syslog_priority(levelno: int) -> int:
    if levelno >= logging.CRITICAL:
        return 2
    if levelno >= logging.ERROR:
        return 3
    if levelno >= logging.WARNING:
        return 4
    if levelno >= logging.INFO:
        return 6
    return 7


class _AgentFormatter(logging.Formatter):
    """``[agent] logger: message``; a message that already starts with ``agent: `` is not
    prefixed twice (much of the code names the agent itself, for readers of any handler)."""

    def __init__(self, journal: bool) -> None:
        super().__init__("%(message)s" if journal else "%(asctime)s %(levelname)-7s %(message)s")
        self.journal = journal

    def format(self, record: logging.LogRecord) -> str:
        agent = getattr(record, "agent", None) or current_agent.get() or _NO_AGENT
        message = record.getMessage()
        if message.startswith(f"{agent}: "):
            message = message[len(agent) + 2 :]
        record.message = f"[{agent}] {record.name}: {message}"
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        text = self.formatMessage(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            text = f"{text}\n{record.exc_text}"
        if record.stack_info:
            text = f"{text}\n{self.formatStack(record.stack_info)}"
        if self.journal:
            prefix = f"<{_syslog_priority(record.levelno)}>"
            text = "\n".join(prefix + line for line in text.splitlines())
        return text


_SUMMARY = "suppressed %d similar lines in %.0f s (after %d shown): %s"


@dataclass
class _Window:
    started: float
    passed: int = 0
    suppressed: int = 0
    level: int = logging.WARNING


class RepeatFilter(logging.Filter):
    """A handler's filter that lets through at most ``burst`` lines of one kind per ``interval``
    seconds, then one line saying how many it suppressed.

    A line's kind is its logger and its message template (``record.msg``, before the arguments):
    a loop that fails the same way logs the same template again and again (asyncio's failed
    accepts once wrote 443,121 lines in two minutes). Only warnings and worse are counted: lines
    below that tell of events, one each, and are not logged by a failing loop.
    """

    def __init__(
        self,
        emit: Callable[[logging.LogRecord], object],
        *,
        burst: int = 10,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        max_kinds: int = 1000,
    ) -> None:
        super().__init__()
        self._emit = emit
        self.burst = burst
        self.interval = interval
        self._clock = clock
        self._max_kinds = max_kinds
        self._windows: dict[tuple[str, str], _Window] = {}
        self._lock = threading.Lock()  # threads (executors, libraries) log too

    def filter(self, record: logging.LogRecord) -> bool:
        now = self._clock()
        with self._lock:
            ended = self._close_windows(now)
            passes = self._count(record, now)
        for summary in ended:
            self._emit(summary)
        return passes

    def _count(self, record: logging.LogRecord, now: float) -> bool:
        if record.levelno < logging.WARNING or record.msg is _SUMMARY:
            return True
        key = (record.name, str(record.msg))
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = _Window(now)
        window.level = max(window.level, record.levelno)
        if window.passed < self.burst:
            window.passed += 1
            return True
        window.suppressed += 1
        return False

    def flush(self) -> None:
        """Say what was suppressed so far (at shutdown: nothing goes unsaid)."""
        with self._lock:
            ended = self._close_windows(None)
        for summary in ended:
            self._emit(summary)

    def _close_windows(self, now: float | None) -> list[logging.LogRecord]:
        """Summaries of the windows over by ``now`` (all of them if None), which are dropped."""
        over = []
        for key, window in self._windows.items():  # in the order they started
            if now is not None and now - window.started < self.interval:
                break
            over.append(key)
        if len(self._windows) - len(over) >= self._max_kinds:  # bounded, whatever is logged
            over = list(self._windows)
        summaries = []
        for key in over:
            window = self._windows.pop(key)
            if window.suppressed:
                summaries.append(self._summary(key, window, now))
        return summaries

    def _summary(self, key: tuple[str, str], window: _Window, now: float | None) -> logging.LogRecord:
        name, template = key
        seconds = (self._clock() if now is None else now) - window.started
        shown = " ".join(template.split())
        if len(shown) > 120:
            shown = shown[:119] + "…"
        return logging.LogRecord(
            name, window.level, __file__, 0, _SUMMARY, (window.suppressed, seconds, window.passed, shown), None
        )


def flush_repeats() -> None:
    """Say what the log handlers' :class:`RepeatFilter` suppressed so far (as the daemon ends)."""
    for handler in logging.getLogger().handlers:
        for repeats in handler.filters:
            if isinstance(repeats, RepeatFilter):
                repeats.flush()


def journal_stream(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``stream`` is the journal connection systemd set up (``JOURNAL_STREAM`` matches it)."""
    expected = (os.environ if environ is None else environ).get("JOURNAL_STREAM", "")
    try:
        stat = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return expected == f"{stat.st_dev}:{stat.st_ino}"


def parse_level(spec: str) -> tuple[int, dict[str, int]]:
    """``LEVEL[,LOGGER=LEVEL…]``: troupe's level, then the level of each library named.

    ``"debug"`` → ``(DEBUG, {})``; ``"INFO,discord=DEBUG"`` → ``(INFO, {"discord": DEBUG})``.
    Raises :class:`~bot.kernel.errors.ConfigError` saying what is wrong.
    """
    head, *rest = [part.strip() for part in spec.split(",")]

    def level(text: str, what: str) -> int:
        if text.upper() not in LEVELS:
            raise ConfigError(
                f"log level {spec!r} is not understood: {what} {text!r} is not one of "
                f"{', '.join(LEVELS[:-1])} or {LEVELS[-1]} (write LEVEL, or LEVEL,library=LEVEL "
                "to see a library's lines too)"
            )
        return int(logging.getLevelName(text.upper()))

    libraries: dict[str, int] = {}
    for part in rest:
        name, _, value = (p.strip() for p in part.partition("="))
        if not name:
            raise ConfigError(
                f"log level {spec!r} is not understood: {part!r} names no library; it is not "
                f"LEVEL,library=LEVEL with a level of {', '.join(LEVELS[:-1])} or {LEVELS[-1]}"
            )
        libraries[name] = level(value, f"{name}'s level")
    return level(head, "the level"), libraries


def configure(
    level: str,
    *,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    handler: logging.Handler | None = None,
) -> None:
    """Send log lines to ``stream`` (stderr), or to ``handler``, secrets scrubbed.

    ``level`` is a :func:`parse_level` spec: troupe's own lines from that level up, other
    libraries' from INFO up (WARNING for the HTTP clients, which log every request) or from the
    level named for them. The secret filters of the handlers replaced carry over to the new one
    (a daemon that is running keeps its secrets out of the new output). A warning repeated in a
    loop is cut to a few a minute (:class:`RepeatFilter`).
    """
    ours, libraries = parse_level(level)
    if handler is None:
        out = stream or sys.stderr
        handler = logging.StreamHandler(out)
        handler.setFormatter(_AgentFormatter(journal=journal_stream(out, environ)))
    if not any(isinstance(f, RepeatFilter) for f in handler.filters):
        handler.addFilter(RepeatFilter(handler.handle))
    root = logging.getLogger()
    flush_repeats()
    for old in list(root.handlers):
        for kept in old.filters:
            if isinstance(kept, redact.SecretFilter) and kept not in handler.filters:
                handler.addFilter(kept)
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(max(ours, logging.INFO))
    for name in _OURS:
        # Only below INFO do troupe's loggers need their own level; otherwise they follow the root.
        logging.getLogger(name).setLevel(ours if ours < logging.INFO else logging.NOTSET)
    for noisy in _NOISY:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    for name, library_level in libraries.items():
        logging.getLogger(name).setLevel(library_level)
