"""Typed record metadata reads what troupe uses and writes back every stored key unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kernel.record_metadata import (
    EntityMetadata,
    Ownership,
    PlatformProfile,
    RelationshipMetadata,
    Role,
    RoomMetadata,
    Setting,
    TaskMetadata,
    WorldMetadata,
)

STORED: list[tuple[type[Any], dict[str, Any]]] = [
    (
        WorldMetadata,
        {
            "roles": {"u1": "OWNER", "u2": "ADMIN"},
            "ownership": {"ownerId": "u1"},
            "settings": {"GREETING": {"value": "hi", "required": True, "dependsOn": ["X"], "plugin": 1}},
            "chatType": "group",
            "elizaPluginKey": {"nested": [1, 2]},
        },
    ),
    (WorldMetadata, {"settings": None, "chatType": 7}),  # null and a foreign type survive
    (WorldMetadata, {"settings": {"LIMIT": 3, "OFF": None}}),  # bare values stay bare
    (RoomMetadata, {"threadId": 50, "isForumTopic": True, "parentRoomId": "r", "leftAt": 5, "peer": "u"}),
    (
        EntityMetadata,
        {"discord": {"userId": "1", "username": "sam", "globalName": None, "x": 1}, "username": "sam", "k": 1},
    ),
    (RelationshipMetadata, {"interactions": 3, "lastInteractionAt": 9, "n": 2, "since": "2024"}),
    (TaskMetadata, {"options": ["a", {"name": "b"}], "updateInterval": 60_000, "failures": True, "keep": 1}),
    (TaskMetadata, {}),
]


@pytest.mark.parametrize(("kind", "stored"), STORED)
def test_stored_json_round_trips_unchanged(kind: type[Any], stored: dict[str, Any]) -> None:
    assert kind.from_json(stored).to_json() == stored


def test_fields_read_the_keys_troupe_uses() -> None:
    world = WorldMetadata.from_json(STORED[0][1])
    assert world.roles == {"u1": Role.OWNER, "u2": Role.ADMIN} and world.ownership == Ownership(owner_id="u1")
    assert world.settings is not None and world.settings["GREETING"].dependencies == ["X"]
    assert world.role_of("u1") is Role.OWNER and world.role_of("nobody") is Role.NONE
    assert world.extra == {"elizaPluginKey": {"nested": [1, 2]}}
    entity = EntityMetadata.from_json(STORED[4][1])
    assert entity.profile("discord") == PlatformProfile(user_id="1", username="sam", extra={"globalName": None, "x": 1})
    assert TaskMetadata.from_json(STORED[6][1]).failures is None  # true is no count


def test_a_role_in_another_case_or_unknown_is_read_as_such() -> None:
    world = WorldMetadata.from_json({"roles": {"a": "admin", "b": "MODERATOR"}})
    assert world.roles == {"a": Role.ADMIN, "b": Role.NONE}


def test_a_bare_setting_is_its_value() -> None:
    settings = WorldMetadata.from_json({"settings": {"LIMIT": 3}}).settings
    assert settings == {"LIMIT": Setting(value=3)} and settings["LIMIT"].is_set


def test_merged_puts_the_newer_keys_over() -> None:
    stored = EntityMetadata.from_json({"discord": {"userId": "1"}, "status": "INACTIVE", "k": 1})
    newer = EntityMetadata.from_json({"discord": {"userId": "1", "username": "sam"}, "telegram": {"id": "2"}})
    assert stored.merged(newer).to_json() == {
        "discord": {"userId": "1", "username": "sam"},
        "telegram": {"id": "2"},
        "status": "INACTIVE",
        "k": 1,
    }
