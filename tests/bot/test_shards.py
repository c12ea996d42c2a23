"""Discord shards: a validated set of shard ids, and the character's DISCORD_SHARD_COUNT."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import Character, load_character
from bot.config.shards import MAX_SHARDS, Shards, shard_count
from bot.kernel.errors import ConfigError


def character(**settings: Any) -> Character:
    return Character.model_validate({"name": "Ada", "bio": "x", "settings": settings})


def test_all_shards_of_a_count_are_every_id_below_it() -> None:
    assert Shards.all(3) == Shards(3, (0, 1, 2))
    assert Shards.all(1).ids == (0,)
    assert str(Shards(3, (0, 2))) == "shards 0, 2 of 3" and str(Shards(3, (1,))) == "shard 1 of 3"


@pytest.mark.parametrize(
    ("count", "ids", "message"),
    [
        (0, (0,), "a shard count is a whole number, 1 or more, not 0"),
        (3, (), "no shard ids: a connection serves at least one shard"),
        (3, (2, 0), r"shard ids must be sorted and unique, not \(2, 0\)"),
        (3, (1, 1), r"shard ids must be sorted and unique, not \(1, 1\)"),
        (3, (0, 3), r"shard ids must be from 0 to 2 \(the count is 3\), not \(0, 3\)"),
        (3, (-1, 0), r"shard ids must be from 0 to 2 \(the count is 3\), not \(-1, 0\)"),
        (3, (True,), r"shard ids are whole numbers, not \(True,\)"),
    ],
)
def test_a_bad_set_of_shards_is_refused_saying_what_is_wrong(count: int, ids: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Shards(count, ids)


def test_a_server_belongs_to_the_shard_discord_sends_its_events_to_and_direct_messages_to_shard_0() -> None:
    shards = Shards(3, (0, 2))
    guild = (123 << 22) | 4567  # Discord: (guild_id >> 22) % count; the low bits do not count
    assert shards.shard_of(guild) == 0 and shards.covers(guild)
    assert shards.shard_of(guild + (1 << 22)) == 1 and not shards.covers(guild + (1 << 22))
    assert shards.shard_of(None) == 0 and shards.covers(None)
    assert not Shards(3, (1,)).covers(None)


def test_the_shard_count_is_read_like_any_character_setting_and_is_1_when_unset() -> None:
    assert shard_count(character(), {}) == 1
    assert shard_count(character(), {"DISCORD_SHARD_COUNT": "4"}) == 4  # the daemon's environment
    assert shard_count(character(DISCORD_SHARD_COUNT=3), {"DISCORD_SHARD_COUNT": "4"}) == 3  # the file wins


def test_the_shard_count_may_be_a_secret_of_the_character_like_the_other_discord_settings(tmp_path: Path) -> None:
    path = tmp_path / "ada.json"
    path.write_text(json.dumps({"name": "Ada", "bio": "x", "settings": {"secrets": {"DISCORD_SHARD_COUNT": " 2 "}}}))
    assert shard_count(load_character(path, environ={}).raise_for_problems(), {}) == 2


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", str(MAX_SHARDS + 1)])
def test_a_bad_shard_count_is_a_config_error_naming_the_character_and_the_fix(value: str) -> None:
    with pytest.raises(
        ConfigError, match=rf"^Ada: DISCORD_SHARD_COUNT must be a whole number from 1 to 1000, not '{value}'$"
    ):
        shard_count(character(DISCORD_SHARD_COUNT=value), {})
