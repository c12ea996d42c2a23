"""Splitting a reply into chat messages of limited length without breaking code blocks.

Platforms cap messages (Discord at 2000 characters, Telegram at 4096), each counting in its own
units: Discord's API counts Unicode code points, Telegram counts UTF-16 code units (an emoji past
U+FFFF is two), so the limit is given with its :class:`Units`. Text is cut on line boundaries,
never inside a character. A code block cut in two is closed at the end of one message and
reopened, with its language, at the start of the next, so each message renders on its own. A
single line longer than a whole message is cut at a space where there is one near the end.
"""

from __future__ import annotations

import re
from enum import Enum

from bot.kernel.text import utf16_fit, utf16_len

__all__ = ["Units", "split_message"]
_FENCE = re.compile(r"^\s*(```|~~~)")


class Units(Enum):
    """What a platform counts its message limit in."""

    CODE_POINTS = "code points"  # Discord: its API counts Unicode code points
    UTF16 = "UTF-16 code units"  # Telegram: a character past U+FFFF counts two

    def size(self, text: str) -> int:
        return utf16_len(text) if self is Units.UTF16 else len(text)

    def fit(self, text: str, room: int) -> int:
        """How many characters of ``text`` fit in ``room`` units."""
        return utf16_fit(text, room) if self is Units.UTF16 else min(len(text), room)


def _cut_at(line: str, room: int, units: Units) -> int:
    """Where to cut ``line`` to fit ``room``: after the last space in the second half, else at ``room``."""
    end = units.fit(line, room)
    space = line.rfind(" ", end // 2, end)
    return space + 1 if space > 0 else end


class _Chunker:
    def __init__(self, limit: int, units: Units) -> None:
        self.limit = limit
        self.units = units
        self.chunks: list[str] = []
        self.lines: list[str] = []
        self.size = 0
        self.fence: str | None = None  # the opening line of the code block open at this point

    def _closer(self) -> str:
        return "\n" + _FENCE.match(self.fence).group(1) if self.fence else ""  # type: ignore[union-attr]

    def room(self, fence_after: str | None) -> int:
        closer = len("\n```") if fence_after else 0
        return self.limit - self.size - (1 if self.lines else 0) - closer

    def has_content(self) -> bool:
        return bool(self.lines) and self.lines != [self.fence]

    def add(self, line: str) -> None:
        self.size += self.units.size(line) + (1 if self.lines else 0)
        self.lines.append(line)

    def flush(self, *, last: bool = False) -> None:
        body = "\n".join(self.lines)
        if self.fence is not None and self.has_content():
            body += self._closer()
        if body.strip() and self.has_content():
            self.chunks.append(body.strip("\n"))
        self.lines, self.size = [], 0
        if self.fence is not None and not last:
            self.add(self.fence)


def split_message(text: str, limit: int, units: Units = Units.CODE_POINTS) -> list[str]:
    """``text`` as messages of at most ``limit`` ``units``; empty text gives no messages."""
    text = text.strip()
    if units.size(text) <= limit:
        return [text] if text else []
    chunker = _Chunker(limit, units)
    for line in text.split("\n"):
        opens_or_closes = _FENCE.match(line) is not None
        fence_after = (None if chunker.fence else line.strip()) if opens_or_closes else chunker.fence
        while True:
            if units.size(line) <= chunker.room(fence_after):
                chunker.add(line)
                break
            if chunker.has_content():
                chunker.flush()
                continue
            # Longer than a whole message: cut it, and carry on with the rest.
            cut = max(1, _cut_at(line, chunker.room(chunker.fence), units))
            chunker.add(line[:cut])
            chunker.flush()
            line = line[cut:]
        chunker.fence = fence_after
    chunker.flush(last=True)
    return chunker.chunks
