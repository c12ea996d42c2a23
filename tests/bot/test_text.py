"""Text repair: what the platforms and the store cannot encode becomes U+FFFD, never an error."""

from __future__ import annotations

import pytest

from bot.kernel.text import first_words, repair_text, utf16_fit, utf16_len


@pytest.mark.parametrize(
    ("broken", "repaired"),
    [
        ("a\ud800b", "a\ufffdb"),  # a lone high surrogate
        ("\ude00y", "\ufffdy"),  # a lone low surrogate
        ("ends with x\ud83d", "ends with x\ufffd"),  # a pair cut short at the end
        ("\udc80\udcff", "\ufffd\ufffd"),  # undecodable bytes smuggled in by surrogateescape
        ("smile \ud83d\ude00", "smile \U0001f600"),  # a pair split into halves: joined again
    ],
)
def test_lone_surrogates_become_replacement_characters_and_pairs_are_joined(broken: str, repaired: str) -> None:
    assert repair_text(broken) == repaired
    repaired.encode("utf-8")  # and the result is valid UTF-8


def test_valid_text_is_returned_unchanged() -> None:
    text = "Grüße, 世界 \U0001f600 \ufffd\n\t"
    assert repair_text(text) is text


def test_first_words_name_a_message_briefly_on_one_line() -> None:
    assert first_words("Hello Sam,\nhow   are you today? I hope well") == "Hello Sam, how are you today?…"
    assert first_words("Short one.") == "Short one."
    assert first_words("x" * 200) == "x" * 40 + "…"
    assert first_words("broken \ud800 text") == "broken \ufffd text"


def test_utf16_length_counts_a_character_past_the_bmp_twice_and_a_fit_never_halves_one() -> None:
    assert utf16_len("") == 0 and utf16_len("café") == 4 and utf16_len("😀") == 2 and utf16_len("👍🏽") == 4
    assert utf16_fit("ab😀c", 3) == 2  # the emoji would need units 3 and 4: it waits for the next part
    assert utf16_fit("ab😀c", 4) == 3 and utf16_fit("ab😀c", 99) == 4 and utf16_fit("😀", 1) == 0
