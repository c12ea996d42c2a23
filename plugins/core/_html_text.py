"""A web page's gist as plain text: its title and the words a reader sees, with the stdlib's parser.

Scripts, styles, navigation, forms and the like are dropped; block elements end lines; runs of
whitespace become one space. Malformed HTML never raises: ``html.parser`` reads what it can.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_text"]

# Elements whose content is not the page's text.
_SKIPPED = frozenset(
    {"script", "style", "nav", "noscript", "template", "svg", "iframe", "form", "button", "select", "aside"}
)
_BLOCKS = frozenset(
    {"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table", "section", "article"}
    | {"header", "footer", "main", "blockquote", "pre", "hr", "dd", "dt", "figcaption"}
)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.lines: list[str] = []
        self._line: list[str] = []
        self._skipping: list[str] = []  # open skipped elements, innermost last
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIPPED:
            self._skipping.append(tag)
        elif tag in _BLOCKS:
            self._end_line()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._end_line()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIPPED and tag in self._skipping:
            while self._skipping and self._skipping.pop() != tag:  # close what was left open inside
                pass
        elif tag in _BLOCKS:
            self._end_line()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._skipping:
            self._line.append(data)

    def _end_line(self) -> None:
        line = _squash(" ".join(self._line))
        if line:
            self.lines.append(line)
        self._line = []

    def close(self) -> None:
        super().close()
        self._end_line()


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def html_to_text(html: str) -> tuple[str, str]:
    """``(title, text)`` of an HTML page; either may be empty."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return _squash(" ".join(parser.title)), "\n".join(parser.lines)
