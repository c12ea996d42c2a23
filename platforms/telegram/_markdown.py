"""The model's Markdown as Telegram MarkdownV2, and replies cut to Telegram's 4096 characters
(UTF-16 code units, as Telegram counts them: an emoji past U+FFFF is two).

MarkdownV2 makes 18 characters reserved everywhere (``_*[]()~`>#+-=|{}.!``) and rejects a
message with a single one unescaped. Models write ordinary Markdown, so it is converted: code
spans and blocks, links, **bold**, *italic* / _italic_, ~~strike~~ and # headings become their
MarkdownV2 forms; everything else is escaped and shows exactly as written. Markers that do not
pair up (``2 * 3``) are plain text. If Telegram rejects a converted message anyway, the adapter
sends the original text without formatting, so a reply is never lost.
"""

from __future__ import annotations

import re

from bot.sdk import Units, split_message, utf16_len

__all__ = ["TELEGRAM_LIMIT", "escape", "split_for_telegram", "to_markdown_v2"]

TELEGRAM_LIMIT = 4096

_RESERVED = re.compile(r"([_*\[\]()~`>#+\-=|{}.!\\])")
_CODE_RESERVED = re.compile(r"([`\\])")
_URL_RESERVED = re.compile(r"([)\\])")

# One pass, the first alternative that matches wins: code before everything (nothing inside code
# is formatting), then links, then the emphasis markers, longest first.
_TOKEN = re.compile(
    r"(?P<pre>```(?P<lang>[\w+#.-]*)[^\S\n]*\n(?P<body>.*?)\n?```)"
    r"|(?P<code>`(?P<code_body>[^`\n]+)`)"
    r"|(?P<link>\[(?P<link_text>[^\]\n]+)\]\((?P<url>[^)\s]+)\))"
    r"|(?P<bold>\*\*(?P<bold_body>\S(?:.*?\S)?)\*\*|__(?P<bold_body2>\S(?:.*?\S)?)__)"
    r"|(?P<strike>~~(?P<strike_body>\S(?:.*?\S)?)~~)"
    r"|(?P<italic>(?<![\w*])\*(?P<italic_body>[^\s*](?:[^*\n]*?[^\s*])?)\*(?![\w*])"
    r"|(?<![\w_])_(?P<italic_body2>[^\s_](?:[^_\n]*?[^\s_])?)_(?![\w_]))"
    r"|(?P<heading>^[^\S\n]{0,3}#{1,6}[^\S\n]+(?P<heading_body>[^\n]+?)[^\S\n]*#*[^\S\n]*$)",
    re.S | re.M,
)


def escape(text: str) -> str:
    """``text`` as MarkdownV2 that shows exactly ``text``."""
    return _RESERVED.sub(r"\\\1", text)


def to_markdown_v2(text: str) -> str:
    """Convert the model's Markdown to MarkdownV2 that Telegram accepts."""
    out: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        out.append(escape(text[pos : match.start()]))
        out.append(_render(match))
        pos = match.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def _render(match: re.Match[str]) -> str:
    kind = match.lastgroup
    if match.group("pre") is not None:
        body = _CODE_RESERVED.sub(r"\\\1", match.group("body"))
        return f"```{match.group('lang')}\n{body}\n```"
    if match.group("code") is not None:
        return "`" + _CODE_RESERVED.sub(r"\\\1", match.group("code_body")) + "`"
    if match.group("link") is not None:
        url = _URL_RESERVED.sub(r"\\\1", match.group("url"))
        return f"[{to_markdown_v2(match.group('link_text'))}]({url})"
    if match.group("bold") is not None:
        return "*" + to_markdown_v2(match.group("bold_body") or match.group("bold_body2")) + "*"
    if match.group("strike") is not None:
        return "~" + to_markdown_v2(match.group("strike_body")) + "~"
    if match.group("italic") is not None:
        return "_" + to_markdown_v2(match.group("italic_body") or match.group("italic_body2")) + "_"
    if match.group("heading") is not None:
        return "*" + to_markdown_v2(match.group("heading_body")) + "*"
    raise AssertionError(f"unhandled token {kind}")  # pragma: no cover


def split_for_telegram(text: str, limit: int = TELEGRAM_LIMIT) -> list[tuple[str, str]]:
    """``text`` as messages: ``(markdown_v2, original)`` pairs, each converted message within
    ``limit`` UTF-16 code units, cut on line boundaries without breaking code blocks.

    Escaping makes text longer, so the cut is planned on the original at the size that, at this
    text's rate of growth, converts to just under the limit; if a piece still grows past it,
    the whole plan is made again a little smaller.
    """
    length = utf16_len(text)
    grown = utf16_len(to_markdown_v2(text))
    size = limit if grown <= length else max(1, limit * length // grown)
    while True:
        pieces = [(to_markdown_v2(chunk), chunk) for chunk in split_message(text, size, Units.UTF16)]
        if all(utf16_len(converted) <= limit for converted, _ in pieces) or size == 1:
            return pieces
        size = max(1, size * 9 // 10)
