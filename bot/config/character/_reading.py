"""Reading a character file's JSON: size, nesting, numbers and text JSON allows but a character cannot hold."""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path

from bot.kernel.errors import Problem
from bot.kernel.files import UnreadableFile, mode_of, read_config_file

__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "read_json"]

#: The largest character file read (published characters are a few hundred KiB at most).
MAX_FILE_BYTES = 4 * 1024 * 1024
#: The deepest nesting read; elizaOS characters nest about six levels, and validation recurses.
MAX_DEPTH = 64


#: Python converts integers of at most this many digits (sys.get_int_max_str_digits()).
_MAX_DIGITS = 4300


class _HugeNumber(int):
    """An integer too long to convert; stands in for it so it is reported with its path."""

    digits: int = 0


class _BadNumber(float):
    """``NaN`` or ``Infinity``, which Python's JSON reader accepts but JSON (and the database) do
    not; kept with how it was written so it is reported with its path."""

    written: str = ""


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > _MAX_DIGITS:
        huge = _HugeNumber(0)
        huge.digits = digits
        return huge
    return int(text)


def _parse_constant(text: str) -> float:
    bad = _BadNumber("nan")
    bad.written = text
    return bad


def _shape_problems(data: object) -> list[Problem]:
    """What JSON allows but a character cannot hold: deep nesting, huge numbers, broken text.

    Iterative, so the check itself cannot run out of stack.
    """
    problems: list[Problem] = []
    stack: list[tuple[object, str, int]] = [(data, "$", 1)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, _HugeNumber):
            problems.append(
                Problem(
                    where,
                    f"a number with {value.digits} digits; troupe reads numbers of up to "
                    f"{_MAX_DIGITS} digits (write it as text in quotes if it must be this long)",
                )
            )
        elif isinstance(value, _BadNumber):
            problems.append(Problem(where, f"{value.written} is not a number JSON allows; write a number or text"))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append(
                Problem(where, "a number too large to hold (it overflows to infinity); write a smaller number or text")
            )
        elif isinstance(value, str):
            if not _is_unicode(value):
                problems.append(
                    Problem(
                        where,
                        "text with a lone surrogate escape (\\ud800-\\udfff), which is not "
                        "valid Unicode; remove or fix the escape",
                    )
                )
        elif isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                shown = where if len(where) <= 80 else where[:80] + "…"
                problems.append(Problem(shown, f"nested more than {MAX_DEPTH} levels deep; flatten it"))
                continue
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str) and not _is_unicode(key):
                    problems.append(Problem(where, f"a key with a lone surrogate escape ({key!r}); fix the key"))
                    continue
                stack.append((item, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}", depth + 1))
    return sorted(problems, key=lambda p: p.path)


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_json(path: Path) -> tuple[object, list[Problem]]:
    if path.suffix.lower() in (".ts", ".js", ".mjs", ".cjs"):
        return None, [
            Problem(
                "$",
                "troupe reads only JSON character files; it cannot run TypeScript or JavaScript. "
                "Export the character to JSON (e.g. JSON.stringify(character, null, 2)) and load that file",
            )
        ]
    try:
        raw = read_config_file(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return None, [Problem("$", "no such file; check the path")]
    except UnreadableFile as exc:
        mode = mode_of(path)
        hint = "; give the .json files in it" if mode and stat.S_ISDIR(mode) else "; a character file is a JSON file"
        return None, [Problem("$", f"{exc}{hint}")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [Problem("$", f"not UTF-8 text (bad byte at offset {exc.start}); save the file as UTF-8")]
    if not text.strip():
        return None, [
            Problem(
                "$",
                "the file is empty; a character file holds one JSON object, "
                'such as {"name": "Ada", "bio": "who Ada is"}',
            )
        ]
    try:
        data = json.loads(text, parse_int=_parse_int, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        hint = ""
        # Python 3.13 names a trailing comma itself; 3.11 and 3.12 say what they expected instead.
        if any(m in exc.msg for m in ("Expecting property name", "Expecting value", "trailing comma")):
            hint = " (a trailing comma or a comment? JSON allows neither)"
        return None, [Problem("$", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}")]
    except RecursionError:
        return None, [Problem("$", f"nested too deeply to read (troupe reads at most {MAX_DEPTH} levels); flatten it")]
    problems = _shape_problems(data)
    return (None, problems) if problems else (data, [])
