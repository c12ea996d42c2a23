"""Buttons on Discord: a reply's buttons as message components, and a press of one (a component
interaction) as a message from the person who pressed it.

A button with a value is a component whose ``custom_id`` is ``troupe:<value>``; a link is a
link-style button. They go in action rows of at most five (:func:`bot.kernel.buttons.rows`). discord.py
keeps no callback for them (the view is stopped before it is sent): a press is recognised in the
client's interaction event by its ``custom_id`` alone, so buttons sent before a restart still
work, and components of other code (a ``discord.ui.View`` with callbacks) are left to it.

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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import discord

from bot.sdk import (
    Button,
    ChannelType,
    Content,
    Memory,
    MemoryMetadata,
    MemoryType,
    NativeRef,
    Press,
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
    "CUSTOM_ID_PREFIX",
    "acknowledge",
    "components_of",
    "pressed_value",
    "shown_buttons",
    "take_press",
    "translate_press",
]

_log = logging.getLogger(__name__)

CUSTOM_ID_PREFIX = "troupe:"
#: How long deferring a press may take: Discord forgets an interaction not answered within 3 s.
ACK_TIMEOUT_S = 3.0
_PER_ROW = 5  # Discord's limits: five buttons to an action row, five rows to a message
_MAX_ROWS = 5
_UNKNOWN_INTERACTION = 10062
_ALREADY_ACKNOWLEDGED = 40060


def _laid_out(buttons: Sequence[Button]) -> list[list[Button]]:
    """Rows for reading (:func:`rows`); five to a row when that takes more than five rows."""
    laid = rows(buttons, _PER_ROW)
    return laid if len(laid) <= _MAX_ROWS else rows(buttons, _PER_ROW, row_chars=10**6)


def components_of(buttons: Sequence[Button]) -> discord.ui.View | None:
    """``buttons`` as a view to send with a message, or None for none. The view is stopped:
    discord.py keeps nothing of it (see the module docstring)."""
    if not buttons:
        return None
    view = discord.ui.View(timeout=None)
    for index, row in enumerate(_laid_out(buttons)):
        for button in row:
            if button.url is not None:
                item: discord.ui.Button[discord.ui.View] = discord.ui.Button(
                    style=discord.ButtonStyle.link, label=button.label, url=button.url, row=index
                )
            else:
                item = discord.ui.Button(
                    style=discord.ButtonStyle.primary,
                    label=button.label,
                    custom_id=f"{CUSTOM_ID_PREFIX}{button.value}",
                    row=index,
                )
            view.add_item(item)
    view.stop()
    return view


def shown_buttons(message: discord.Message | None) -> list[Button]:
    """troupe's buttons with a value under ``message``, as Discord shows them."""
    items = [
        item for row in (message.components if message is not None else ()) for item in getattr(row, "children", ())
    ]
    return buttons_shown(
        (str(getattr(item, "label", None) or ""), item.custom_id.removeprefix(CUSTOM_ID_PREFIX))
        for item in items
        if isinstance(getattr(item, "custom_id", None), str) and item.custom_id.startswith(CUSTOM_ID_PREFIX)
    )


def pressed_value(interaction: discord.Interaction) -> str | None:
    """The value of the troupe button ``interaction`` presses; None for any other interaction."""
    data: Any = interaction.data or {}
    custom_id = data.get("custom_id")
    if interaction.type is not discord.InteractionType.component or data.get("component_type") != 2:
        return None
    if not isinstance(custom_id, str) or not custom_id.startswith(CUSTOM_ID_PREFIX):
        return None
    return custom_id.removeprefix(CUSTOM_ID_PREFIX) or None


def translate_press(agent_id: str, interaction: discord.Interaction, message: discord.Message, value: str) -> Memory:
    """A press of the button carrying ``value`` under ``message`` as the message the pipeline
    receives (pure)."""
    channel, presser, guild = message.channel, interaction.user, interaction.guild
    press = Press.find(value, shown_buttons(message))
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


async def take_press(adapter: DiscordAdapter, interaction: discord.Interaction) -> None:
    """A press of a troupe button: deferred, then handed to the pipeline (see the module
    docstring). Any other interaction is left alone."""
    value = pressed_value(interaction)
    if value is None:
        return
    await acknowledge(interaction, adapter.name)
    message = interaction.message
    if message is None or not adapter.listens_in(message.channel):
        return  # CHANNEL_IDS: the character does not act there
    memory = translate_press(adapter.runtime.agent_id, interaction, message, value)
    room_id = await adapter.ensure_room(message.channel, dm_with=interaction.user)
    await adapter.ensure_entity(interaction.user, room_id)
    # Only the bot whose button it is hears a press: it is a message of its own.
    native = NativeRef(
        SOURCE, str(message.channel.id), f"press:{interaction.id}", str(interaction.user.id), str(adapter.bot_id)
    )
    await adapter.hand_over(message, memory, native)
