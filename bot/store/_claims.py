"""What both backends' claims of platform messages share (``bot/store/_handling.py`` has the contract)."""

from __future__ import annotations

from bot.types import Claim, Handling

__all__ = ["CLOSED_AS", "RELEASABLE", "UNFINISHED", "orphaned"]

#: The outcome recorded for a claim closed when it is delivered again (the pipeline's Status values).
CLOSED_AS = {Claim.SENT: "sent_before_crash", Claim.ABANDONED: "abandoned"}

#: SQL condition: a claim a daemon that lost the lease may give back unsent — SENDING, or closed
#: meanwhile by the lease holder as sent before a crash (it was not: the holder could not know).
RELEASABLE = (
    f"(status = '{Handling.SENDING.value}' "
    f"OR (status = '{Handling.DONE.value}' AND outcome = '{CLOSED_AS[Claim.SENT]}'))"
)


#: What ``unfinished_messages`` lists: claims never finished, and those given back unsent.
UNFINISHED = (Handling.HANDLING.value, Handling.RELEASED.value)


def orphaned(idle_before: int | None) -> tuple[str, list[str | int]]:
    """SQL condition (with ``?``/``%s`` placeholders written ``{}``) and parameters for the
    claims ``unfinished_messages(idle_before=…)`` lists: every unfinished one when None; else
    those given back, and those still ``HANDLING`` but untouched since ``idle_before``."""
    if idle_before is None:
        return "status IN ({}, {})", list(UNFINISHED)
    return "(status = {} OR (status = {} AND updated_at < {}))", [
        Handling.RELEASED.value,
        Handling.HANDLING.value,
        idle_before,
    ]
