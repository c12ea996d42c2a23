"""A character's saved media (DOWNLOAD_MEDIA): files kept in ``media/<character>/`` under the
daemon's data directory (``TROUPE_DATA_DIR``).

A file is named after what it is and what it holds, ``<title>-<12 hex of its SHA-256>.<ext>``:
the title and the extension made safe here (lower-case ASCII letters and digits; an extension
only when it is a short one of those, else one the content type names, else ``.bin``), never
taken from the platform as they are. The same bytes saved again are found by their hash and kept
once, so a message delivered twice, or the same picture asked for twice, saves nothing new.

Bounds, per character (settings): ``MEDIA_MAX_FILE_MB`` (default 25) a file, and
``MEDIA_MAX_FILES`` (default 200) and ``MEDIA_MAX_TOTAL_MB`` (default 1000) in all. A file over
a bound is refused with a message saying which and what to do; nothing already kept is removed
to make room (what a person asked to keep is never lost silently): the operator clears the
folder. A file is written atomically, to a hidden temporary file in the folder, flushed to disk
and renamed, in a thread; one character's saves take turns (:class:`SavingTurns`), so two at
once cannot both pass a bound.
"""

from __future__ import annotations

import asyncio
import hashlib
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot.sdk import file_name_part, write_atomically

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["MB", "MediaLimits", "NoRoom", "Saved", "SavingTurns", "media_folder", "save_media"]

MB = 1024 * 1024
_DIGEST_CHARS = 12
_SAFE_EXTENSION = re.compile(r"\.[a-z0-9]{1,8}")


class NoRoom(Exception):
    """The file is over a bound; the message says which, and what to do (for the person)."""


@dataclass(frozen=True, slots=True)
class MediaLimits:
    """How much one character keeps: a file, and in all."""

    file_bytes: int = 25 * MB
    files: int = 200
    total_bytes: int = 1000 * MB

    @classmethod
    def of(cls, runtime: AgentRuntime) -> MediaLimits:
        """The character's bounds (at least one file of 1 MB)."""
        default = cls()
        return cls(
            file_bytes=max(1, runtime.get_int("MEDIA_MAX_FILE_MB", default.file_bytes // MB)) * MB,
            files=max(1, runtime.get_int("MEDIA_MAX_FILES", default.files)),
            total_bytes=max(1, runtime.get_int("MEDIA_MAX_TOTAL_MB", default.total_bytes // MB)) * MB,
        )


@dataclass(frozen=True, slots=True)
class Saved:
    """Where a file was kept: ``path`` relative to the data directory, its size, and whether it
    was there already (the same bytes, saved before)."""

    path: str
    size: int
    already: bool = False


class SavingTurns:
    """A lock per character, held while one of its files is checked against the bounds and
    written; the daemon's one instance is ``runtime.shared.instance_of(SavingTurns)``."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def of(self, agent_id: str) -> asyncio.Lock:
        return self._locks.setdefault(agent_id, asyncio.Lock())


def media_folder(runtime: AgentRuntime) -> Path:
    """The character's folder, relative to the data directory: ``media/<name>``."""
    return Path("media") / file_name_part(runtime.character.name, runtime.agent_id)


def _extension(title: str, content_type: str) -> str:
    suffix = Path(title).suffix.lower()
    if _SAFE_EXTENSION.fullmatch(suffix):
        return suffix
    guessed = mimetypes.guess_extension(content_type.split(";", 1)[0].strip().lower()) if content_type else None
    return guessed if guessed and _SAFE_EXTENSION.fullmatch(guessed) else ".bin"


def save_media(
    data_dir: Path, folder: Path, data: bytes, *, title: str, content_type: str, kind: str, limits: MediaLimits
) -> Saved:
    """Keep ``data`` in ``data_dir / folder`` (see the module docstring); blocking: run it in a thread.

    Raises:
        NoRoom: the file is over a bound.
        OSError: the folder cannot be made or written.
    """
    size = len(data)
    if size > limits.file_bytes:
        raise NoRoom(f"it is {size / MB:.1f} MB, more than the {limits.file_bytes // MB} MB I keep of one file")
    digest = hashlib.sha256(data).hexdigest()[:_DIGEST_CHARS]
    where = data_dir / folder
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    kept = [p for p in where.iterdir() if p.is_file() and not p.name.startswith(".")]
    for path in kept:
        if path.stem.endswith(f"-{digest}"):
            return Saved(str(folder / path.name), path.stat().st_size, already=True)
    if len(kept) + 1 > limits.files:
        files = f"{len(kept)} file" + ("" if len(kept) == 1 else "s")
        raise NoRoom(f"I already keep {files}, my limit; my operator can clear some from {folder}/")
    total = sum(p.stat().st_size for p in kept)
    if total + size > limits.total_bytes:
        raise NoRoom(
            f"I keep {total / MB:.1f} MB already and this would pass my limit of {limits.total_bytes // MB} MB; "
            f"my operator can clear some from {folder}/"
        )
    stem = file_name_part(Path(title).stem if title else "", kind)
    name = f"{stem}-{digest}{_extension(title, content_type)}"
    write_atomically(where / name, data, prefix=".saving-")
    return Saved(str(folder / name), size)
