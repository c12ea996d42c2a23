"""notes: write down what someone asks the character to note ("note: the gate code is 4711").

An example of a plugin that keeps rows of its own in troupe's store (docs/plugins.md, "Tables of
your own"). Copy this folder to ``plugins/notes/`` and list ``"notes"`` in a character's
``plugins``. It declares one table, ``notes``, which the store makes (as ``notes__notes``) when a
character using the plugin starts, on SQLite and PostgreSQL alike; each character has its own
rows. It offers:

- the action TAKE_NOTE, offered for a message that asks for a note, which keeps the note in the
  table and says so;
- the provider NOTES, which shows the model the newest notes of the room.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.sdk import (
    Action,
    ActionContext,
    ActionResult,
    Column,
    ColumnType,
    Index,
    Memory,
    PluginMeta,
    Provider,
    ProviderResult,
    Reply,
    State,
    Table,
    now_ms,
)

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["NOTES", "meta", "setup"]

#: One row per note: the message that asked for it is its key, so a message delivered twice
#: keeps one note.
NOTES = Table(
    "notes",
    columns=(
        Column("id", ColumnType.TEXT, primary_key=True),
        Column("room_id", ColumnType.TEXT, required=True),
        Column("entity_id", ColumnType.TEXT, required=True),
        Column("text", ColumnType.TEXT, required=True),
        Column("created_at", ColumnType.TIMESTAMP, required=True),
    ),
    indexes=(Index(("room_id", "created_at")),),
)

meta = PluginMeta(name="notes", description="Notes what people ask it to (an example plugin).", tables=(NOTES,))

NAME = "TAKE_NOTE"
_ASKS = re.compile(r"^\s*(?:please\s+)?(?:note|write down)\s*(?::|that\b)\s*(?P<text>.+)", re.IGNORECASE | re.DOTALL)
_SHOWN = 5


async def _asks_for_a_note(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    return bool(_ASKS.match(message.content.text or ""))


async def _take_note(context: ActionContext) -> ActionResult:
    message = context.message
    asked = _ASKS.match(message.content.text or "")
    if asked is None:
        return ActionResult(success=False, error="the message asks for no note")
    text = asked.group("text").strip()
    notes = context.runtime.table(NOTES)
    await notes.upsert(
        {
            "id": message.id,
            "room_id": message.room_id,
            "entity_id": message.entity_id,
            "text": text,
            "created_at": message.created_at or now_ms(),
        }
    )
    sent = await context.reply(Reply(text=f"Noted: {text}", actions=(NAME,), in_reply_to=message.id))
    if not sent:
        return ActionResult(success=False, error="send failed: the note is kept, the answer did not go out")
    return ActionResult(text=text, data={"actionName": NAME})


async def _provide(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    newest = await runtime.table(NOTES).select(
        {"room_id": message.room_id}, order_by=("created_at",), descending=True, limit=_SHOWN
    )
    if not newest:
        return ProviderResult()
    lines = "\n".join("- " + str(row["text"]) for row in newest)
    return ProviderResult(text=f"# Notes taken in this room (newest first)\n{lines}", values={"notes": len(newest)})


async def setup(runtime: AgentRuntime) -> None:
    """Register the action and the provider; the table is made before this runs."""
    runtime.register_action(
        Action(
            name=NAME,
            handler=_take_note,
            validate=_asks_for_a_note,
            description='Keep a note the person asks for ("note: …", "write down that …"); say it was noted.',
            similes=("NOTE", "WRITE_DOWN"),
        )
    )
    runtime.register_provider(Provider(name="NOTES", get=_provide, description="The notes taken in this room."))
