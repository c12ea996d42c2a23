"""Markdown from the model → Telegram MarkdownV2, and splitting at 4096."""

from __future__ import annotations

import random
import re

import pytest

from platforms.telegram._markdown import (
    TELEGRAM_LIMIT,
    escape,
    split_for_telegram,
    to_markdown_v2,
)

RESERVED = "_*[]()~`>#+-=|{}.!"


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


@pytest.mark.parametrize(
    ("markdown", "v2"),
    [
        ("Plain text stays plain", "Plain text stays plain"),
        ("Hello. World!", "Hello\\. World\\!"),
        ("**bold**, __bold__, *italic*, _italic_, ~~gone~~", "*bold*, *bold*, _italic_, _italic_, ~gone~"),
        ("**bold with _italic_ inside**", "*bold with _italic_ inside*"),
        ("run `a_b*c()` now", "run `a_b*c()` now"),
        ("```python\nprint('a\\\\b`')\n```", "```python\nprint('a\\\\\\\\b\\`')\n```"),
        ("[the docs](https://example.com/x?a=1) here.", "[the docs](https://example.com/x?a=1) here\\."),
        ("# Title (v2)\nbody", "*Title \\(v2\\)*\nbody"),
        ("2 * 3 = 6, a_b_c, snake_case_name", "2 \\* 3 \\= 6, a\\_b\\_c, snake\\_case\\_name"),
        ("> quoted - 1 + 1 {x} | y #tag", "\\> quoted \\- 1 \\+ 1 \\{x\\} \\| y \\#tag"),
    ],
)
def test_conversion(markdown: str, v2: str) -> None:
    assert to_markdown_v2(markdown) == v2


def test_text_full_of_reserved_characters_shows_exactly_as_written() -> None:
    rng = random.Random(7)
    for _ in range(200):
        text = "".join(rng.choice(RESERVED + "ab \n\\") for _ in range(rng.randint(1, 60)))
        # No markdown pairs survive in random noise only when escaped: what shows is the input.
        assert unescape(escape(text)) == text


def test_every_reserved_character_is_escaped_outside_formatting() -> None:
    converted = to_markdown_v2(RESERVED)
    assert re.search(r"(?<!\\)[" + re.escape(RESERVED) + "]", converted) is None


def test_long_text_is_split_and_each_converted_piece_fits() -> None:
    text = ("Line with dots... and (parens)!\n" * 300) + "```\n" + ("code_line = x * y\n" * 100) + "```"
    pieces = split_for_telegram(text)
    assert len(pieces) >= 2 and all(len(v2) <= TELEGRAM_LIMIT for v2, _ in pieces)
    assert "\n".join(original for _, original in pieces).replace("```", "").split() == text.replace("```", "").split()
    assert all(v2.count("```") % 2 == 0 for v2, _ in pieces)


def test_a_5000_character_reply_is_two_messages() -> None:
    text = "\n".join(f"Point {i}: keep going." for i in range(230))
    assert 4900 < len(text) < 5200
    assert len(split_for_telegram(text)) == 2
