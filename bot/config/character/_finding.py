"""Finding character files from command-line arguments: files, folders, lists and bare names."""

from __future__ import annotations

import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.kernel.files import describe_kind, mode_of

__all__ = ["CharacterFiles", "find_character", "scan_character_files"]


@dataclass(slots=True)
class CharacterFiles:
    """The character files command-line arguments name, and the folder entries passed over."""

    paths: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    """Entries of a scanned folder that are not read, each with why."""


def find_character(name: str, *, search_dir: Path = Path("characters")) -> Path:
    """The file a character argument means: the path itself when it exists, else the first of
    ``NAME.json``, ``NAME.character.json`` and the same in ``search_dir`` that is a file.

    A name that matches nothing is returned as given, so loading reports it.
    """
    path = Path(name)
    if mode_of(path) is not None:
        return path
    for folder in (Path(), search_dir):
        for candidate in (folder / f"{name}.json", folder / f"{name}.character.json"):
            mode = mode_of(candidate)
            if mode is not None and stat.S_ISREG(mode):
                return candidate
    return path


def _skip_reason(entry: Path) -> str | None:
    """Why a folder scan passes over ``entry``, or ``None`` to read it."""
    if not entry.name.lower().endswith(".json"):
        return "not a .json file"
    try:
        mode = entry.stat().st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc.__class__.__name__})"
    if stat.S_ISDIR(mode):
        return "a folder (folders inside are not searched)"
    if not stat.S_ISREG(mode):
        return f"{describe_kind(mode)}, not a regular file"
    return None


def scan_character_files(args: Iterable[str], *, search_dir: Path = Path("characters")) -> CharacterFiles:
    """Turn command-line arguments into character files.

    Accepts files (whatever their name), folders (their ``*.json`` regular files; every other
    entry is listed in ``skipped`` with why), comma-separated lists, and bare names (see
    :func:`find_character`).
    """
    found = CharacterFiles()
    for arg in args:
        for part in (p.strip() for p in arg.split(",")):
            if not part:
                continue
            path = Path(part)
            mode = mode_of(path)
            if mode is None or not stat.S_ISDIR(mode):
                found.paths.append(find_character(part, search_dir=search_dir))
                continue
            try:
                entries = sorted(path.iterdir())
            except OSError as exc:
                found.skipped.append((path, f"cannot list the folder ({exc.strerror or exc.__class__.__name__})"))
                continue
            for entry in entries:
                reason = _skip_reason(entry)
                if reason is None:
                    found.paths.append(entry)
                else:
                    found.skipped.append((entry, reason))
    return found
