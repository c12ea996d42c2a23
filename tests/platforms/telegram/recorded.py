"""Updates as the Bot API sends them, turned into python-telegram-bot objects (``Update.de_json``)."""

from __future__ import annotations

from typing import Any

from telegram import Message, Update

BOT: dict[str, Any] = {"id": 7001, "is_bot": True, "first_name": "Ada", "username": "ada_bot"}
OTHER_BOT: dict[str, Any] = {"id": 7002, "is_bot": True, "first_name": "Brann", "username": "brann_bot"}
SAM: dict[str, Any] = {
    "id": 1001,
    "is_bot": False,
    "first_name": "Sam",
    "last_name": "Reyes",
    "username": "samr",
    "language_code": "en",
}
CLEO: dict[str, Any] = {"id": 1002, "is_bot": False, "first_name": "Cleo"}

PRIVATE: dict[str, Any] = {"id": 1001, "type": "private", "first_name": "Sam", "last_name": "Reyes", "username": "samr"}
GROUP: dict[str, Any] = {"id": -1001234567890, "type": "supergroup", "title": "Writers' Room"}
FORUM: dict[str, Any] = {"id": -1009876543210, "type": "supergroup", "title": "Guild", "is_forum": True}
CHANNEL: dict[str, Any] = {"id": -1005555555555, "type": "channel", "title": "News", "username": "newsy"}

_next_update = [100]


def message(
    chat: dict[str, Any],
    text: str | None = None,
    *,
    sender: dict[str, Any] = SAM,
    id: int = 10,
    entities: list[dict[str, Any]] | None = None,
    reply_to: dict[str, Any] | None = None,
    thread: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    data: dict[str, Any] = {"message_id": id, "from": sender, "chat": chat, "date": 1795334400, **extra}
    if text is not None:
        data["text"] = text
    if entities:
        data["entities"] = entities
    if reply_to is not None:
        data["reply_to_message"] = reply_to
    if thread is not None:
        data["message_thread_id"] = thread
        data["is_topic_message"] = True
    return data


def update(**fields: Any) -> Update:
    _next_update[0] += 1
    return Update.de_json({"update_id": _next_update[0], **fields}, None)


def received(data: dict[str, Any]) -> Message:
    """The Message of an update carrying ``data``."""
    found = update(message=data).message
    assert found is not None
    return found
