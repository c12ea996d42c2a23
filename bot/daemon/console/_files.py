"""The console's files in the data directory: private to the daemon's user, whatever the umask."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "private_dir"]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dir(path: Path) -> None:
    """Create ``path`` 0700 if it is new; one that exists is left as it is (it may be shared on
    purpose, as systemd's StateDirectory= is), as the database's directory is."""
    if path.is_dir():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):  # another process made it meanwhile
        path.mkdir(mode=PRIVATE_DIR)
        os.chmod(path, PRIVATE_DIR)  # mkdir's mode is filtered by the umask
