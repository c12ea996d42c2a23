"""A menu that takes several options, on Telegram (which has no select menus): its options as
buttons that tick and untick ("✓ Red"), and a Done button that sends the options ticked as one
choice, as Discord's select does.

The keyboard itself holds the state: a tap on an option (in a keyboard with a Done button)
edits the keyboard to tick or untick it, and says nothing to the character; Done's
``callback_data`` (``troupe-menu:done:<min>:<max>``) carries how many options the menu takes. Done
with too few ticked (or a tick past the most) is refused with a note the person sees (an
answerCallbackQuery alert); otherwise it is a press like any other, its options in ``Press.also``,
handled once however often Telegram delivers it. A menu choosing one option is plain buttons,
each tap a choice (``_presses.py``).
"""

from __future__ import annotations

import asyncio
import logging
from enum import Enum
from typing import TYPE_CHECKING

from telegram import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message
from telegram.error import TelegramError

from bot.sdk import Button, Deadline, Menu, Press, rows

from ._outbound import with_retries

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = ["chosen_in", "DONE_PREFIX", "menu_rows", "MenuTap", "take_menu_tap", "TICK"]

_log = logging.getLogger(__name__)

DONE_PREFIX = "troupe-menu:done:"
TICK = "✓ "
_DONE_LABEL = "Done"
_PER_ROW = 3
_ACK_TIMEOUT_S = 5.0


class MenuTap(Enum):
    """What :func:`take_menu_tap` did with a tap that is no choice to hand over."""

    ELSEWHERE = "elsewhere"
    """Not a tap in a menu of several options: a press of its own."""
    TAKEN = "taken"
    """An option ticked or unticked, or Done refused: handled here."""


def menu_rows(menu: Menu) -> list[list[InlineKeyboardButton]]:
    """``menu``'s options unticked, in rows, then its Done button."""
    done = InlineKeyboardButton(_DONE_LABEL, callback_data=f"{DONE_PREFIX}{menu.min_values}:{menu.max_values}")
    laid = [[InlineKeyboardButton(b.label, callback_data=b.value) for b in row] for row in rows(menu.options, _PER_ROW)]
    return [*laid, [done]]


def _done_of(markup: InlineKeyboardMarkup) -> tuple[int, int, int] | None:
    """The row of a menu's Done button in ``markup``, and the counts it carries; None for a
    keyboard with none."""
    for index, row in enumerate(markup.inline_keyboard):
        for button in row:
            data = button.callback_data
            if isinstance(data, str) and data.startswith(DONE_PREFIX):
                low, _, high = data.removeprefix(DONE_PREFIX).partition(":")
                if low.isdigit() and high.isdigit():
                    return index, int(low), int(high)
    return None


def chosen_in(markup: InlineKeyboardMarkup) -> Press | None:
    """The options ticked in ``markup`` as one press (labels without their tick); None for none."""
    ticked = [
        Button(b.text.removeprefix(TICK), value=b.callback_data)
        for row in markup.inline_keyboard
        for b in row
        if isinstance(b.callback_data, str) and b.text.startswith(TICK)
    ]
    return Press.of_menu([str(b.value) for b in ticked], ticked)


def _toggled(markup: InlineKeyboardMarkup, value: str) -> InlineKeyboardMarkup:
    def flipped(b: InlineKeyboardButton) -> InlineKeyboardButton:
        if b.callback_data != value:
            return b
        label = b.text.removeprefix(TICK) if b.text.startswith(TICK) else f"{TICK}{b.text}"
        return InlineKeyboardButton(label, callback_data=value)

    return InlineKeyboardMarkup([[flipped(b) for b in row] for row in markup.inline_keyboard])


async def _answer(query: CallbackQuery, agent: str, note: str | None = None) -> None:
    """answerCallbackQuery (an alert with ``note``), bounded; never raises."""
    try:
        async with asyncio.timeout(_ACK_TIMEOUT_S):
            await query.answer(note, show_alert=note is not None)
    except (TelegramError, TimeoutError) as exc:
        _log.debug("%s: could not acknowledge a menu tap on Telegram (%s)", agent, exc.__class__.__name__)


async def take_menu_tap(adapter: TelegramAdapter, query: CallbackQuery) -> Press | MenuTap:
    """A tap in a menu taking several options (see the module docstring): Done with enough
    options ticked is the press to hand over (acknowledged); anything else is :class:`MenuTap`."""
    message, value = query.message, str(query.data or "")
    markup = message.reply_markup if isinstance(message, Message) else None
    found = _done_of(markup) if markup is not None else None
    if found is None or markup is None or not isinstance(message, Message):
        return MenuTap.ELSEWHERE
    done_row, low, high = found
    chosen = chosen_in(markup)
    if value.startswith(DONE_PREFIX):
        if chosen is None or len(chosen.values) < low:
            await _answer(query, adapter.name, f"Choose at least {max(low, 1)}.")
            return MenuTap.TAKEN
        await _answer(query, adapter.name)
        return chosen
    if not any(b.callback_data == value for row in markup.inline_keyboard[:done_row] for b in row):
        return MenuTap.ELSEWHERE  # one of the buttons after the menu: a press of its own
    toggled = _toggled(markup, value)
    now = chosen_in(toggled)
    if now is not None and len(now.values) > high:
        await _answer(query, adapter.name, f"Choose at most {high}.")
        return MenuTap.TAKEN
    await _answer(query, adapter.name)
    assert adapter.app is not None
    bot = adapter.app.bot
    try:
        await with_retries(
            lambda: bot.edit_message_reply_markup(message.chat_id, message.message_id, reply_markup=toggled),
            Deadline.after(adapter.config.send_deadline),
        )
    except TelegramError as exc:
        _log.info("%s: could not tick a menu's option on Telegram (%s)", adapter.name, exc.__class__.__name__)
    return MenuTap.TAKEN
