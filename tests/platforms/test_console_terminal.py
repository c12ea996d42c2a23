"""What the character says while the person is typing goes above the line being typed."""

from __future__ import annotations

import io

from platforms.console import TerminalPrompt


class FakeReadline:
    """What the prompt asks of readline: the line typed so far."""

    def __init__(self, typed: str) -> None:
        self.typed = typed

    def get_line_buffer(self) -> str:
        return self.typed


def test_a_line_written_while_the_person_types_goes_above_the_prompt_which_is_shown_again() -> None:
    screen = io.StringIO()
    prompt = TerminalPrompt(stdout=screen)
    prompt._readline = FakeReadline("half a sent")
    prompt._reading.set()
    print("! Iris: the knowledge folder is missing", file=prompt, flush=True)  # two writes: text, newline
    assert screen.getvalue() == "\r\x1b[K! Iris: the knowledge folder is missing\n> half a sent"


def test_without_a_prompt_showing_text_is_written_as_it_comes() -> None:
    screen = io.StringIO()
    prompt = TerminalPrompt(stdout=screen)
    print("Iris: hello", file=prompt)
    assert screen.getvalue() == "Iris: hello\n"
