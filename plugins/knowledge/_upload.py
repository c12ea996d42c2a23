"""Adding a file to a character's knowledge folder: its name and kind checked, written atomically.

Blocking: call from a worker thread. The file is written under a hidden temporary name (the scan
skips dotfiles, so a sync never reads half a file) and renamed over the final name at once.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from bot.sdk import UploadRefused, write_atomically

from ._files import Unreadable, extract_text

__all__ = ["check_name", "save_upload"]

# Longer names are refused by most file systems (255 bytes).
_MAX_NAME_BYTES = 255


def check_name(filename: str) -> str:
    """``filename`` as a plain file name to save under.

    Raises:
        UploadRefused: empty, a path, hidden, too long, or holding control characters.
    """
    name = filename.strip()
    if not name:
        raise UploadRefused("the file has no name; choose a file to upload")
    if "/" in name or "\\" in name or name in (".", ".."):
        raise UploadRefused(f"{name!r} is a path, not a file name; upload the file itself")
    if name.startswith("."):
        raise UploadRefused(f"{name!r} is a hidden file, which knowledge skips; rename it without the leading dot")
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise UploadRefused("the file's name holds control characters; rename it")
    if len(name.encode("utf-8")) > _MAX_NAME_BYTES:
        raise UploadRefused(f"the file's name is longer than {_MAX_NAME_BYTES} bytes; shorten it")
    return name


def save_upload(folder: Path, name: str, data: bytes) -> Path:
    """Check ``data`` holds text knowledge reads, then write it to ``folder / name`` atomically.

    Raises:
        UploadRefused: the kind of file is not read (the reason says what to do instead), or the
            folder cannot be written.
    """
    target = folder / name
    try:
        extract_text(target, data)
    except Unreadable as exc:
        raise UploadRefused(f"{name} cannot be used as knowledge: {exc}") from None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(target, data, prefix=".upload-")
    except OSError as exc:
        raise UploadRefused(
            f"cannot save {name} in {folder}: {exc.strerror or exc}; check that the daemon's user may write there"
        ) from None
    return target
