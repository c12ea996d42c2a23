"""The control socket's file: bound private from the start, a stale one cleared, a live one left alone."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import stat
from pathlib import Path

from bot.kernel.errors import ConfigError

__all__ = ["bind_unix_socket"]

# Named after the public module, as before it was split: log lines read the same.
_log = logging.getLogger("bot.daemon.control")

#: sun_path holds 108 bytes on Linux, one of them the terminating NUL.
_MAX_SOCKET_PATH = 107


async def bind_unix_socket(path: Path) -> tuple[socket.socket, int]:
    """A Unix socket bound at ``path``, mode 0600, and the file's inode (to remove only our own file)."""
    if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
        raise ConfigError(
            f"the control socket path is too long for a Unix socket ({len(os.fsencode(path))} "
            f"bytes, at most {_MAX_SOCKET_PATH}): {path}; set TROUPE_CONTROL_SOCKET to a "
            "shorter path"
        )
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the control socket's directory {path.parent}: "
            f"{exc.strerror or exc}; set TROUPE_CONTROL_SOCKET"
        ) from None
    await _clear_stale_socket(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # umask makes the file private from the moment it exists (no window before the chmod).
    # 0o077, not 0o177: anything another thread creates meanwhile stays usable by its owner.
    old_umask = os.umask(0o077)
    try:
        sock.bind(os.fspath(path))
        os.chmod(path, 0o600)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:  # another daemon bound it after our check
            raise ConfigError(_running_message(path)) from None
        raise ConfigError(
            f"cannot create the control socket {path}: {exc.strerror or exc}; set TROUPE_CONTROL_SOCKET"
        ) from None
    finally:
        os.umask(old_umask)
    inode = os.lstat(path).st_ino
    sock.setblocking(False)
    return sock, inode


async def _clear_stale_socket(path: Path) -> None:
    """Remove a socket file nobody answers on; refuse if a daemon answers or it is not a socket."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ConfigError(f"{path} exists and is not a socket; remove it or set TROUPE_CONTROL_SOCKET")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(os.fspath(path)), timeout=2.0)
    except ConnectionRefusedError:
        _log.info("removing stale control socket %s (nothing answers on it)", path)
        path.unlink(missing_ok=True)  # noqa: ASYNC240 -- one small unlink at start-up, before anything runs
        return
    except (TimeoutError, OSError) as exc:
        # Cannot tell whether a daemon owns it (backlog full, permission denied): do not steal it.
        reason = "it did not accept a connection" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise ConfigError(
            f"cannot tell whether another troupe daemon owns {path} ({reason}); stop it or set TROUPE_CONTROL_SOCKET"
        ) from None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    raise ConfigError(_running_message(path))


def _running_message(path: Path) -> str:
    return f"another troupe daemon is running: {path} answers; stop it or set TROUPE_CONTROL_SOCKET"
