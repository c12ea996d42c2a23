"""The console's login token: ``TROUPE_CONSOLE_TOKEN``, else a file in the data directory made at first start."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from bot.config.settings import DaemonSettings
from bot.daemon.console._files import PRIVATE_FILE, private_dir
from bot.kernel.errors import ConfigError

__all__ = ["TOKEN_FILE", "ConsoleToken", "load_token"]

#: The token's file, in the data directory.
TOKEN_FILE = "console-token"


@dataclass(frozen=True)
class ConsoleToken:
    """The token, and where it came from (what the log may say instead of the token)."""

    value: str = field(repr=False)
    #: ``TROUPE_CONSOLE_TOKEN`` or the file's path.
    source: str
    path: Path | None = None


def load_token(settings: DaemonSettings) -> ConsoleToken:
    """The token to log in with (blocking: run it in a thread).

    Raises:
        ConfigError: the token file cannot be read or made.
    """
    if settings.console_token is not None and settings.console_token.get_secret_value().strip():
        return ConsoleToken(settings.console_token.get_secret_value().strip(), "TROUPE_CONSOLE_TOKEN")
    path = settings.data_dir / TOKEN_FILE
    try:
        value = _read_or_create(path)
    except OSError as exc:
        raise ConfigError(
            f"cannot read or create the console's token file {path}: {exc.strerror or exc}; "
            "fix its permissions, set TROUPE_CONSOLE_TOKEN, or set TROUPE_CONSOLE_PORT=0"
        ) from None
    return ConsoleToken(value, str(path), path)


def _read_or_create(path: Path) -> str:
    private_dir(path.parent)
    # Like the database: the token opens the console, so only its owner may read it.
    # O_EXCL with mode 0600: a new file is never readable by others, not even for an instant.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE)
    except FileExistsError:
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, PRIVATE_FILE)  # left readable by others (copied, or an old umask)
        value = path.read_text(encoding="utf-8").strip()
        if value:
            return value
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)  # empty: make one now
    value = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(value + "\n")
    return value
