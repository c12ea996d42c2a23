"""Buttons on Discord: a reply's buttons and menu as message components, and a press of one (a
component interaction) as a message from the person who pressed it.

A button with a value is a component whose ``custom_id`` is ``troupe:<value>``; a link is a
link-style button. They go in action rows of at most five (:func:`bot.kernel.buttons.rows`). A
reply's menu is a string select (``custom_id`` ``troupe-menu``, its options' values their own) in
the first row, the buttons in the four after it. discord.py keeps no callback for them (the view
is stopped before it is sent): a press is recognised in the client's interaction event by its
``custom_id`` alone, so buttons sent before a restart still work, and components of other code (a
``discord.ui.View`` with callbacks) are left to it.

A choice in the menu is a press like any other: one message, its options in ``Press.also``
after the first. A button that asks for text (``Button.asks``) is ``troupe-ask:<value>``; its
press answers with a modal (the prompt read from the stored message the button was under, else
the button's label as the question), kept by nothing either. The modal's submission is then the
press, with the text written as its ``answer``, keyed by the submission's interaction id.

A press is deferred first (a deferred update: nothing visible changes), bounded, within
Discord's 3 s, before the character thinks about it; an interaction Discord no longer knows
(10062: too late, or replayed) or already acknowledged (40060: redelivered) is logged at debug
and the press still handled. Then it becomes a message in the channel (or thread) of the message
the button was under, from the person who pressed it, its text the button's label, replying to
that message: the bot's own, so the press addresses the character. Its id comes from the
interaction's id: a redelivered INTERACTION_CREATE is claimed once by the pipeline. The answer
goes to the channel as a normal message replying to that message, not as an interaction
followup; an answer that settles the press edits that message instead (the adapter's
``settle_native``: a PATCH of the bot's own message, which outlives the interaction's token).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import discord

from bot.sdk import (
    Button,
    ChannelType,
    Content,
    Memory,
    MemoryMetadata,
    MemoryType,
    Menu,
    NativeRef,
    Press,
    TextPrompt,
    buttons_shown,
    now_ms,
    rows,
    unique_uuid,
)

from ._mapping import SOURCE, channel_type, discord_id, user_names

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = [
    "ACK_TIMEOUT_S",
    "acknowledge",
    "ASK_PREFIX",
    "components_of",
    "CUSTOM_ID_PREFIX",
    "MENU_ID",
    "press_in",
    "pressed_value",
    "prompt_of",
    "shown_buttons",
    "shown_options",
    "take_press",
    "translate_press",
]

_log = logging.getLogger(__name__)

CUSTOM_ID_PREFIX = "troupe:"
ASK_PREFIX = "troupe-ask:"
MENU_ID = "troupe-menu"
_ANSWER_ID = "answer"  # the modal's one text field
_MAX_MODAL_TITLE = 45
_SHORT_ANSWER = 100  # longer answers get a paragraph field
_BUTTON, _SELECT = 2, 3  # component types
#: How long deferring a press may take: Discord forgets an interaction not answered within 3 s.
ACK_TIMEOUT_S = 3.0
_PER_ROW = 5  # Discord's limits: five buttons to an action row, five rows to a message
_MAX_ROWS = 5
_UNKNOWN_INTERACTION = 10062
_ALREADY_ACKNOWLEDGED = 40060


def _laid_out(buttons: Sequence[Button], max_rows: int) -> list[list[Button]]:
    """Rows for reading (:func:`rows`); five to a row when that takes more than ``max_rows``,
    and those that still do not fit left out with a warning."""
    laid = rows(buttons, _PER_ROW)
    if len(laid) > max_rows:
        laid = rows(buttons, _PER_ROW, row_chars=10**6)
    if len(laid) > max_rows:
        _log.warning("buttons left out: beside a menu, a Discord message holds %d", max_rows * _PER_ROW)
    return laid[:max_rows]


def _button_item(button: Button, row: int) -> discord.ui.Button[discord.ui.View]:
    if button.url is not None:
        return discord.ui.Button(style=discord.ButtonStyle.link, label=button.label, url=button.url, row=row)
    prefix = ASK_PREFIX if button.asks is not None else CUSTOM_ID_PREFIX
    return discord.ui.Button(
        style=discord.ButtonStyle.primary, label=button.label, custom_id=f"{prefix}{button.value}", row=row
    )


def components_of(buttons: Sequence[Button], menu: Menu | None = None) -> discord.ui.View | None:
    """``buttons`` and ``menu`` (in the first row) as a view to send with a message, or None for
    neither. The view is stopped: discord.py keeps nothing of it (see the module docstring)."""
    if not buttons and menu is None:
        return None
    view = discord.ui.View(timeout=None)
    first = 0
    if menu is not None:
        options = [discord.SelectOption(label=o.label, value=str(o.value)) for o in menu.options]
        select: discord.ui.Select[discord.ui.View] = discord.ui.Select(
            custom_id=MENU_ID,
            placeholder=menu.placeholder or None,
            min_values=menu.min_values,
            max_values=menu.max_values,
            options=options,
            row=0,
        )
        view.add_item(select)
        first = 1
    for index, row in enumerate(_laid_out(buttons, _MAX_ROWS - first), start=first):
        for button in row:
            view.add_item(_button_item(button, index))
    view.stop()
    return view


def _items(message: discord.Message | None) -> list[Any]:
    return [
        item for row in (message.components if message is not None else ()) for item in getattr(row, "children", ())
    ]


def shown_buttons(message: discord.Message | None) -> list[Button]:
    """troupe's buttons with a value under ``message`` (those that ask for text too), as Discord shows them."""
    found: list[tuple[str, str]] = []
    for item in _items(message):
        custom_id = getattr(item, "custom_id", None)
        if getattr(item, "type", None) is not discord.ComponentType.button or not isinstance(custom_id, str):
            continue
        for prefix in (CUSTOM_ID_PREFIX, ASK_PREFIX):
            if custom_id.startswith(prefix):
                found.append((str(getattr(item, "label", None) or ""), custom_id.removeprefix(prefix)))
    return buttons_shown(found)


def shown_options(message: discord.Message | None) -> list[Button]:
    """The options of troupe's menu under ``message``, as Discord shows them."""
    menus = [i for i in _items(message) if isinstance(i, discord.SelectMenu) and i.custom_id == MENU_ID]
    return buttons_shown((o.label, o.value) for menu in menus for o in menu.options)


def _custom_id(interaction: discord.Interaction, kind: discord.InteractionType, component: int | None) -> str:
    """The ``custom_id`` ``interaction`` carries when it is of ``kind`` (and a ``component`` of
    that type); "" otherwise."""
    data: Any = interaction.data or {}
    custom_id = data.get("custom_id")
    if interaction.type is not kind or (component is not None and data.get("component_type") != component):
        return ""
    return custom_id if isinstance(custom_id, str) else ""


def pressed_value(interaction: discord.Interaction) -> str | None:
    """The value of the troupe button ``interaction`` presses; None for any other interaction."""
    custom_id = _custom_id(interaction, discord.InteractionType.component, _BUTTON)
    if not custom_id.startswith(CUSTOM_ID_PREFIX):
        return None
    return custom_id.removeprefix(CUSTOM_ID_PREFIX) or None


def _asking_value(interaction: discord.Interaction) -> str | None:
    """The value of the troupe button that asks for text ``interaction`` presses, if it is one."""
    custom_id = _custom_id(interaction, discord.InteractionType.component, _BUTTON)
    return custom_id.removeprefix(ASK_PREFIX) or None if custom_id.startswith(ASK_PREFIX) else None


def _answer(components: Iterable[Any]) -> str | None:
    """The text of the modal's field among a submission's ``components`` (in action rows, or labels)."""
    for item in components:
        if not isinstance(item, dict):
            continue
        if item.get("custom_id") == _ANSWER_ID and isinstance(item.get("value"), str):
            return str(item["value"])
        inner = [*(item.get("components") or ()), *([item["component"]] if "component" in item else [])]
        found = _answer(inner)
        if found is not None:
            return found
    return None


def press_in(interaction: discord.Interaction) -> Press | None:
    """What a troupe control ``interaction`` used says (pure): a button's press, a choice in
    the menu (every option chosen), a modal's answer to a button that asked for text. None for
    anything else, and for the press of a button that asks (a modal answers it first)."""
    message = interaction.message
    data: dict[str, Any] = dict(interaction.data or {})
    value = pressed_value(interaction)
    if value is not None:
        return Press.find(value, shown_buttons(message))
    if _custom_id(interaction, discord.InteractionType.component, _SELECT) == MENU_ID:
        values = data.get("values")
        return Press.of_menu([str(v) for v in values], shown_options(message)) if isinstance(values, list) else None
    custom_id = _custom_id(interaction, discord.InteractionType.modal_submit, None)
    if custom_id.startswith(ASK_PREFIX) and custom_id.removeprefix(ASK_PREFIX):
        answer = _answer(data.get("components") or ())
        if answer is None:
            return None
        return replace(Press.find(custom_id.removeprefix(ASK_PREFIX), shown_buttons(message)), answer=answer)
    return None


def translate_press(agent_id: str, interaction: discord.Interaction, message: discord.Message, press: Press) -> Memory:
    """``press`` of a control under ``message`` as the message the pipeline receives (pure)."""
    channel, presser, guild = message.channel, interaction.user, interaction.guild
    kind = channel_type(channel) or (ChannelType.GROUP if guild is not None else ChannelType.DM)
    return Memory(
        id=unique_uuid(agent_id, f"{SOURCE}:press:{interaction.id}"),
        entity_id=discord_id(agent_id, presser.id),
        agent_id=agent_id,
        room_id=discord_id(agent_id, channel.id),
        world_id=discord_id(agent_id, guild.id) if guild is not None else None,
        content=Content(
            text=press.text,
            button=press,
            in_reply_to=discord_id(agent_id, message.id),
            source=SOURCE,
            channel_type=kind,
            url=message.jump_url,
        ),
        created_at=now_ms(),
        metadata=MemoryMetadata(
            type=MemoryType.MESSAGE,
            entity_name=(user_names(presser) or [str(presser.id)])[0],
            author_is_bot=bool(presser.bot),
            is_mention=False,
            is_reply=True,  # a button under the bot's own message: the press is addressed to it
            author_id=str(presser.id),
            channel_id=str(channel.id),
            server_id=str(guild.id) if guild is not None else None,
            discord_message_id=str(message.id),  # what a reply (also after a crash) quotes
            interaction_id=str(interaction.id),
        ),
    )


async def acknowledge(interaction: discord.Interaction, agent: str, *, thinking: bool = False) -> bool:
    """Defer the interaction at once, bounded; never raises. A press gets a deferred update
    (nothing visible changes); ``thinking``: "<bot> is thinking…", replaced by the first
    follow-up (a slash command). Whether Discord holds it acknowledged: deferred now, or
    already (40060: redelivered); False when it no longer knows it (10062: too late) or the
    deferral failed. Those refusals are logged at debug."""
    try:
        async with asyncio.timeout(ACK_TIMEOUT_S):
            await interaction.response.defer(thinking=thinking)
    except discord.HTTPException as exc:
        if exc.code in (_UNKNOWN_INTERACTION, _ALREADY_ACKNOWLEDGED):
            _log.debug("%s: Discord refused to defer interaction %s: %s %s", agent, interaction.id, exc.code, exc.text)
        else:
            _log.info("%s: could not defer an interaction on Discord (%s %s)", agent, exc.status, exc.text)
        return exc.code == _ALREADY_ACKNOWLEDGED
    except discord.InteractionResponded:  # this very object answered already
        return True
    except (discord.DiscordException, OSError, TimeoutError) as exc:
        _log.info("%s: could not defer an interaction on Discord (%s)", agent, exc.__class__.__name__)
        return False
    return True


async def prompt_of(adapter: DiscordAdapter, message: discord.Message, value: str) -> TextPrompt:
    """What the button carrying ``value`` under ``message`` asks, as the stored message keeps
    it; the button's label as the question when the store does not know it."""
    stored = await adapter.runtime.store.get_memory(discord_id(adapter.runtime.agent_id, message.id))
    for button in (stored.content.buttons or ()) if stored is not None else ():
        if button.value == value and button.asks is not None:
            return button.asks
    label = next((b.label for b in shown_buttons(message) if b.value == value), value)
    return TextPrompt(label[:45].strip() or "Your answer")


async def _ask(adapter: DiscordAdapter, interaction: discord.Interaction, value: str) -> None:
    """Answer the press of a button that asks for text with its modal, bounded; never raises.
    A press Discord no longer knows, or answered already (redelivered), is logged at debug."""
    message = interaction.message
    if message is None or not adapter.listens_in(message.channel):
        await acknowledge(interaction, adapter.name)  # CHANNEL_IDS: nothing asked, as a press there does nothing
        return
    prompt = await prompt_of(adapter, message, value)
    label = next((b.label for b in shown_buttons(message) if b.value == value), prompt.label)
    modal: discord.ui.Modal = discord.ui.Modal(
        title=label[:_MAX_MODAL_TITLE], custom_id=f"{ASK_PREFIX}{value}", timeout=None
    )
    long = prompt.max_length > _SHORT_ANSWER
    modal.add_item(
        discord.ui.TextInput(
            label=prompt.label,
            custom_id=_ANSWER_ID,
            placeholder=prompt.placeholder or None,
            max_length=prompt.max_length,
            style=discord.TextStyle.paragraph if long else discord.TextStyle.short,
        )
    )
    modal.stop()  # discord.py keeps nothing of it: the submission is recognised by its custom_id
    try:
        async with asyncio.timeout(ACK_TIMEOUT_S):
            await interaction.response.send_modal(modal)
    except discord.HTTPException as exc:
        level = logging.DEBUG if exc.code in (_UNKNOWN_INTERACTION, _ALREADY_ACKNOWLEDGED) else logging.INFO
        _log.log(
            level,
            "%s: Discord refused a modal for interaction %s: %s %s",
            adapter.name,
            interaction.id,
            exc.code,
            exc.text,
        )
    except (discord.DiscordException, OSError, TimeoutError) as exc:
        _log.info("%s: could not open a modal on Discord (%s)", adapter.name, exc.__class__.__name__)


async def take_press(adapter: DiscordAdapter, interaction: discord.Interaction) -> None:
    """A press of a troupe button, a choice in its menu or the answer of its modal: deferred,
    then handed to the pipeline; the press of a button that asks for text: its modal (see the
    module docstring). Any other interaction is left alone."""
    asking = _asking_value(interaction)
    if asking is not None:
        await _ask(adapter, interaction, asking)
        return
    press = press_in(interaction)
    if press is None:
        return
    await acknowledge(interaction, adapter.name)
    message = interaction.message
    if message is None or not adapter.listens_in(message.channel):
        return  # CHANNEL_IDS: the character does not act there
    memory = translate_press(adapter.runtime.agent_id, interaction, message, press)
    room_id = await adapter.ensure_room(message.channel, dm_with=interaction.user)
    await adapter.ensure_entity(interaction.user, room_id)
    # Only the bot whose button it is hears a press: it is a message of its own.
    native = NativeRef(
        SOURCE, str(message.channel.id), f"press:{interaction.id}", str(interaction.user.id), str(adapter.bot_id)
    )
    await adapter.hand_over(message, memory, native)
