"""The console's audit log: every change made through it, one JSON line each, in the data directory."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from bot.daemon.console._files import PRIVATE_FILE, private_dir

__all__ = ["AUDIT_FILE", "AuditLog", "Change"]

AUDIT_FILE = "console-audit.log"


class Change(StrEnum):
    """What was done through the console."""

    LOGIN = "login"
    FAILED_LOGIN = "failed login"
    LOGOUT = "logout"
    SETUP_SAVED = "setup saved"
    CHARACTER_SAVED = "character saved"
    MEMORY_FORGOTTEN = "memory forgotten"
    KNOWLEDGE_UPLOADED = "knowledge uploaded"
    KNOWLEDGE_RESYNCED = "knowledge resynced"


class AuditLog:
    """Appends to ``path`` (created 0600): when, which session (a prefix of its id), from where,
    what, and to what (``detail``: the character, the person, the file; never a secret)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def record(self, what: Change, *, session: str, remote: str | None, detail: str = "") -> None:
        entry: dict[str, object] = {
            "when": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "session": session,
            "remote": remote,
            "what": str(what),
        }
        if detail:
            entry["detail"] = detail
        line = json.dumps(entry)
        await asyncio.to_thread(self._append, line + "\n")

    def _append(self, line: str) -> None:
        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
        with os.fdopen(fd, "a", encoding="utf-8") as file:
            file.write(line)
