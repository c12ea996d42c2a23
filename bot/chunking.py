"""Splitting a reply into chat messages of limited length without breaking code blocks.

Platforms cap messages (Discord at 2000 characters, Telegram at 4096). Text is cut on line
boundaries. A code block cut in two is closed at the end of one message and
reopened, with its language, at the start of the next, so each message renders on its own. A
single line longer than a whole message is cut at a space where there is one near the end.
"""

from __future__ import annotations

import re

__all__ = ["split_message"]
_FENCE = re.compile(r"^\s*(```|~~~)")


def _cut_at(line: str, room: int) -> int:
    """Where to cut ``line`` to fit ``room``: after the last space in the second half, else at ``room``."""
    space = line.rfind(" ", room // 2, room)
    return space + 1 if space > 0 else room


class _Chunker:
    def __init__(self, limit: int) -> None:
        self.limit = limit
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
        self.size += len(line) + (1 if self.lines else 0)
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


def split_message(text: str, limit: int) -> list[str]:
    """``text`` as messages of at most ``limit`` characters; empty text gives no messages."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    chunker = _Chunker(limit)
    for line in text.split("\n"):
        opens_or_closes = _FENCE.match(line) is not None
        fence_after = (None if chunker.fence else line.strip()) if opens_or_closes else chunker.fence
        while True:
            if len(line) <= chunker.room(fence_after):
                chunker.add(line)
                break
            if chunker.has_content():
                chunker.flush()
                continue
            # Longer than a whole message: cut it, and carry on with the rest.
            cut = max(1, _cut_at(line, chunker.room(chunker.fence)))
            chunker.add(line[:cut])
            chunker.flush()
            line = line[cut:]
        chunker.fence = fence_after
    chunker.flush(last=True)
    return chunker.chunks
