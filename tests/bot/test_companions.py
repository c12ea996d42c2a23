"""Companions: ties between characters from the rooms they share, and the groups they form."""

from __future__ import annotations

from bot.cluster.companions import Companions
from bot.store import RoomSharing


def test_ties_are_symmetric_and_groups_are_the_connected_characters() -> None:
    companions = Companions([RoomSharing("a", "b", 2), RoomSharing("b", "c", 1), RoomSharing("d", "e", 5)])
    assert companions.of("b") == {"a": 2, "c": 1} and companions.of("a") == {"b": 2}
    assert companions.tie("b", {"a", "c", "z"}) == 3 and companions.tie("a", {"c"}) == 0
    assert companions.groups(["a", "b", "c", "d", "e", "f"]) == [["a", "b", "c"], ["d", "e"], ["f"]]
    assert {companions.key(x) for x in "abc"} == {"a"} and companions.key("e") == "d"
    assert companions.key("f") == "f"  # alone: its own group


def test_groups_within_a_set_are_not_joined_through_a_character_outside_it() -> None:
    companions = Companions([RoomSharing("a", "b", 1), RoomSharing("b", "c", 1)])
    assert companions.groups(["a", "c"]) == [["a"], ["c"]]


def test_no_sharing_means_no_ties() -> None:
    companions = Companions([RoomSharing("a", "a", 3), RoomSharing("a", "b", 0)])
    assert not companions and companions.of("a") == {} and companions.groups(["a", "b"]) == [["a"], ["b"]]
