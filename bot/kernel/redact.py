"""Keep secrets out of log output.

Every secret a character resolves is added to the :class:`Redactor` of the daemon running it
(``Shared.secrets``); while the daemon runs, a :class:`SecretFilter` on the root handlers
replaces any occurrence in a formatted log line with ``<redacted>``. It is the last line of
defence: code still never logs secrets on purpose.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "Redactor",
    "SecretFilter",
    "filtering",
    "install",
    "scrub_for",
    "scrub_secret",
    "uninstall",
]

REDACTED = "<redacted>"
# Short values ("true", "0", the "x" a local server takes as its key) are not secrets worth the
# name; scrubbing them would mangle ordinary words ("ma<redacted>imum").
MIN_SECRET_LENGTH = 6


def scrub_secret(text: str, secret: str) -> str:
    """``text`` with ``secret`` replaced by ``<redacted>``, when it is long enough to be one."""
    if len(secret) < MIN_SECRET_LENGTH:
        return text
    return text.replace(secret, REDACTED)


class Redactor:
    """A set of secret values, and the text with them scrubbed out. Thread-safe: lines are logged
    from worker threads too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __contains__(self, value: object) -> bool:
        with self._lock:
            return value in self._secrets

    def add(self, value: str) -> None:
        """Scrub ``value`` from every log line from now on."""
        if len(value) >= MIN_SECRET_LENGTH:
            with self._lock:
                self._secrets.add(value)

    def scrub(self, text: str) -> str:
        """``text`` with every secret replaced by ``<redacted>``."""
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        for secret in secrets:
            text = scrub_secret(text, secret)
        return text


class SecretFilter(logging.Filter):
    """Rewrites a record's message (and traceback) with ``secrets`` scrubbed."""

    def __init__(self, secrets: Redactor) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        clean = self.secrets.scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self.secrets.scrub(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = self.secrets.scrub(record.exc_text)
        return True


def scrub_for(handler: logging.Handler, text: str) -> str:
    """``text`` scrubbed of the secrets of every :class:`SecretFilter` on ``handler`` (for a
    handler that shows more of a record than its message)."""
    for f in handler.filters:
        if isinstance(f, SecretFilter):
            text = f.secrets.scrub(text)
    return text


def install(secrets: Redactor, logger: logging.Logger | None = None) -> None:
    """Filter ``secrets`` out of every handler of ``logger`` (default: the root logger)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, SecretFilter) and f.secrets is secrets for f in handler.filters):
            handler.addFilter(SecretFilter(secrets))


def uninstall(secrets: Redactor, logger: logging.Logger | None = None) -> None:
    """Undo :func:`install`: the daemon that owned ``secrets`` is gone."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        for f in [f for f in handler.filters if isinstance(f, SecretFilter) and f.secrets is secrets]:
            handler.removeFilter(f)


@contextlib.contextmanager
def filtering(secrets: Redactor, logger: logging.Logger | None = None) -> Iterator[None]:
    """:func:`install` for the duration of the block."""
    install(secrets, logger)
    try:
        yield
    finally:
        uninstall(secrets, logger)
