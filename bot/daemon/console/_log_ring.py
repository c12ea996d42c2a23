"""The daemon's recent log lines, kept in memory for the Logs page, and handed live to its readers.

::

    ring = LogRing(secrets)                  # the daemon's Redactor: lines are scrubbed here too
    ring.install()                           # on the root logger, for the console's lifetime
    with ring.subscribe(LogFilter(agent="Ada", level=logging.INFO)) as reader:
        backlog = reader.backlog             # the recent lines that match
        while (lines := await reader.next(timeout=15)) is not None:
            ...                              # [] when nothing came in time
    ring.close()                             # removed from the logger; every reader ends

Logging never waits for a reader: each reader has a bounded queue, and a line that finds it
full is dropped and counted against the line before it, so the reader is told where it lost
how many. Lines logged from other threads reach the readers through the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from bot.kernel import redact
from bot.kernel.logs import LEVELS, current_agent

__all__ = ["KEPT_LINES", "READER_QUEUE", "LogFilter", "LogLine", "LogReader", "LogRing", "Pending"]

#: Lines the ring keeps.
KEPT_LINES = 1000
#: Lines a reader may have waiting before more are dropped.
READER_QUEUE = 200
#: What a line logged outside any agent is tagged with (as the log's own lines say).
NO_AGENT = "troupe"


@dataclass(frozen=True)
class LogLine:
    """One log record, as the page shows it (its text already scrubbed of secrets)."""

    seq: int
    at: float
    level: str
    levelno: int
    agent: str
    logger: str
    message: str

    def to_json(self) -> dict[str, object]:
        return {
            "seq": self.seq,
            "time": time.strftime("%H:%M:%S", time.localtime(self.at)),
            "level": self.level,
            "agent": self.agent,
            "logger": self.logger,
            "message": self.message,
        }


@dataclass(frozen=True)
class LogFilter:
    """Which lines a reader wants: one character's (or all, ``agent=None``), from ``level`` up."""

    agent: str | None = None
    level: int = logging.INFO

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> LogFilter:
        """From a page's ``?agent=Ada&level=WARNING``; raises ValueError saying what is wrong."""
        name = query.get("level", "INFO").strip().upper() or "INFO"
        if name not in LEVELS:
            raise ValueError(f"level {name!r} is not one of {', '.join(LEVELS)}: choose one of those")
        agent = query.get("agent", "").strip()
        return cls(agent or None, logging.getLevelNamesMapping()[name])

    def matches(self, line: LogLine) -> bool:
        return line.levelno >= self.level and (self.agent is None or line.agent == self.agent)


@dataclass
class Pending:
    """A line waiting for its reader, and how many lines after it were dropped."""

    line: LogLine
    dropped_after: int = 0


class LogReader:
    """One reader of the ring (a browser's stream): the backlog, then each new line that matches."""

    def __init__(self, wanted: LogFilter, backlog: list[LogLine], limit: int, *, seen: int) -> None:
        self.wanted = wanted
        self.backlog = backlog
        self.limit = limit
        self._pending: deque[Pending] = deque()
        self._dropped_first = 0  # dropped while nothing was waiting before them
        self._woken = asyncio.Event()
        self._closed = False
        self._last_seq = seen  # the lines up to this one were in the ring when it subscribed

    def offer(self, line: LogLine) -> None:
        """Queue ``line`` if it matches; on the event loop, never waiting."""
        if self._closed or line.seq <= self._last_seq or not self.wanted.matches(line):
            return
        self._last_seq = line.seq
        if len(self._pending) >= self.limit:
            self._pending[-1].dropped_after += 1
        else:
            self._pending.append(Pending(line))
        self._woken.set()

    def close(self) -> None:
        self._closed = True
        self._woken.set()

    async def next(self, timeout: float) -> list[Pending] | None:
        """The lines waiting (waiting up to ``timeout`` seconds for one: ``[]`` if none came), or
        None once the ring is closed."""
        if not self._pending and not self._closed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._woken.wait()
        self._woken.clear()
        if self._closed:
            return None
        out = list(self._pending)
        self._pending.clear()
        return out


class LogRing(logging.Handler):
    """A logging handler that keeps the last ``kept`` lines and passes each new one to its readers.

    Its own :class:`~bot.kernel.redact.SecretFilter` scrubs the daemon's secrets (``secrets``,
    the set the daemon's other handlers use) before a line is kept: nothing the page shows has
    a secret in it, whatever handler saw the record first.
    """

    def __init__(self, secrets: redact.Redactor, *, kept: int = KEPT_LINES, reader_queue: int = READER_QUEUE) -> None:
        super().__init__(logging.NOTSET)
        self.addFilter(redact.SecretFilter(secrets))
        self.reader_queue = reader_queue
        self._lines: deque[LogLine] = deque(maxlen=kept)
        self._seq = 0
        self._readers: set[LogReader] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._logger: logging.Logger | None = None

    def install(self, logger: logging.Logger | None = None) -> None:
        """Receive every line of ``logger`` (the root logger); readers are served on this loop."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._logger = logger or logging.getLogger()
        self._logger.addHandler(self)

    def close(self) -> None:
        """Stop receiving lines and end every reader."""
        if self._logger is not None:
            self._logger.removeHandler(self)
            self._logger = None
        for reader in list(self._readers):
            reader.close()
        self._readers.clear()
        super().close()

    def lines(self) -> list[LogLine]:
        """The lines kept, oldest first."""
        self.acquire()
        try:
            return list(self._lines)
        finally:
            self.release()

    def agents(self) -> list[str]:
        """The names the kept lines are tagged with."""
        return sorted({line.agent for line in self.lines()}, key=str.casefold)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self._line(record)
        except Exception:  # a record that cannot be formatted; logging's own report, never a raise
            self.handleError(record)
            return
        self._lines.append(line)  # under the handler's lock (Handler.handle holds it)
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._thread:
            self._deliver(line)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is reading
                loop.call_soon_threadsafe(self._deliver, line)

    def _line(self, record: logging.LogRecord) -> LogLine:
        agent = getattr(record, "agent", None) or current_agent.get() or NO_AGENT
        message = record.getMessage()
        if message.startswith(f"{agent}: "):  # as the log's formatter does: the agent is shown apart
            message = message[len(agent) + 2 :]
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            message = f"{message}\n{record.exc_text}"
        self._seq += 1
        return LogLine(
            seq=self._seq,
            at=record.created,
            level=record.levelname,
            levelno=record.levelno,
            agent=str(agent),
            logger=record.name,
            message=redact.scrub_for(self, message),  # the traceback too, whatever formatted it
        )

    def _deliver(self, line: LogLine) -> None:
        for reader in self._readers:
            reader.offer(line)

    @contextlib.contextmanager
    def subscribe(self, wanted: LogFilter, *, after: int | None = None, backlog: int = 200) -> Iterator[LogReader]:
        """A reader of the lines that match ``wanted``: the last ``backlog`` kept ones (or those
        after line ``after``, for a browser that reconnects), then each new one; on the event loop."""
        lines = self.lines()
        kept = [line for line in lines if wanted.matches(line) and (after is None or line.seq > after)]
        seen = lines[-1].seq if lines else 0
        reader = LogReader(wanted, kept[-backlog:] if after is None else kept, self.reader_queue, seen=seen)
        self._readers.add(reader)
        try:
            yield reader
        finally:
            self._readers.discard(reader)
            reader.close()
