"""How a ``troupe memory`` command ends early: a message on stderr and an exit status."""

from __future__ import annotations

__all__ = ["EXIT_NOT_FOUND", "PROG", "Stop"]

#: The agent, room or person named does not exist, or nothing was deleted.
EXIT_NOT_FOUND = 1

PROG = "troupe memory"


class Stop(Exception):
    """Ends the command with a message on stderr and an exit status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
