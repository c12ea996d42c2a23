"""Buttons a reply carries, and the press that comes back.

An action (or the plan) puts :class:`Button` values in a reply's ``buttons``; each platform shows
them under the reply's last message (Telegram: an inline keyboard; Discord: message components),
laid out by :func:`rows`. A button either opens a link (``url``) or carries a ``value``: pressing
it comes back to the character as a message from the person who pressed it, in the room (and
topic) of the message the button was under. That message's text is the button's label and its
content holds the :class:`Press` (``content.button``), so a handler can act on the value
without asking a model. The platform acknowledges the press as soon as it arrives (Telegram's
answerCallbackQuery, a deferred Discord interaction), before the character thinks about it.

The limits are the stricter of the two platforms': a value of at most 64 bytes (Telegram's
``callback_data``; Discord's ``custom_id`` takes 100 characters) and a label of at most 80
characters (Discord's), at most 25 buttons (Discord's five rows of five).

A press handler may answer on the message the button was under rather than below it: a reply
that :class:`Settled` the press (``Reply.settles``) edits that message where the platform can
(Telegram: editMessageText; Discord: an edit of the bot's own message), showing a note such
as "✓ chosen: red" under its text and removing its buttons, so that the question cannot be
answered twice by mistake; where it cannot be edited the reply's own text goes as usual.

A :class:`ReplyKeyboard` (``Reply.keyboard``) offers fixed answers in place of the phone's
keyboard (Telegram's ReplyKeyboardMarkup); a tap sends the answer's words as an ordinary message
from the person. Platforms without one (Discord) show the question's text alone.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

JSON = dict[str, Any]


__all__ = [
    "Button",
    "buttons_checked",
    "buttons_in",
    "buttons_shown",
    "MAX_BUTTONS",
    "MAX_KEYBOARD_ANSWERS",
    "MAX_LABEL_CHARS",
    "MAX_VALUE_BYTES",
    "Press",
    "ReplyKeyboard",
    "rows",
    "Settled",
]

_log = logging.getLogger(__name__)

MAX_VALUE_BYTES = 64
MAX_LABEL_CHARS = 80
MAX_BUTTONS = 25
#: Answers one reply keyboard offers; a phone shows a dozen at most without scrolling.
MAX_KEYBOARD_ANSWERS = 12
_LINK_SCHEMES = frozenset({"http", "https", "tg"})


@dataclass(frozen=True, slots=True)
class Button:
    """One button: a label and either a value that comes back when pressed, or a link to open.

    Raises:
        ValueError: no label, a label too long, neither or both of value and url, a value empty
            or over 64 bytes, or a url that is not http(s) or tg.
    """

    label: str
    value: str | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        if not self.label.strip():
            raise ValueError("a button needs a label")
        if len(self.label) > MAX_LABEL_CHARS:
            raise ValueError(f"a button's label is at most {MAX_LABEL_CHARS} characters, not {len(self.label)}")
        if (self.value is None) == (self.url is None):
            raise ValueError(
                f"button {self.label!r} has either a value (pressed) or a url (a link), not both nor neither"
            )
        if self.value is not None and not 1 <= len(self.value.encode()) <= MAX_VALUE_BYTES:
            raise ValueError(
                f"button {self.label!r}: its value is 1 to {MAX_VALUE_BYTES} bytes, not {len(self.value.encode())}"
            )
        if self.url is not None and (urlsplit(self.url).scheme not in _LINK_SCHEMES or not urlsplit(self.url).netloc):
            raise ValueError(f"button {self.label!r}: its url must be an http(s) or tg link")

    @property
    def is_link(self) -> bool:
        return self.url is not None

    @classmethod
    def parse(cls, item: object) -> Button:
        """A Button from a Button or a mapping with ``label`` (or ``text``) and ``value`` (or
        ``callback_data``/``data``) or ``url``.

        Raises:
            ValueError: what is wrong with it (see the class).
        """
        if isinstance(item, Button):
            return item
        if not isinstance(item, Mapping):
            raise ValueError(f"a button is a Button or a mapping, not {type(item).__name__}")
        label = item.get("label", item.get("text"))
        value = next((item[k] for k in ("value", "callback_data", "data") if item.get(k) is not None), None)
        url = item.get("url")
        return cls(
            label=str(label or ""),
            value=None if value is None else str(value),
            url=None if url is None else str(url),
        )

    def record(self) -> JSON:
        """What a stored message keeps of it."""
        return (
            {"label": self.label, "url": self.url}
            if self.url is not None
            else {"label": self.label, "value": self.value}
        )


def buttons_in(content: Mapping[str, object]) -> list[Button]:
    """The buttons ``content["buttons"]`` carries (see :meth:`Button.parse`), at most
    :data:`MAX_BUTTONS`; one that is not a button, or one too many, is left out with a warning
    that says why. Two buttons with the same value keep the first (a press could not tell them apart)."""
    raw = content.get("buttons")
    return buttons_checked(raw if isinstance(raw, (list, tuple)) else ())


def buttons_checked(items: Iterable[object]) -> list[Button]:
    """``items`` as buttons, left out as :func:`buttons_in` leaves them out, with its warnings."""
    found: list[Button] = []
    values: set[str] = set()
    for item in items:
        try:
            button = Button.parse(item)
        except ValueError as exc:
            _log.warning("a button left out: %s", exc)
            continue
        if button.value is not None and button.value in values:
            _log.warning("a button left out: %r has the same value as another", button.label)
            continue
        if len(found) == MAX_BUTTONS:
            _log.warning("buttons left out: a message holds at most %d", MAX_BUTTONS)
            break
        if button.value is not None:
            values.add(button.value)
        found.append(button)
    return found


def buttons_shown(shown: Iterable[tuple[str, str]]) -> list[Button]:
    """The buttons with a value a platform shows under a message, from its ``(label, value)``
    pairs, to read a press's label by (:meth:`Press.find`). One troupe could not have sent (a
    label or value past the limits, none at all) is left out: its press comes with its value only."""
    found: list[Button] = []
    for label, value in shown:
        with contextlib.suppress(ValueError):
            found.append(Button(label, value=value))
    return found


def rows(buttons: Sequence[Button], per_row: int, *, row_chars: int = 30) -> list[list[Button]]:
    """``buttons`` in rows of at most ``per_row``, a row also ending before its labels pass
    ``row_chars`` characters together (long labels get a row of their own: chat clients cut
    them otherwise)."""
    if per_row < 1:
        raise ValueError("per_row is 1 or more")
    laid: list[list[Button]] = []
    for button in buttons:
        row = laid[-1] if laid else None
        if row is None or len(row) >= per_row or sum(len(b.label) for b in row) + len(button.label) > row_chars:
            laid.append([button])
        else:
            row.append(button)
    return laid


@dataclass(frozen=True, slots=True)
class Press:
    """A button pressed: the value it carried, and its label when the platform still knows it
    (a Telegram press on a message the bot can no longer read comes with the value only)."""

    value: str
    label: str | None = None

    @property
    def text(self) -> str:
        """What the person 'said' by pressing: the label, else the value."""
        return self.label or self.value

    def record(self) -> JSON:
        """The press as the content of the message it becomes holds it (``content.button``)."""
        return {"value": self.value, "label": self.label}

    @classmethod
    def of(cls, record: object) -> Press | None:
        """The press a stored record (:meth:`record`) holds; None for anything else."""
        if not isinstance(record, Mapping) or not isinstance(record.get("value"), str) or not record["value"]:
            return None
        label = record.get("label")
        return cls(str(record["value"]), label if isinstance(label, str) and label else None)

    @classmethod
    def find(cls, value: str, buttons: Iterable[Button]) -> Press:
        """The press of ``value``, labelled as the button among ``buttons`` that carries it."""
        label = next((b.label for b in buttons if b.value == value), None)
        return cls(value, label)


@dataclass(frozen=True, slots=True)
class Settled:
    """What a reply to a press does to the message the button was under: ``note`` shown under its
    text ("✓ chosen: red"), its buttons removed, instead of a new message (see the module docstring).

    Raises:
        ValueError: an empty note.
    """

    note: str

    def __post_init__(self) -> None:
        if not self.note.strip():
            raise ValueError("a settled press needs a note to show on its message")

    def shown_under(self, text: str) -> str:
        """``text`` with the note under it (a blank line between); the note alone for no text."""
        return f"{text.rstrip()}\n\n{self.note}" if text.strip() else self.note


@dataclass(frozen=True, slots=True)
class ReplyKeyboard:
    """Fixed answers shown in place of the phone's keyboard (Telegram's ReplyKeyboardMarkup);
    a tap sends the answer as the person's own message. ``one_time``: the keyboard hides once
    tapped; ``resize``: as tall as its answers, not the phone keyboard's height. No answers at
    all (:meth:`removed`) takes away a keyboard an earlier reply showed.

    Raises:
        ValueError: an empty answer or one over 80 characters, two alike, or more than
            :data:`MAX_KEYBOARD_ANSWERS`.
    """

    answers: tuple[str, ...]
    one_time: bool = True
    resize: bool = True

    def __post_init__(self) -> None:
        if len(self.answers) > MAX_KEYBOARD_ANSWERS:
            raise ValueError(f"a reply keyboard offers at most {MAX_KEYBOARD_ANSWERS} answers, not {len(self.answers)}")
        for answer in self.answers:
            if not answer.strip() or len(answer) > MAX_LABEL_CHARS:
                raise ValueError(f"a reply keyboard's answer is 1 to {MAX_LABEL_CHARS} characters, not {answer!r}")
        if len({a.casefold() for a in self.answers}) != len(self.answers):
            raise ValueError("a reply keyboard's answers must differ (a tap could not be told apart)")

    @classmethod
    def removed(cls) -> ReplyKeyboard:
        """The keyboard taken away (Telegram's ReplyKeyboardRemove)."""
        return cls(())

    @property
    def removes(self) -> bool:
        return not self.answers
