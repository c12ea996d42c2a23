"""Splitting long replies into chat messages."""

from __future__ import annotations

import random
import re

import pytest

from bot.kernel.chunking import Units, split_message

FENCE = re.compile(r"^\s*(```|~~~)", re.M)


def content(text: str) -> str:
    """The text without fence lines and whitespace: what splitting must keep, in order."""
    return "".join("".join(line.split()) for line in text.split("\n") if not FENCE.match(line))


def check(text: str, limit: int = 2000) -> list[str]:
    chunks = split_message(text, limit)
    assert all(0 < len(c) <= limit for c in chunks)
    assert all(len(FENCE.findall(c)) % 2 == 0 for c in chunks), "every message has balanced fences"
    assert "".join(content(c) for c in chunks) == content(text), "nothing lost, nothing reordered"
    return chunks


def test_short_text_is_one_message_and_empty_is_none() -> None:
    assert split_message("  hello  ", 2000) == ["hello"]
    assert split_message("   \n ", 2000) == []


def test_a_2500_character_reply_with_a_code_block_is_two_valid_messages() -> None:
    code = "\n".join(f"    total += item_{i}  # accumulate" for i in range(45))
    text = "Here is the fix:\n" + "Some explanation. " * 50 + "\n```python\n" + code + "\n```\nThat's it."
    assert 2400 < len(text) < 2700
    chunks = check(text)
    assert len(chunks) == 2
    assert chunks[0].endswith("\n```") and chunks[1].startswith("```python\n")  # closed and reopened
    assert chunks[1].endswith("That's it.")


def test_lines_are_kept_whole_when_they_fit() -> None:
    lines = [f"line {i} " + "x" * 50 for i in range(100)]
    chunks = check("\n".join(lines))
    for chunk in chunks:
        for line in chunk.split("\n"):
            assert line in lines


def test_a_line_longer_than_a_message_is_cut_at_a_space() -> None:
    text = "word " * 1000
    chunks = check(text)
    assert all(not c.startswith("ord") for c in chunks)  # no word is cut in half
    unbroken = "y" * 4500
    assert [len(c) for c in split_message(unbroken, 2000)] == [2000, 2000, 500]


def test_an_unterminated_code_block_is_closed() -> None:
    text = "```js\n" + "\n".join("console.log(1);" for _ in range(200))
    chunks = check(text)
    assert all(c.startswith("```js") and c.endswith("```") for c in chunks)


def test_tilde_fences_and_long_lines_inside_code() -> None:
    text = "~~~\n" + "z" * 3000 + "\n~~~\nafter"
    chunks = check(text)
    assert chunks[0].startswith("~~~") and chunks[0].endswith("~~~")


@pytest.mark.parametrize("seed", range(20))
def test_random_texts_keep_every_invariant(seed: int) -> None:
    rng = random.Random(seed)
    parts = []
    for _ in range(rng.randint(5, 60)):
        kind = rng.random()
        if kind < 0.15:
            parts.append("```" + rng.choice(["", "py", "rust"]))
        else:
            parts.append(" ".join("w" * rng.randint(1, 12) for _ in range(rng.randint(0, 80))))
    check("\n".join(parts), limit=rng.choice([200, 500, 2000]))


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_utf16_units_count_an_emoji_twice_and_a_cut_never_splits_one() -> None:
    text = "😀" * 3000
    chunks = split_message(text, 4096, Units.UTF16)
    assert len(chunks) == 2 and "".join(chunks) == text
    assert all(utf16_units(c) <= 4096 for c in chunks)
    mixed = "".join(random.Random(3).choice(["a", "é", "😀", "👍🏽", " ", "\n"]) for _ in range(9000))
    chunks = split_message(mixed, 100, Units.UTF16)
    assert all(0 < utf16_units(c) <= 100 for c in chunks)
    assert "".join("".join(c.split()) for c in chunks) == "".join(mixed.split())


def test_discord_counts_code_points_so_an_emoji_is_one() -> None:
    # Discord's API counts Unicode code points: 2,000 emoji fit in one message.
    assert split_message("😀" * 2000, 2000) == ["😀" * 2000]
