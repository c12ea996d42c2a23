"""Typed content and metadata: what troupe reads has a field, and every stored object reads and
writes back unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.kernel.buttons import Button
from bot.kernel.content import Attachment, Content, MemoryMetadata
from bot.kernel.types import ChannelType, MemoryType

STORED_CONTENT: list[dict[str, Any]] = [
    {},
    {"text": "hello", "source": "discord", "channelType": "GROUP", "url": "https://discord.com/x"},
    {"text": "hi", "actions": ["REPLY"], "thought": "be kind", "inReplyTo": "m1", "providers": ["FACTS"]},
    {"text": "", "attachments": [{"id": "1", "url": "u", "contentType": "image/png", "size": 3, "width": 9}]},
    {
        "text": "x",
        "isVoiceMessage": True,
        "buttons": [{"label": "Yes", "value": "y"}, {"label": "D", "url": "https://e.x"}],
    },
    {"text": "x", "type": "status", "imagePrompt": "a cat", "button": {"value": "y", "label": "Yes"}},
    # Values not of their field's type are kept as stored.
    {"text": None, "actions": "REPLY", "channelType": "NOT_A_TYPE", "isVoiceMessage": 1, "inReplyTo": 7},
    {"attachments": [{"id": 5, "size": "big"}], "buttons": [{"label": "", "value": "y"}]},
    {"attachments": ["not a mapping"], "buttons": [{"text": "Yes", "callback_data": "y"}]},
]

STORED_METADATA: list[dict[str, Any]] = [
    {},
    {
        "type": "message",
        "entityName": "Ann",
        "entityUserName": None,
        "authorIsBot": False,
        "isMention": True,
        "isReply": False,
        "telegram": {"chatId": "1", "messageId": 2, "threadId": None},
    },
    {"type": "message", "authorId": "9", "channelId": "8", "serverId": None, "discordMessageId": "7"},
    {"type": "fragment", "documentId": "d", "position": 3, "timestamp": 1700000000000, "source": "file"},
    {"type": "custom-thing", "position": "first", "title": "T", "tags": ["a"]},
]


@pytest.mark.parametrize("stored", STORED_CONTENT)
def test_content_reads_and_writes_back_what_was_stored(stored: dict[str, Any]) -> None:
    written = Content.from_json(stored).to_json()
    assert written == stored
    assert json.dumps(written, sort_keys=True) == json.dumps(stored, sort_keys=True)


@pytest.mark.parametrize("stored", STORED_METADATA)
def test_metadata_reads_and_writes_back_what_was_stored(stored: dict[str, Any]) -> None:
    assert MemoryMetadata.from_json(stored).to_json() == stored


def test_content_fields_hold_what_troupe_reads() -> None:
    content = Content.from_json(
        {
            "text": "hi",
            "source": "telegram",
            "channelType": "DM",
            "actions": ["REPLY"],
            "inReplyTo": "m1",
            "isVoiceMessage": True,
            "attachments": [{"id": "1", "title": "a.png", "contentType": "image/png", "size": 3}],
            "buttons": [{"label": "Yes", "value": "y"}],
            "providers": ["FACTS"],
        }
    )
    assert content.text == "hi"
    assert content.source == "telegram"
    assert content.channel_type is ChannelType.DM
    assert content.actions == ("REPLY",)
    assert content.in_reply_to == "m1"
    assert content.is_voice_message is True
    assert content.attachments == (Attachment(id="1", title="a.png", content_type="image/png", size=3),)
    assert content.buttons == (Button("Yes", value="y"),)
    assert content.providers == ("FACTS",)
    assert dict(content.extra) == {}


def test_a_value_not_of_its_fields_type_stays_in_extra() -> None:
    content = Content.from_json({"text": None, "channelType": "NOT_A_TYPE"})
    assert content.text is None
    assert content.channel_type is None
    assert dict(content.extra) == {"text": None, "channelType": "NOT_A_TYPE"}


def test_a_field_set_later_wins_over_what_extra_kept() -> None:
    from dataclasses import replace

    content = replace(Content.from_json({"text": None}), text="now")
    assert content.to_json() == {"text": "now"}


def test_metadata_fields_hold_what_troupe_reads() -> None:
    metadata = MemoryMetadata.from_json(
        {"type": "message", "entityName": "Ann", "authorIsBot": True, "isMention": False, "telegram": {"chatId": "1"}}
    )
    assert metadata.type is MemoryType.MESSAGE
    assert metadata.entity_name == "Ann"
    assert metadata.author_is_bot is True
    assert metadata.is_mention is False
    assert metadata.is_reply is None
    assert dict(metadata.extra) == {"telegram": {"chatId": "1"}}


def test_typed_payloads_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Content(text="a").text = "b"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        MemoryMetadata().is_mention = True  # type: ignore[misc]


@pytest.mark.parametrize(
    ("under", "over"),
    [
        ({"text": "a", "source": "discord", "emojis": 1}, {"text": "b", "url": "u"}),
        ({"text": "a", "inReplyTo": "m1"}, {"inReplyTo": None}),  # a null kept in extra wins too
        ({"text": "a", "note": "kept"}, {"note": "new", "channelType": "DM"}),
        ({}, {"text": "only"}),
    ],
)
def test_merged_is_a_dict_update_of_the_json(under: dict[str, Any], over: dict[str, Any]) -> None:
    merged = Content.from_json(under).merged(Content.from_json(over))
    assert merged.to_json() == {**under, **over}
    assert merged == Content.from_json({**under, **over})


def test_metadata_merged_is_a_dict_update_of_the_json() -> None:
    under = {"type": "message", "entityName": "Ann", "telegram": {"chatId": "1"}}
    over = {"editedAt": 5, "entityName": "Anna"}
    merged = MemoryMetadata.from_json(under).merged(MemoryMetadata.from_json(over))
    assert merged.to_json() == {**under, **over}
    assert merged.edited_at == 5


def test_payloads_deep_copy_and_pickle() -> None:
    import copy
    import pickle

    content = Content.from_json({"text": "x", "note": ["a"], "attachments": [{"id": "1", "width": 3}]})
    copied = copy.deepcopy(content)
    assert copied == content
    assert copied.extra["note"] is not content.extra["note"]  # a snapshot, not the same list
    assert pickle.loads(pickle.dumps(content)) == content
    metadata = MemoryMetadata.from_json({"type": "message", "telegram": {"chatId": "1"}})
    assert pickle.loads(pickle.dumps(copy.deepcopy(metadata))) == metadata
