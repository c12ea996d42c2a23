"""Where a value sits in a JSON text: the line each JSON path (``$.bio[0]``) starts on, so a
problem the loader names by its path can be shown at its line in the editor."""

from __future__ import annotations

import json
import re

__all__ = ["line_of", "path_lines"]

# One token of a JSON text that parses: a string, a punctuation mark, or a bare word (a number,
# true, false, null).
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+', re.S)


class _Frame:
    """An object or list being read: its path, and what comes next in it."""

    __slots__ = ("index", "is_object", "key", "path")

    def __init__(self, path: str, is_object: bool) -> None:
        self.path = path
        self.is_object = is_object
        self.key: str | None = None  # an object's key read, its value not yet
        self.index = 0  # a list's next item


def _child(frame: _Frame) -> str:
    if frame.is_object:
        return f"{frame.path}.{frame.key}"
    return f"{frame.path}[{frame.index}]"


def path_lines(text: str) -> dict[str, int]:
    """Each JSON path of ``text`` (in the loader's notation) with the line (from 1) its value starts on.

    ``text`` should parse (``json.loads``); for a text that does not, the map stops where it breaks.
    A key given twice is placed where its last value is, as the parser keeps the last.
    """
    lines: dict[str, int] = {}
    stack: list[_Frame] = []
    line = 1
    position = 0
    for match in _TOKEN.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        token = match.group()
        frame = stack[-1] if stack else None
        if token in ("}", "]"):
            stack.pop()
            continue
        if token == ",":
            if frame is not None and not frame.is_object:
                frame.index += 1
            continue
        if token == ":":
            continue
        if frame is not None and frame.is_object and frame.key is None:
            try:
                frame.key = str(json.loads(token))
            except ValueError:
                return lines
            continue
        where = "$" if frame is None else _child(frame)
        lines[where] = line
        if frame is not None and frame.is_object:
            frame.key = None
        if token in ("{", "["):
            stack.append(_Frame(where, token == "{"))
    return lines


def line_of(path: str, lines: dict[str, int]) -> int | None:
    """The line of ``path``, else of its nearest enclosing value that has one (a missing key is
    shown at its object); ``None`` for the whole file (``$``) or a path not in the text."""
    while path and path != "$":
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        if cut <= 0:
            return None
        path = path[:cut]
    return None
