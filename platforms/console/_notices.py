"""Problems in a terminal conversation as one readable line each, instead of log lines.

In ``troupe chat`` the log is not for reading: a warning printed as a log line lands in the
middle of the prompt, with a timestamp and a logger name. This handler takes the warnings and
errors instead. What goes wrong while the character handles a line is kept until the turn ends:
if the character answered anyway (a fallback model did), nothing is shown; if it did not, one
line says why. What goes wrong between turns is shown at once.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from bot.sdk import reason_for, scrub_for

__all__ = ["ConversationLog", "reason"]


def reason(record: logging.LogRecord, agent: str = "", scrub: Callable[[str], str] = str) -> str:
    """The record as one line: the error it carries if any (that is the cause), else its
    message; no traceback, no ``agent:`` prefix, secrets ``scrub``bed."""
    error = (
        next((arg for arg in record.args or () if isinstance(arg, BaseException)), None)
        if isinstance(record.args, tuple)
        else None
    )
    if error is None and record.exc_info and record.exc_info[1] is not None:
        error = record.exc_info[1]
    text = reason_for(error, agent) if error is not None and str(error) else record.getMessage()
    text = " ".join(text.split())  # one line, whatever the message held
    while agent and text.startswith(f"{agent}: "):
        text = text[len(agent) + 2 :]
    return scrub(text)


class ConversationLog(logging.Handler):
    """A logging handler (WARNING and up) that shows problems as lines of the conversation."""

    def __init__(self, show: Callable[[str], object], agent: str = "") -> None:
        super().__init__(logging.WARNING)
        self.show = show
        self.agent = agent
        self._turn: list[str] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            # The secret filters on this handler: the error shown is more than the record's message.
            line = reason(record, self.agent, lambda text: scrub_for(self, text))
        except Exception:  # noqa: BLE001 -- logging must never break the conversation
            self.handleError(record)
            return
        if self._turn is not None:
            self._turn.append(line)
        else:
            self.show(line)

    @contextlib.contextmanager
    def turn(self) -> Iterator[list[str]]:
        """Keep the problems logged inside the block in the list it yields, instead of showing them."""
        problems: list[str] = []
        self._turn = problems
        try:
            yield problems
        finally:
            self._turn = None
