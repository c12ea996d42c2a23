"""Buttons in a reply's content, their layout, and the press that comes back."""

from __future__ import annotations

import logging

import pytest

from bot.kernel.buttons import (
    MAX_BUTTONS,
    MAX_KEYBOARD_ANSWERS,
    Button,
    Menu,
    Press,
    ReplyKeyboard,
    Settled,
    TextPrompt,
    buttons_in,
    buttons_shown,
    rows,
)


def test_a_button_has_a_value_or_a_link() -> None:
    assert not Button("Yes", value="yes").is_link
    assert Button("Docs", url="https://example.com/docs").is_link
    with pytest.raises(ValueError, match="either a value .* or a url"):
        Button("Both", value="x", url="https://example.com")
    with pytest.raises(ValueError, match="either a value .* or a url"):
        Button("Neither")


@pytest.mark.parametrize(
    ("button", "message"),
    [
        (dict(label=" ", value="x"), "needs a label"),
        (dict(label="x" * 81, value="x"), "at most 80 characters, not 81"),
        (dict(label="Long", value="é" * 33), "1 to 64 bytes, not 66"),
        (dict(label="Empty", value=""), "1 to 64 bytes, not 0"),
        (dict(label="Script", url="javascript:alert(1)"), "http\\(s\\) or tg link"),
        (dict(label="Relative", url="/docs"), "http\\(s\\) or tg link"),
    ],
)
def test_a_bad_button_says_what_is_wrong(button: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Button.parse(button)


def test_buttons_in_content_take_the_common_spellings_and_leave_out_what_is_wrong(
    caplog: pytest.LogCaptureFixture,
) -> None:
    content = {
        "buttons": [
            Button("One", value="1"),
            {"text": "Two", "callback_data": "2"},
            {"label": "Site", "url": "https://example.com"},
            {"label": "Again one", "value": "1"},
            "three",
            {"label": "", "value": "4"},
        ]
    }
    with caplog.at_level(logging.WARNING):
        found = buttons_in(content)
    assert found == [Button("One", value="1"), Button("Two", value="2"), Button("Site", url="https://example.com")]
    assert "'Again one' has the same value as another" in caplog.text
    assert "a Button or a mapping, not str" in caplog.text
    assert "needs a label" in caplog.text
    assert buttons_in({}) == [] and buttons_in({"buttons": "not a list"}) == []


def test_at_most_25_buttons_go_in_one_message(caplog: pytest.LogCaptureFixture) -> None:
    many = [Button(f"B{n}", value=str(n)) for n in range(30)]
    with caplog.at_level(logging.WARNING):
        assert buttons_in({"buttons": many}) == many[:MAX_BUTTONS]
    assert "at most 25" in caplog.text


def test_rows_fill_up_to_a_width_and_give_long_labels_a_row_of_their_own() -> None:
    short = [Button(s, value=s) for s in ("A", "B", "C", "D", "E")]
    assert [[b.label for b in row] for row in rows(short, 2)] == [["A", "B"], ["C", "D"], ["E"]]
    mixed = [Button("Yes", value="y"), Button("A rather long answer to choose", value="l"), Button("No", value="n")]
    assert [[b.label for b in row] for row in rows(mixed, 5)] == [["Yes"], ["A rather long answer to choose"], ["No"]]
    with pytest.raises(ValueError, match="per_row"):
        rows(short, 0)


def test_a_press_round_trips_through_a_message_content_and_knows_its_label() -> None:
    press = Press.find("2", [Button("One", value="1"), Button("Two", value="2")])
    assert press == Press("2", "Two") and press.text == "Two"
    assert Press.of(press.record()) == press
    unlabelled = Press.find("9", [])
    assert unlabelled.text == "9" and Press.of(unlabelled.record()) == unlabelled
    assert Press.of({"text": "hi"}) is None and Press.of({"value": ""}) is None and Press.of("y") is None
    assert Button("Site", url="https://example.com").record() == {"label": "Site", "url": "https://example.com"}


def test_buttons_shown_by_a_platform_leave_out_what_troupe_could_not_have_sent() -> None:
    shown = [("Yes", "y"), ("x" * 81, "long label"), ("", "no label"), ("Big", "v" * 65), ("No", "n")]
    assert buttons_shown(shown) == [Button("Yes", value="y"), Button("No", value="n")]


def test_a_settled_press_shows_its_note_under_the_question() -> None:
    settled = Settled("✓ chosen: red")
    assert settled.shown_under("Which colour?  ") == "Which colour?\n\n✓ chosen: red"
    assert settled.shown_under("") == "✓ chosen: red"
    with pytest.raises(ValueError, match="needs a note"):
        Settled(" ")


def test_a_reply_keyboard_offers_a_few_distinct_answers_or_none_to_take_it_away() -> None:
    assert ReplyKeyboard(("Tea", "Coffee")).one_time and not ReplyKeyboard(("Tea",)).removes
    assert ReplyKeyboard.removed().removes
    with pytest.raises(ValueError, match="answers must differ"):
        ReplyKeyboard(("Tea", "tea"))
    with pytest.raises(ValueError, match="1 to 80 characters"):
        ReplyKeyboard(("Tea", " "))
    with pytest.raises(ValueError, match=f"at most {MAX_KEYBOARD_ANSWERS} answers"):
        ReplyKeyboard(tuple(str(n) for n in range(MAX_KEYBOARD_ANSWERS + 1)))


OPTIONS = tuple(Button(name, value=name.lower()) for name in ("Red", "Green", "Blue"))


def test_a_menu_checks_its_options_and_counts() -> None:
    assert Menu.of(OPTIONS, "Pick", max_values=2) == Menu(OPTIONS, "Pick", 1, 2)
    for options, low, high, message in [
        ((), 1, 1, "1 to 25 options, not 0"),
        (tuple(Button(f"B{i}", value=str(i)) for i in range(26)), 1, 1, "1 to 25 options, not 26"),
        ((Button("Docs", url="https://example.com"),), 1, 1, "no links"),
        ((Button("A", value="x"), Button("B", value="x")), 1, 1, "different values"),
        (OPTIONS, 2, 1, "not 2 to 1"),
        (OPTIONS, 1, 4, "not 1 to 4"),
    ]:
        with pytest.raises(ValueError, match=message):
            Menu(options, "", low, high)
    with pytest.raises(ValueError, match="placeholder is at most 100"):
        Menu(OPTIONS, "x" * 101)


def test_a_choice_of_several_options_is_one_press_that_reads_back_from_its_record() -> None:
    press = Press.of_menu(["blue", "red"], OPTIONS)
    assert press == Press("blue", "Blue", also=(Press("red", "Red"),))
    assert press.text == "Blue, Red" and press.values == ("blue", "red")
    assert Press.of(press.record()) == press
    assert Press.of_menu([], OPTIONS) is None
    assert Press("x", "X").record() == {"value": "x", "label": "X"}  # a plain press keeps its old record


def test_a_button_that_asks_for_text_keeps_its_prompt_and_its_answer_is_the_press_text() -> None:
    other = Button("Other…", value="other", asks=TextPrompt("Which one?", "mauve", 40))
    assert Button.parse(other.record()) == other
    assert Button.parse({"label": "Other", "value": "o", "asks": {"label": "Which?", "max_length": 5}}).asks == (
        TextPrompt("Which?", "", 5)
    )
    answered = Press("other", "Other…", answer="mauve")
    assert answered.text == "mauve" and Press.of(answered.record()) == answered
    with pytest.raises(ValueError, match="cannot ask for text"):
        Button("Docs", url="https://example.com", asks=TextPrompt("Why?"))
    for bad, message in [
        (dict(label=""), "1 to 45 characters"),
        (dict(label="x" * 46), "1 to 45 characters"),
        (dict(label="ok", placeholder="x" * 101), "at most 100"),
        (dict(label="ok", max_length=0), "1 to 4000"),
    ]:
        with pytest.raises(ValueError, match=message):
            TextPrompt(**bad)  # type: ignore[arg-type]
