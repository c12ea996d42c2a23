"""A daemon as the control server and the console see it (``DaemonView``, ``ConsoleView``), with
answers the tests set: for testing those servers without a daemon."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.kernel.metrics import Metrics
from bot.kernel.redact import Redactor

__all__ = ["FakeDaemon", "STATUS"]

STATUS: dict[str, Any] = {
    "state": "running",
    "pid": 4242,
    "uptime_s": 93.5,
    "version": "0.1.0",
    "agents": [
        {
            "name": "Ada",
            "id": "a1",
            "state": "running",
            "error": "",
            "skipped": "",
            "in_flight": 0,
            "platforms": {
                "discord": {"state": "connected", "detail": ""},
                "telegram": {"state": "retrying", "detail": "502 Bad Gateway; next try in 8 s"},
            },
        },
        {
            "name": "Brann",
            "id": "b2",
            "state": "running",
            "error": "",
            "skipped": "",
            "in_flight": 0,
            "platforms": {
                "discord": {"state": "connected", "detail": ""},
                "telegram": {"state": "connected", "detail": ""},
            },
        },
    ],
    "store": {"state": "ok", "detail": ""},
}


class FakeDaemon:
    """A DaemonView (and a ConsoleView with no agents) whose answers the tests set."""

    def __init__(self) -> None:
        self.metrics = Metrics()
        self.agents: dict[str, Any] = {}
        self.setup_needs: tuple[tuple[str, ...], ...] = ()
        self.redactor = Redactor()
        self.ready: tuple[bool, list[str]] = (True, [])
        self.reload_gate: asyncio.Event | None = None
        self.reload_error: Exception | None = None
        self.reloads = 0
        self.whole_troupe: dict[str, Any] | None = None
        self.answer: dict[str, Any] | None = None
        """The status to answer instead of STATUS (a test's own)."""

    def status(self) -> dict[str, Any]:
        return STATUS if self.answer is None else self.answer

    async def troupe(self) -> dict[str, Any] | None:
        return self.whole_troupe

    def readiness(self) -> tuple[bool, list[str]]:
        return self.ready

    async def reload(self) -> dict[str, Any]:
        self.reloads += 1
        if self.reload_gate is not None:
            await self.reload_gate.wait()
        if self.reload_error is not None:
            raise self.reload_error
        return {"started": ["Cleo"], "stopped": [], "restarted": [], "unchanged": ["Ada"], "kept": [], "failed": []}

    async def checkpoint(self) -> bool:
        return True
