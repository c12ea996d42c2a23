"""The client ``troupe status`` and ``troupe reload`` use: one request over the control socket."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import aiohttp

__all__ = ["DaemonNotAnswering", "DaemonNotRunning", "call"]


class DaemonNotRunning(Exception):
    """The CLI cannot reach a daemon on the control socket; the message is fit to print."""

    def __init__(self, path: Path, message: str | None = None) -> None:
        self.path = path
        super().__init__(
            message
            or f"no troupe daemon is running: nothing listens on {path} (start it with "
            "`troupe start`, or point TROUPE_CONTROL_SOCKET at its socket)"
        )


class DaemonNotAnswering(DaemonNotRunning):
    """Something holds the socket but gave no answer (timeout, permission, dropped connection)."""


async def call(path: Path, method: str, route: str, *, timeout: float = 30.0) -> tuple[int, Any]:
    """One request over the control socket: (HTTP status, the JSON body, or the text if not JSON)."""
    connector = aiohttp.UnixConnector(path=os.fspath(path))
    try:
        async with (
            aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=timeout)) as s,
            s.request(method, f"http://troupe{route}") as response,
        ):
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()
    except aiohttp.ClientConnectorError as exc:
        if isinstance(exc.os_error, (FileNotFoundError, ConnectionRefusedError)):
            raise DaemonNotRunning(path) from None
        if isinstance(exc.os_error, PermissionError):
            raise DaemonNotAnswering(
                path, f"cannot connect to {path}: permission denied (run this as the user the daemon runs as)"
            ) from None
        raise DaemonNotAnswering(path, f"cannot connect to {path}: {exc.os_error.strerror or exc}") from None
    except TimeoutError:
        raise DaemonNotAnswering(path, f"the daemon did not answer within {timeout:g} s ({path})") from None
    except aiohttp.ClientError as exc:
        raise DaemonNotAnswering(path, f"the daemon on {path} did not answer properly: {exc}") from None
