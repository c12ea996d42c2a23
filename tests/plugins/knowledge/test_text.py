"""Token estimates and chunking: pure functions."""

from __future__ import annotations

import itertools

import pytest

from plugins.knowledge._text import chunk_text, estimate_tokens, query_terms, stem


def test_tokens_are_utf8_bytes_over_three_and_a_half() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a" * 35) == 10
    assert estimate_tokens("é" * 35) == 20  # two bytes a character
    assert estimate_tokens("猫" * 7) == 6  # three bytes a character: about one token each


def _paragraphs(count: int, sentences: int = 6) -> str:
    return "\n\n".join(
        " ".join(f"Paragraph {p} sentence {s} says something about topic {p * 10 + s}." for s in range(sentences))
        for p in range(count)
    )


def test_short_text_is_one_chunk_and_blank_text_none() -> None:
    assert chunk_text("Just one line.", 500, 100) == ["Just one line."]
    assert chunk_text("  \n\n \n", 500, 100) == []


def test_chunks_stay_within_the_budget_and_cover_every_sentence() -> None:
    text = _paragraphs(30)
    chunks = chunk_text(text, 200, 40)
    assert len(chunks) > 5
    assert all(estimate_tokens(c) <= 200 for c in chunks)
    for p in range(30):
        for s in range(6):
            assert any(f"Paragraph {p} sentence {s} " in c for c in chunks)


def test_chunks_end_at_sentence_ends_and_overlap_by_whole_sentences() -> None:
    chunks = chunk_text(_paragraphs(30), 200, 40)
    for before, after in itertools.pairwise(chunks):
        assert before.endswith(".")
        first_sentence = after.split(". ")[0].split("\n")[0] + "."
        assert first_sentence in before  # the next chunk starts with the end of this one
        assert estimate_tokens(first_sentence) <= 40


def test_no_overlap_when_asked_for_none() -> None:
    chunks = chunk_text(_paragraphs(10), 150, 0)
    sentences = [s for c in chunks for s in c.replace("\n\n", " ").split(". ")]
    assert len(sentences) == len(set(sentences))


def test_chunks_prefer_paragraph_breaks() -> None:
    text = _paragraphs(12, sentences=3)  # paragraphs of about 60 tokens
    chunks = chunk_text(text, 200, 0)
    assert all(c.startswith("Paragraph") and " sentence 0 " in c.split("\n")[0] for c in chunks)


def test_a_sentence_longer_than_a_chunk_is_cut_at_spaces_and_a_giant_word_anywhere() -> None:
    words = " ".join(f"word{i}" for i in range(400))
    chunks = chunk_text(words, 100, 0)
    assert all(estimate_tokens(c) <= 100 for c in chunks)
    assert " ".join(chunks).split() == words.split()
    blob = "x" * 2000
    pieces = chunk_text(blob, 100, 10)
    assert "".join(pieces) == blob and all(estimate_tokens(p) <= 100 for p in pieces)


def test_windows_line_ends_are_paragraph_breaks_too() -> None:
    assert chunk_text("One.\r\n\r\nTwo.", 500, 0) == ["One.\n\nTwo."]


def test_bad_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="max_tokens must be at least 1"):
        chunk_text("text", 0, 0)


def test_query_terms_drop_function_words_unless_nothing_else_is_left() -> None:
    assert query_terms("What does the Zorblat eat? the zorblat!") == ["zorblat", "eat"]
    assert query_terms("who are you") == ["who", "are", "you"]
    assert query_terms("?!") == []


def test_stem_matches_simple_inflections() -> None:
    assert stem("eats") == stem("eat") == "eat"
    assert stem("Pollinated") == "pollinat"
    assert stem("is") == "is" and stem("glass") == "glass"
