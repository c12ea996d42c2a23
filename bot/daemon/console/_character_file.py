"""A character file opened in the console's editor, and saved: checked by the loader's own code,
written atomically, and never over a change made on disk meanwhile.

Both functions read and write files: run them in a thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.config.character import MAX_FILE_BYTES, Character, LoadResult, load_character
from bot.config.settings import load_environ
from bot.daemon.console._character_secrets import (
    Location,
    SecretStatus,
    hide_secrets,
    put_back_secrets,
    secret_statuses,
    secrets_written_in,
)
from bot.daemon.console._json_lines import line_of, path_lines
from bot.kernel.errors import ConfigError, Problem
from bot.kernel.files import UnreadableFile, read_config_file

__all__ = [
    "CannotSave",
    "EDITABLE_BYTES",
    "FileChanged",
    "open_character",
    "OpenedFile",
    "save_character",
    "SavedFile",
    "ShownProblem",
]

#: The longest line of the file shown under a problem.
_EXCERPT_CHARS = 160
#: The largest text the editor offers to save: a form must stay under the console's 1 MiB body
#: limit, with room for the other fields and the CRLF a browser sends for each newline.
EDITABLE_BYTES = 1000 * 1024


class FileChanged(Exception):
    """The file on disk is not the one the editor opened: someone saved it meanwhile."""


class CannotSave(Exception):
    """The file cannot be read or written now; the message says why, and nothing was written."""


@dataclass(frozen=True)
class ShownProblem:
    """A problem as the editor shows it: the field's path, the message, and where in the text."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None
    #: The text of that line (what the person typed), to show the problem where it is.
    excerpt: str = ""


@dataclass(frozen=True)
class OpenedFile:
    """What the editor shows of a character file."""

    path: Path
    #: The file's text with its secrets replaced by the placeholder.
    text: str
    #: The file's version, as read: a save is refused if the file on disk is no longer this one.
    version: str
    secrets: list[SecretStatus]
    #: Why the file cannot be shown or saved here, if it cannot ("" when it can).
    problem: str = ""

    @property
    def editable(self) -> bool:
        return bool(self.version) and not self.problem


@dataclass
class SavedFile:
    """What a save did: the problems that stopped it, or the character written."""

    problems: list[ShownProblem] = field(default_factory=list)
    warnings: list[ShownProblem] = field(default_factory=list)
    character: Character | None = None


def _version(raw: bytes, key: bytes) -> str:
    # Keyed: the page carries no plain hash of a file that may hold a secret.
    return hmac.new(key, raw, hashlib.sha256).hexdigest()


def _read(path: Path) -> bytes:
    try:
        return read_config_file(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        raise UnreadableFile("no longer exists") from None


def _writable(folder: Path) -> bool:
    """Whether this process may put a new file in ``folder`` (a save is a new file and a rename)."""
    return os.access(folder, os.W_OK)


def _read_only(path: Path) -> str:
    return (
        f"this daemon cannot write to {path.parent} (under the systemd unit, /etc/troupe is read-only to "
        "it), so the file is shown to read; edit it as its owner, then run troupe reload"
    )


def _written(text: str, running: Character) -> dict[Location, object]:
    """The secrets written in the file: from its text, or from the running character's when the
    text on disk does not parse (a hand edit gone wrong) so they stay hidden even then."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        return secrets_written_in(data)
    return secrets_written_in({"secrets": running.secrets, "settings": running.settings})


def open_character(result: LoadResult, key: bytes) -> OpenedFile:
    """Read ``result``'s file for the editor (``key`` keys its version: the session's own)."""
    character = result.raise_for_problems()
    path = result.source
    process_env = dict(os.environ)
    try:
        environ = load_environ()
    except ConfigError:
        environ = process_env
    statuses = secret_statuses(character, path.parent, process_env, environ)
    try:
        raw = _read(path)
    except UnreadableFile as exc:
        return OpenedFile(path, "", "", statuses, problem=f"{path} {exc}")
    decoded = raw.decode("utf-8-sig", errors="replace")
    text = hide_secrets(decoded, _written(decoded, character))
    size = len(text.encode()) + text.count("\n")
    if not _writable(Path(os.path.realpath(path)).parent):
        return OpenedFile(path, text, "", statuses, _read_only(path))
    if size > EDITABLE_BYTES:
        problem = (
            f"{path} is {size // 1024} KiB, more than the console saves from one page ({EDITABLE_BYTES // 1024} KiB): "
            "it is shown here to read; edit it in a text editor, then run troupe reload"
        )
        return OpenedFile(path, text, "", statuses, problem)
    return OpenedFile(path, text, _version(raw, key), statuses)


def _shown(problems: Sequence[Problem], text: str) -> list[ShownProblem]:
    lines = text.splitlines()
    try:
        where = path_lines(text)
    except (IndexError, ValueError):
        where = {}
    shown: list[ShownProblem] = []
    for problem in problems:
        line = line_of(problem.path, where)
        excerpt = lines[line - 1][:_EXCERPT_CHARS] if line is not None and line <= len(lines) else ""
        shown.append(ShownProblem(problem.path, problem.message, line, None, excerpt))
    return shown


def _parse_problem(exc: json.JSONDecodeError, checked: Sequence[Problem], text: str) -> ShownProblem:
    """The loader's message for text that does not parse, at the line and column it stops at."""
    message = next((p.message for p in checked if p.path == "$"), exc.msg)
    lines = text.splitlines()
    excerpt = lines[exc.lineno - 1][:_EXCERPT_CHARS] if exc.lineno <= len(lines) else ""
    return ShownProblem("$", message, exc.lineno, exc.colno, excerpt)


def _clashes(character: Character, others: Mapping[str, tuple[str, Path]]) -> list[Problem]:
    """What the reload would refuse: another character with the same agent id or name."""
    for agent_id, (name, source) in others.items():
        if agent_id == character.agent_id:
            return [
                Problem(
                    "$.id" if character.id else "$.name",
                    f"agent id {agent_id} is already used by {source}; "
                    'give this character a different "name" or an explicit "id"',
                )
            ]
        if name.casefold() == character.name.casefold():
            return [Problem("$.name", f"{source} already has a character named {name!r}; rename one")]
    return []


def _checked(content: str, temp: Path) -> LoadResult:
    """``content`` loaded by the loader from ``temp``, beside the character's file (so relative
    knowledge and ``file:`` paths mean what they will)."""
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(content)
        file.flush()
        os.fsync(file.fileno())
    try:
        environ = load_environ()
    except ConfigError as exc:
        result = LoadResult(temp)
        result.problems.append(Problem("$", str(exc)))
        return result
    return load_character(temp, environ=environ)


def save_character(
    agent: LoadResult, typed: str, version: str, key: bytes, others: Mapping[str, tuple[str, Path]]
) -> SavedFile:
    """Check ``typed`` (the editor's text) and write it over ``agent``'s file, atomically.

    Secrets whose placeholders were left as they were are put back. ``others`` are the other
    characters (agent id → name and file). Nothing is written when there is a problem.

    Raises:
        FileChanged: the file on disk changed since the editor opened it (``version``).
        CannotSave: the file cannot be read, or its folder written, now.
    """
    target = Path(os.path.realpath(agent.source))  # a linked file is written where it is
    try:
        return _save(agent, target, typed, version, key, others)
    except UnreadableFile as exc:
        raise CannotSave(f"{agent.source} {exc}; nothing was written") from None
    except OSError as exc:
        raise CannotSave(
            f"cannot write {agent.source}: {exc.strerror or exc.__class__.__name__}; nothing was written"
        ) from None


def _save(
    agent: LoadResult, target: Path, typed: str, version: str, key: bytes, others: Mapping[str, tuple[str, Path]]
) -> SavedFile:
    running = agent.raise_for_problems()
    before = _read(target)
    if not hmac.compare_digest(_version(before, key), version):
        raise FileChanged(str(agent.source))
    text = typed.replace("\r\n", "\n")  # browsers send a textarea's lines with CRLF
    try:
        data: object = json.loads(text)
        parse_error = None
    except json.JSONDecodeError as exc:
        data, parse_error = None, exc
    except (ValueError, RecursionError):  # a huge number, deep nesting: the loader names them
        data, parse_error = None, None
    content = text
    if data is not None:
        restored, problems = put_back_secrets(data, _written(before.decode("utf-8-sig", errors="replace"), running))
        if problems:
            return SavedFile(_shown(problems, text))
        if restored:
            content = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    temp = target.with_name(f".{target.name}.console-{secrets.token_hex(4)}.tmp")  # not .json: no folder scan reads it
    try:
        result = _checked(content, temp)
        if parse_error is not None:
            return SavedFile([_parse_problem(parse_error, result.problems, text)])
        character = result.character
        problems = result.problems or (_clashes(character, others) if character is not None else [])
        if problems or character is None:
            return SavedFile(_shown(problems, text))
        if not hmac.compare_digest(_version(_read(target), key), version):  # saved meanwhile
            raise FileChanged(str(agent.source))
        os.chmod(temp, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    return SavedFile(warnings=_shown(result.warnings, text), character=character)
