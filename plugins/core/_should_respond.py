"""The small model's choice for a message the rules left undecided (``shouldRespondTemplate``),
read once from its answer."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

__all__ = ["ShouldRespond", "read_choice"]


class ShouldRespond(StrEnum):
    """What the small model chose; the values are the words the template asks it to write."""

    RESPOND = "RESPOND"
    IGNORE = "IGNORE"
    STOP = "STOP"  # asked to stay out of the conversation until named or invited back


def read_choice(parsed: Mapping[str, Any]) -> ShouldRespond | None:
    """The choice in a parsed answer (its ``action``; of a list, the last), in any case; None
    when it names none of them."""
    action = parsed.get("action")
    word = str((action[-1] if isinstance(action, list) and action else action) or "").strip().upper()
    try:
        return ShouldRespond(word)
    except ValueError:
        return None
