"""Which stretch of a conversation a request to summarise means, read without a model call.

"the last 20 messages" is a count; "the last 2 hours", "past half an hour", "since this morning",
"today", "yesterday", "since 9am" are a time window (days and clock times in UTC, like the TIME
provider's); anything else ("tl;dr", "catch me up") is the default, which depends on who is talking:

- In a group, where others talk too, what was said since the asker last wrote in the room (what
  they missed), else the last :data:`DEFAULT_MESSAGES`.
- In a conversation between the asker and the character alone (a private chat, or a room where
  nobody else wrote among its last :data:`DEFAULT_MESSAGES` messages), "since you last wrote"
  means nothing: the asker wrote the last message, often every one. "tl;dr of our chat" there means
  the conversation itself: its last :data:`DEFAULT_MESSAGES` messages, and before them the rest of
  the session they end, back to the first pause longer than :data:`PAUSE_MS` (a conversation
  picked up after lunch is the same one; yesterday's is not).

Every window is bounded by :data:`MAX_MESSAGES`, its most recent messages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.sdk import SUMMARY_DEFAULT_COUNT, SUMMARY_MAX_COUNT

__all__ = ["DEFAULT_MESSAGES", "MAX_MESSAGES", "OUR_CONVERSATION", "PAUSE_MS", "Window", "parse_window"]

DEFAULT_MESSAGES = SUMMARY_DEFAULT_COUNT
MAX_MESSAGES = SUMMARY_MAX_COUNT
#: A pause this long ends a private conversation, for the default window.
PAUSE_MS = 3 * 3_600_000
#: How the default window of a private conversation is named ("the conversation between us").
OUR_CONVERSATION = "between us"

_DAY_MS = 86_400_000
_UNIT_MS = {"second": 1_000, "minute": 60_000, "hour": 3_600_000, "day": _DAY_MS, "week": 7 * _DAY_MS}
_UNITS = {
    "s": "second",
    "sec": "second",
    "secs": "second",
    "second": "second",
    "seconds": "second",
    "m": "minute",
    "min": "minute",
    "mins": "minute",
    "minute": "minute",
    "minutes": "minute",
    "h": "hour",
    "hr": "hour",
    "hrs": "hour",
    "hour": "hour",
    "hours": "hour",
    "d": "day",
    "day": "day",
    "days": "day",
    "week": "week",
    "weeks": "week",
}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "couple": 2,
    "a couple": 2,
    "a couple of": 2,
    "couple of": 2,
    "three": 3,
    "few": 3,
    "a few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "fifty": 50,
    "hundred": 100,
    "a hundred": 100,
}
_AMOUNT = r"(\d+|a couple of|couple of|a couple|a few|few|a hundred|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|thirty|fifty|hundred)"
_LAST = r"(?:last|past|previous|latest|recent)"
# "the last five messages", "20 messages", "the last 30" (a number with nothing after it)
_COUNT = re.compile(
    rf"\b{_LAST}\s+{_AMOUNT}\s+(?:messages?|msgs?|posts?)\b|\b(\d+)\s+(?:messages?|msgs?|posts?)\b"
    rf"|\b{_LAST}\s+(\d+)\b(?!\s*[a-z])"
)
_DURATION = re.compile(
    rf"\b{_LAST}\s+(?:{_AMOUNT}\s*)?(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|weeks?)\b"
)
_HALF_HOUR = re.compile(rf"\b{_LAST}\s+half\s+(?:an\s+)?hour\b|\bhalf\s+an\s+hour\b")
_TODAY = re.compile(r"\b(?:today|this morning|since (?:the )?morning|so far today)\b")
_YESTERDAY = re.compile(r"\b(?:yesterday|last night)\b")
_SINCE_CLOCK = re.compile(r"\bsince\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b")


@dataclass(frozen=True, slots=True)
class Window:
    """A stretch of conversation: the last ``count`` messages, the messages since ``since_ms``,
    or neither (the default, which depends on who is talking: see the module docstring)."""

    count: int | None = None
    since_ms: int | None = None
    label: str = "since you last wrote here"
    """How the answer names it, after "the conversation" ("over the last 2 hours")."""

    @property
    def is_default(self) -> bool:
        return self.count is None and self.since_ms is None


def _amount(word: str | None) -> int:
    if not word:
        return 1
    return int(word) if word.isdigit() else _NUMBERS[word]


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" + ("" if n == 1 else "s")


def parse_window(text: str, now_ms: int) -> Window | None:
    """The window ``text`` asks for, or None when it names none (the caller picks the default)."""
    said = " ".join(text.lower().split())
    if match := _COUNT.search(said):
        n = max(1, min(_amount(next(g for g in match.groups() if g)), MAX_MESSAGES))
        return Window(count=n, label=f"over the last {_plural(n, 'message')}")
    if _HALF_HOUR.search(said):
        return Window(since_ms=now_ms - 30 * 60_000, label="over the last half hour")
    if match := _DURATION.search(said):
        n, unit = _amount(match.group(1)), _UNITS[match.group(2)]
        label = f"over the last {unit}" if match.group(1) is None else f"over the last {_plural(n, unit)}"
        return Window(since_ms=now_ms - n * _UNIT_MS[unit], label=label)
    midnight = now_ms - now_ms % _DAY_MS
    if _TODAY.search(said):
        return Window(since_ms=midnight, label="today (since 00:00 UTC)")
    if _YESTERDAY.search(said):
        return Window(since_ms=midnight - _DAY_MS, label="since yesterday (00:00 UTC)")
    if match := _SINCE_CLOCK.search(said):
        return _since_clock(match, now_ms, midnight)
    return None


def _since_clock(match: re.Match[str], now_ms: int, midnight: int) -> Window | None:
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if half is None and match.group(2) is None:
        return None  # "since 3" is more likely "since 3 messages ago" or nonsense than a time
    if half == "pm" and hour < 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        return None
    since = midnight + (hour * 60 + minute) * 60_000
    if since > now_ms:  # "since 22:00" said at 08:00 means last night
        since -= _DAY_MS
    return Window(since_ms=since, label=f"since {hour:02d}:{minute:02d} UTC")
