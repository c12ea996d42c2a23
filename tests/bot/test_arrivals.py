"""Arrivals: messages that tie at the platform's clock are dated in the order they were heard."""

from __future__ import annotations

from bot.arrivals import Arrivals
from bot.types import Memory


def _heard(arrivals: Arrivals, room: str, created_at: int | None) -> int | None:
    memory = Memory(entity_id="e", room_id=room, content={"text": "hi"}, created_at=created_at)
    arrivals.stamp(memory)
    return memory.created_at


def test_messages_of_one_second_are_dated_in_the_order_heard() -> None:
    arrivals = Arrivals()
    # Telegram: three messages in second 5, then two in second 6.
    assert [_heard(arrivals, "r", t) for t in (5000, 5000, 5000, 6000, 6000)] == [5000, 5001, 5002, 6000, 6001]
    # Discord: milliseconds; one heard after a later one, within a second, comes after it.
    assert [_heard(arrivals, "d", t) for t in (7000, 7000, 7500, 7200)] == [7000, 7001, 7500, 7501]


def test_an_older_message_keeps_its_time_and_rooms_are_apart() -> None:
    arrivals = Arrivals()
    assert _heard(arrivals, "r", 10_000) == 10_000
    assert _heard(arrivals, "r", 2_000) == 2_000  # read back after a lost connection: its own time
    assert _heard(arrivals, "r", 10_000) == 10_001  # the room's last is still 10,000
    assert _heard(arrivals, "other", 10_000) == 10_000
    assert _heard(arrivals, "r", None) is None


def test_the_least_recently_heard_rooms_are_forgotten() -> None:
    arrivals = Arrivals(rooms=2)
    for room in ("a", "b", "c"):
        _heard(arrivals, room, 1000)
    assert _heard(arrivals, "a", 1000) == 1000  # forgotten: nothing to tie with
    assert _heard(arrivals, "c", 1000) == 1001
