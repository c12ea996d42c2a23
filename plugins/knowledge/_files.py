"""Finding knowledge files and reading text out of them. Blocking: call from a worker thread.

:func:`scan` walks the character's files and folders (and ``KNOWLEDGE_PATH``) into
:class:`FoundFile` entries with their size and mtime, so unchanged files need no further I/O;
:func:`extract_text` turns a file's bytes into text (PDF through pypdf, Word's .docx through
python-docx, JSON pretty-printed, anything else as UTF-8 text) or raises :class:`Unreadable` with a reason fit for a log line.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.sdk import UnreadableDocx, UnreadablePdf, docx_text, pdf_text

__all__ = ["FoundFile", "Root", "Scan", "Unreadable", "content_type", "extract_text", "scan"]

_log = logging.getLogger("plugins.knowledge")

# Folders never walked into (besides any whose name starts with a dot), as upstream.
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "dist", "build", "venv"})

# Kinds troupe cannot read, and what to do instead. Anything else is tried as UTF-8 text.
_UNSUPPORTED = {
    **dict.fromkeys((".doc", ".odt", ".rtf", ".pages"), "a word-processor document: save it as .docx, PDF or text"),
    **dict.fromkeys((".xls", ".xlsx", ".ods", ".numbers"), "a spreadsheet: export it as CSV"),
    **dict.fromkeys((".ppt", ".pptx", ".odp", ".key"), "a presentation: save it as PDF"),
    **dict.fromkeys(
        (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".svgz", ".ico", ".heic"), "an image"
    ),
    **dict.fromkeys(
        (".mp3", ".wav", ".ogg", ".oga", ".opus", ".flac", ".m4a", ".mp4", ".mkv", ".mov", ".webm", ".avi"),
        "audio or video",
    ),
    **dict.fromkeys((".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar"), "an archive: unpack it"),
    **dict.fromkeys(
        (
            ".exe",
            ".dll",
            ".so",
            ".dylib",
            ".bin",
            ".o",
            ".a",
            ".class",
            ".jar",
            ".pyc",
            ".wasm",
            ".sqlite",
            ".db",
            ".epub",
        ),
        "a binary file",
    ),
}

_CONTENT_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".json": "application/json",
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".csv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
    ".xml": "application/xml",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
}

_READS = "text, Markdown, JSON, PDF and Word (.docx)"
# How much of a file is checked for NUL bytes, the mark of a binary file.
_SNIFF = 8192


class Unreadable(Exception):
    """A file that holds no usable text; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Root:
    """One place knowledge comes from: a file or a folder, and whether it is shared."""

    path: Path
    shared: bool
    origin: str
    """Where it was configured, for log lines: ``knowledge[2]``, ``KNOWLEDGE_PATH``."""


@dataclass(frozen=True, slots=True)
class FoundFile:
    """A file to ingest, as found on disk."""

    path: Path
    """Absolute."""
    title: str
    """The file's name, with the folders below the listed folder (``guides/setup.md``)."""
    shared: bool
    size: int
    mtime_ns: int


@dataclass(slots=True)
class Scan:
    """What :func:`scan` found."""

    files: list[FoundFile] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Log lines: folders or files that could not be looked at."""
    unreadable: list[Path] = field(default_factory=list)
    """Files and folders that exist but could not be listed or examined: what was ingested from
    them before is kept, not forgotten."""


def _hidden(name: str) -> bool:
    return name.startswith(".")


def scan(roots: Iterable[Root]) -> Scan:
    """Every file under ``roots``, each once (the first root listing a file decides whether it is
    shared), in a stable order. Dotfiles, dot-folders and build folders are skipped; symlinked
    folders are not followed. Missing roots are reported in ``problems`` and listed as unreadable."""
    found = Scan()
    seen: set[tuple[Path, bool]] = set()

    def add(path: Path, title: str, shared: bool) -> None:
        key = (path, shared)
        if key in seen:
            return
        try:
            st = path.stat()
        except FileNotFoundError:
            return  # gone since it was listed
        except OSError as exc:
            found.problems.append(f"{path}: cannot examine it ({exc.strerror or exc}); skipped")
            found.unreadable.append(path)
            return
        seen.add(key)
        found.files.append(FoundFile(path, title, shared, st.st_size, st.st_mtime_ns))

    for root in roots:
        path = root.path.absolute()
        if not path.exists():
            # Perhaps a mount not up yet: what came from it stays until the setting goes.
            found.problems.append(
                f"{root.origin}: {path} does not exist; skipped (what was loaded from it before is kept)"
            )
            found.unreadable.append(path)
            continue
        if not path.is_dir():
            add(path, path.name, root.shared)
            continue

        def failed(exc: OSError, root: Path = path) -> None:
            where = Path(exc.filename) if exc.filename else root
            found.problems.append(f"{where}: cannot list this folder ({exc.strerror or exc}); skipped")
            found.unreadable.append(where)

        for folder, dirs, files in os.walk(path, onerror=failed):
            dirs[:] = sorted(d for d in dirs if not _hidden(d) and d not in _SKIP_DIRS)
            for name in sorted(files):
                if _hidden(name):
                    continue
                full = Path(folder) / name
                title = str(Path(path.name) / full.relative_to(path))
                if full.is_file():
                    add(full, title, root.shared)
    return found


def content_type(path: Path) -> str:
    """The MIME type of a knowledge file, by its extension (``text/plain`` for unknown text)."""
    return _CONTENT_TYPES.get(path.suffix.lower(), "text/plain")


def extract_text(path: Path, data: bytes) -> str:
    """The text of a knowledge file whose bytes are ``data``.

    Raises:
        Unreadable: an unsupported kind (Word, images …), a binary file, text that is not UTF-8,
            a PDF or Word document that is encrypted, damaged or has no text, or no text at all.
    """
    suffix = path.suffix.lower()
    if suffix in _UNSUPPORTED:
        raise Unreadable(f"{_UNSUPPORTED[suffix]}; troupe reads {_READS}")
    if suffix == ".pdf" or data.startswith(b"%PDF-"):
        text = _pdf_text(data)
    elif suffix == ".docx":
        try:
            text = docx_text(data)
        except UnreadableDocx as exc:
            raise Unreadable(str(exc)) from None
    else:
        if b"\x00" in data[:_SNIFF]:
            raise Unreadable(f"a binary file, not text; troupe reads {_READS}")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Unreadable(f"not UTF-8 text (bad byte at offset {exc.start}); save it as UTF-8") from None
        if suffix == ".json":
            text = _pretty_json(text, path)
    if not text.strip():
        raise Unreadable("empty: it holds no text")
    return text


def _pretty_json(text: str, path: Path) -> str:
    """JSON laid out one value a line, so chunks end between values (as upstream); text that is
    not valid JSON is kept as it is."""
    try:
        value = json.loads(text)
    except ValueError:
        _log.debug("%s is not valid JSON; read as plain text", path)
        return text
    return json.dumps(value, indent=2, ensure_ascii=False)


def _pdf_text(data: bytes) -> str:
    try:
        return pdf_text(data)
    except UnreadablePdf as exc:
        raise Unreadable(str(exc)) from None
