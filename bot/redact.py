"""Keep secrets out of log output.

Every secret a character resolves is registered here; a filter on the root handlers replaces
any occurrence in a formatted log line with ``<redacted>``. It is the last line of defence:
code still never logs secrets on purpose.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["REDACTED", "SecretFilter", "install", "register_secret", "scrub"]

REDACTED = "<redacted>"
# Short values ("true", "0") are settings written as secrets, not keys; scrubbing them would
# mangle ordinary words.
_MIN_LENGTH = 6

_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str) -> None:
    """Scrub ``value`` from every log line from now on."""
    if len(value) >= _MIN_LENGTH:
        with _lock:
            _secrets.add(value)


def scrub(text: str) -> str:
    """``text`` with every registered secret replaced by ``<redacted>``."""
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class SecretFilter(logging.Filter):
    """Rewrites a record's message (and traceback) with secrets scrubbed."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _secrets:
            return True
        message = record.getMessage()
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Attach the filter to every handler of ``logger`` (default: the root logger)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, SecretFilter) for f in handler.filters):
            handler.addFilter(SecretFilter())
