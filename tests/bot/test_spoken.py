"""Text for the ear: Markdown removed, sentences handed out as the reply grows."""

from __future__ import annotations

from bot.media.spoken import SentenceStream, spoken_text


def test_markdown_is_made_readable_aloud() -> None:
    text = "# Plan\n- **first** step, see [the docs](https://x.y/p)\n```py\nprint(1)\n```\nor https://a.b/c"
    assert spoken_text(text) == "Plan\nfirst step, see the docs\n\nor a link"


def test_sentences_come_out_as_soon_as_they_are_complete() -> None:
    reply = "Hello there, friend! The plan, e.g. the map, is ready. It costs 3.5 coins? Yes. Last words"
    stream, seen = SentenceStream(), []
    for end in range(1, len(reply) + 1):  # the model writes one character at a time
        for sentence in stream.feed(reply[:end]):
            seen.append((end, sentence))
    rest = stream.finish(reply)
    sentences = [s for _, s in seen] + rest
    assert sentences == [
        "Hello there, friend!",
        "The plan, e.g. the map, is ready.",
        "It costs 3.5 coins?",
        "Yes. Last words",
    ]  # "Yes." alone is too short to be worth a TTS call
    assert seen[0][0] == len("Hello there, friend! ")  # handed out one character after it ended


def test_a_line_break_ends_a_sentence_and_finish_gives_the_rest_once() -> None:
    stream = SentenceStream()
    assert stream.feed("A list of things to do\nthen") == ["A list of things to do"]
    assert stream.finish("A list of things to do\nthen more") == ["then more"]
    assert stream.finish("A list of things to do\nthen more") == []


def test_a_text_taken_back_starts_the_sentences_afresh() -> None:
    """A tool turn's text before its calls is taken back (an empty text), and the reply follows."""
    stream = SentenceStream()
    assert stream.feed("Let me look that up for you. And") == ["Let me look that up for you."]
    assert stream.feed("") == []  # taken back: " And" is never said
    assert stream.feed("It is sunny in Oslo today. It") == ["It is sunny in Oslo today."]
    assert stream.finish("It is sunny in Oslo today. It is 21 degrees.") == ["It is 21 degrees."]
