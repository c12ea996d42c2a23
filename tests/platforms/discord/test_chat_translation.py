"""/chat and /ask as the pipeline receives them (pure): a direct address from the person who used
the command, its id from the interaction's; and what "thinking…" becomes when nothing is said."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from bot.kernel.ids import unique_uuid
from bot.kernel.messages import Status
from bot.kernel.types import ChannelType
from platforms.discord._chat import command_text, nothing_said, translate_command
from platforms.discord._mapping import discord_id

AGENT = "11111111-1111-1111-1111-111111111111"
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _interaction(guild: object | None) -> SimpleNamespace:
    user = SimpleNamespace(id=42, name="sam", display_name="Sam", global_name=None, bot=False)
    return SimpleNamespace(id=900, user=user, guild=guild, created_at=WHEN)


def test_a_chat_in_a_channel_is_a_mention_from_its_user() -> None:
    guild = SimpleNamespace(id=7)
    channel = SimpleNamespace(id=70, type=SimpleNamespace(name="text"), guild=guild)
    memory = translate_command(AGENT, _interaction(guild), channel, "where is the map?")  # type: ignore[arg-type]
    assert memory.id == unique_uuid(AGENT, "discord:command:900")
    assert memory.entity_id == discord_id(AGENT, 42) and memory.room_id == discord_id(AGENT, 70)
    assert memory.world_id == discord_id(AGENT, 7)
    assert memory.content.text == "where is the map?" and memory.content.source == "discord"
    assert memory.content.channel_type == ChannelType.GROUP and memory.content.in_reply_to is None
    meta = memory.metadata
    assert meta.is_mention is True and meta.is_reply is False and meta.author_is_bot is False
    assert (meta.entity_name, meta.author_id, meta.channel_id, meta.server_id) == ("Sam", "42", "70", "7")
    assert meta.interaction_id == "900" and meta.discord_message_id is None  # nothing to quote
    assert memory.created_at == int(WHEN.timestamp() * 1000)


def test_a_chat_in_a_dm_has_no_world() -> None:
    channel = SimpleNamespace(id=71, type=SimpleNamespace(name="private"), guild=None)
    memory = translate_command(AGENT, _interaction(None), channel, "hi")  # type: ignore[arg-type]
    assert memory.world_id is None and memory.content.channel_type == ChannelType.DM


def test_the_text_is_repaired_and_trimmed() -> None:
    assert command_text("  hello\x00 there \n") == "hello there"
    assert command_text("   ") == "" and command_text(None) == ""


def test_thinking_says_why_nothing_came() -> None:
    assert nothing_said("Ada", Status.IGNORED) == "Ada has nothing to say to that."
    assert nothing_said("Ada", Status.MODEL_UNREACHABLE) == (
        "Ada couldn't answer that just now; please try again in a moment."
    )
    assert nothing_said("Ada", Status.ACTED) == "Done."
    for answered_elsewhere in (Status.REPLIED, Status.DUPLICATE, Status.SENT_BEFORE_CRASH):
        assert nothing_said("Ada", answered_elsewhere) is None
