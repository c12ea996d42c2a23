"""What both backends' claims of platform messages share (``bot/store/_handling.py`` has the contract)."""

from __future__ import annotations

from bot.types import Claim, Handling

__all__ = ["CLOSED_AS", "RELEASABLE", "unfinished_statuses"]

#: The outcome recorded for a claim closed when it is delivered again (the pipeline's Status values).
CLOSED_AS = {Claim.SENT: "sent_before_crash", Claim.ABANDONED: "abandoned"}

#: SQL condition: a claim a daemon that lost the lease may give back unsent — SENDING, or closed
#: meanwhile by the lease holder as sent before a crash (it was not: the holder could not know).
RELEASABLE = (
    f"(status = '{Handling.SENDING.value}' "
    f"OR (status = '{Handling.DONE.value}' AND outcome = '{CLOSED_AS[Claim.SENT]}'))"
)


def unfinished_statuses(released_only: bool) -> tuple[str, ...]:
    """The statuses ``unfinished_messages`` lists."""
    if released_only:
        return (Handling.RELEASED.value,)
    return (Handling.HANDLING.value, Handling.RELEASED.value)
