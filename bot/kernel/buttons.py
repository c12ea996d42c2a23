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

A :class:`Menu` (``Reply.menu``) offers up to 25 options in one select menu (Discord's string
select), beside the buttons; a choice comes back as a press does, one message however many
options were chosen (``Press.also`` holds the others). Telegram has no menus: its options are
shown as buttons, each tap a choice of one.

A button that ``asks`` a :class:`TextPrompt` wants words, not a click: pressed, it asks the
person for a line of text (a Discord modal; on Telegram a question the person answers by
replying), and the answer comes back as a press whose ``answer`` holds the text.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
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
    "MAX_MENU_OPTIONS",
    "MAX_VALUE_BYTES",
    "Menu",
    "Press",
    "ReplyKeyboard",
    "rows",
    "Settled",
    "TextPrompt",
]

_log = logging.getLogger(__name__)

MAX_VALUE_BYTES = 64
MAX_LABEL_CHARS = 80
MAX_BUTTONS = 25
#: Answers one reply keyboard offers; a phone shows a dozen at most without scrolling.
MAX_KEYBOARD_ANSWERS = 12
_LINK_SCHEMES = frozenset({"http", "https", "tg"})
#: Options one menu offers, and the longest placeholder (Discord's limits).
MAX_MENU_OPTIONS = 25
_MAX_PLACEHOLDER = 100
#: Discord's limits on a modal's text field: its label, and the text it takes.
_MAX_PROMPT_LABEL = 45
_MAX_ANSWER_CHARS = 4000


@dataclass(frozen=True, slots=True)
class TextPrompt:
    """What a button that asks for words shows: the field's ``label`` (the question),
    ``placeholder`` (greyed in the empty field) and the longest answer taken.

    Raises:
        ValueError: an empty label or one over 45 characters, a placeholder over 100, or a
            ``max_length`` outside 1 to 4000.
    """

    label: str
    placeholder: str = ""
    max_length: int = 1000

    def __post_init__(self) -> None:
        if not self.label.strip() or len(self.label) > _MAX_PROMPT_LABEL:
            raise ValueError(f"a text prompt's label is 1 to {_MAX_PROMPT_LABEL} characters, not {len(self.label)}")
        if len(self.placeholder) > _MAX_PLACEHOLDER:
            raise ValueError(f"a text prompt's placeholder is at most {_MAX_PLACEHOLDER} characters")
        if not 1 <= self.max_length <= _MAX_ANSWER_CHARS:
            raise ValueError(f"a text prompt's max_length is 1 to {_MAX_ANSWER_CHARS}, not {self.max_length}")

    def record(self) -> JSON:
        return {"label": self.label, "placeholder": self.placeholder, "maxLength": self.max_length}

    @classmethod
    def parse(cls, item: object) -> TextPrompt:
        """A TextPrompt from itself or its :meth:`record` (``max_length`` also taken).

        Raises:
            ValueError: what is wrong with it (see the class).
        """
        if isinstance(item, TextPrompt):
            return item
        if not isinstance(item, Mapping):
            raise ValueError(f"a text prompt is a TextPrompt or a mapping, not {type(item).__name__}")
        length = item.get("maxLength", item.get("max_length", 1000))
        if not isinstance(length, int) or isinstance(length, bool):
            raise ValueError(f"a text prompt's max_length is a number, not {length!r}")
        return cls(str(item.get("label") or ""), str(item.get("placeholder") or ""), length)


@dataclass(frozen=True, slots=True)
class Button:
    """One button: a label and either a value that comes back when pressed, or a link to open.
    ``asks``: pressed, it asks for a line of text first (see the module docstring).

    Raises:
        ValueError: no label, a label too long, neither or both of value and url, a value empty
            or over 64 bytes, a url that is not http(s) or tg, or a link that asks.
    """

    label: str
    value: str | None = None
    url: str | None = None
    asks: TextPrompt | None = None

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
        if self.asks is not None and self.url is not None:
            raise ValueError(f"button {self.label!r}: a link opens its url, it cannot ask for text")

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
        url, asks = item.get("url"), item.get("asks")
        return cls(
            label=str(label or ""),
            value=None if value is None else str(value),
            url=None if url is None else str(url),
            asks=None if asks is None else TextPrompt.parse(asks),
        )

    def record(self) -> JSON:
        """What a stored message keeps of it."""
        if self.url is not None:
            return {"label": self.label, "url": self.url}
        found: JSON = {"label": self.label, "value": self.value}
        if self.asks is not None:
            found["asks"] = self.asks.record()
        return found


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
    """A button pressed (or a menu's option chosen): the value it carried, and its label when
    the platform still knows it (a Telegram press on a message the bot can no longer read comes
    with the value only). ``also``: the other options chosen in the same menu at once, in the
    menu's order; ``answer``: the text written for a button that asks for it."""

    value: str
    label: str | None = None
    also: tuple[Press, ...] = ()
    answer: str | None = None

    @property
    def text(self) -> str:
        """What the person 'said': the answer written, else the labels (else values) chosen."""
        if self.answer is not None:
            return self.answer
        return ", ".join(p.label or p.value for p in self.chosen)

    @property
    def chosen(self) -> tuple[Press, ...]:
        """Every option chosen: this one, then :attr:`also`."""
        return (Press(self.value, self.label), *self.also)

    @property
    def values(self) -> tuple[str, ...]:
        """The values of every option chosen."""
        return tuple(p.value for p in self.chosen)

    def record(self) -> JSON:
        """The press as the content of the message it becomes holds it (``content.button``)."""
        found: JSON = {"value": self.value, "label": self.label}
        if self.also:
            found["also"] = [p.record() for p in self.also]
        if self.answer is not None:
            found["answer"] = self.answer
        return found

    @classmethod
    def of(cls, record: object) -> Press | None:
        """The press a stored record (:meth:`record`) holds; None for anything else."""
        if not isinstance(record, Mapping) or not isinstance(record.get("value"), str) or not record["value"]:
            return None
        label, answer, also = record.get("label"), record.get("answer"), record.get("also")
        others = [cls.of(item) for item in also] if isinstance(also, list) else []
        return cls(
            str(record["value"]),
            label if isinstance(label, str) and label else None,
            tuple(p for p in others if p is not None),
            answer if isinstance(answer, str) else None,
        )

    @classmethod
    def of_menu(cls, values: Sequence[str], options: Iterable[Button]) -> Press | None:
        """The choice of ``values`` in a menu of ``options`` (each labelled as its option);
        None for no value."""
        offered = list(options)
        found = [cls.find(value, offered) for value in values if value]
        return replace(found[0], also=tuple(found[1:])) if found else None

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


@dataclass(frozen=True, slots=True)
class Menu:
    """A select menu: up to :data:`MAX_MENU_OPTIONS` ``options`` (buttons with a value: their
    labels shown, their values what a choice carries), the ``placeholder`` shown before a
    choice, and how many options one choice takes (``min_values`` to ``max_values``).

    Raises:
        ValueError: no option or too many, a link or a button that asks among them, two with one
            value, a placeholder over 100 characters, or counts that do not fit the options.
    """

    options: tuple[Button, ...]
    placeholder: str = ""
    min_values: int = 1
    max_values: int = 1

    def __post_init__(self) -> None:
        if not 1 <= len(self.options) <= MAX_MENU_OPTIONS:
            raise ValueError(f"a menu offers 1 to {MAX_MENU_OPTIONS} options, not {len(self.options)}")
        if any(o.value is None or o.asks is not None for o in self.options):
            raise ValueError("a menu's options are buttons with a value (no links, none that asks for text)")
        if len({o.value for o in self.options}) != len(self.options):
            raise ValueError("a menu's options must carry different values (a choice could not be told apart)")
        if len(self.placeholder) > _MAX_PLACEHOLDER:
            raise ValueError(f"a menu's placeholder is at most {_MAX_PLACEHOLDER} characters")
        if not 1 <= self.min_values <= self.max_values <= len(self.options):
            raise ValueError(
                f"a menu takes min_values to max_values options, 1 <= min <= max <= {len(self.options)}; "
                f"not {self.min_values} to {self.max_values}"
            )

    @classmethod
    def of(cls, options: Iterable[Button], placeholder: str = "", *, max_values: int = 1) -> Menu:
        """A menu of ``options`` choosing one (or up to ``max_values``).

        Raises:
            ValueError: see the class.
        """
        return cls(tuple(options), placeholder, 1, max_values)
