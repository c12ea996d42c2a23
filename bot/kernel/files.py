"""Reading configuration files safely: only regular files, and only up to a size limit.

A named pipe, socket or device given where a file is expected would block a plain ``open()``
forever (or never end), hanging ``troupe check`` and ``troupe start``; a huge file would fill
memory. :func:`read_config_file` refuses both with a message that says what the path is.
Files are written whole or not at all (:func:`write_atomically`).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = [
    "UnreadableFile",
    "describe_kind",
    "expand_home",
    "file_key",
    "mode_of",
    "read_config_file",
    "shown",
    "write_atomically",
]


class UnreadableFile(Exception):
    """A configuration file cannot be read; the message says why, in plain words."""


def describe_kind(mode: int) -> str:
    """What kind of filesystem entry ``mode`` (from ``stat``) is, in words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def shown(path: Path | str) -> str:
    """``path`` for a message: control characters (a NUL from a JSON escape) written as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(path))


def mode_of(path: Path) -> int | None:
    """``path``'s ``stat`` mode (links followed); ``None`` when there is nothing to stat there, or
    the OS refuses the path (a name too long, a NUL byte, a link loop, no permission).

    ``Path.exists()`` and ``is_dir()`` raise for some of those; this never does.
    """
    try:
        return path.stat().st_mode
    except (OSError, ValueError):
        return None


def expand_home(path: str) -> Path:
    """``path`` with ``~`` or ``~user`` expanded; as written when there is no such home (an unknown
    user, a NUL byte), so that it is reported as a path that does not exist rather than raising."""
    try:
        return Path(path).expanduser()
    except (RuntimeError, ValueError):
        return Path(path)


def file_key(path: Path) -> Path:
    """``path`` resolved, to tell whether two paths are one file; as given (made absolute) when it
    cannot be resolved (a symlink loop, a vanished folder)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def read_config_file(path: Path, limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes.

    Raises:
        FileNotFoundError: there is no such file.
        UnreadableFile: it is not a regular file, is too large, or cannot be read.
    """
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnreadableFile(f"cannot read it: {exc.strerror or exc.__class__.__name__}") from None
    except ValueError:  # a NUL byte, which no path can hold
        raise UnreadableFile("is not a path: it contains a NUL byte") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnreadableFile(f"is {describe_kind(mode)}, not a regular file")
        file = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with file:
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise UnreadableFile(f"cannot read it: {exc.strerror or exc.__class__.__name__}") from None
    if len(data) > limit:
        raise UnreadableFile(f"is larger than {limit // 1024} KiB, the most troupe reads from such a file")
    return data


def write_atomically(path: Path, data: bytes, *, prefix: str) -> None:
    """``data`` at ``path`` whole or not at all, even through a crash: written to a temporary file
    beside it (named ``prefix…``, mode 0600), flushed to disk, renamed over ``path``, and the
    folder's entry flushed too. Blocking: run it in a thread from async code.

    Raises:
        OSError: the folder cannot be written (nothing is left behind).
    """
    fd, temporary = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
