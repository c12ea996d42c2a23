"""What both backends' claims of platform messages share (``bot/store/_handling.py`` has the contract).

Every change of a claim is a compare-and-set: it names the state it expects and, for the
claimant's own changes, the claimant (:data:`ANONYMOUS` or a token naming one runtime of the
character and the lease epoch it runs under). A write that waited — a deposed daemon's, delayed
by a cut link — then finds the claim taken over or finished, and changes nothing.
"""

from __future__ import annotations

from bot.kernel.types import Claim, Handling

__all__ = [
    "ANONYMOUS",
    "CLOSED_AS",
    "EXPIRABLE",
    "MARKS",
    "RELEASABLE",
    "UNFINISHED",
    "orphaned",
    "marks",
    "same_claimant",
]

#: The claimant of a claim made by no runtime in particular (a test, a tool): every claim of it
#: counts as a new attempt, as after a crash.
ANONYMOUS = ""

#: The outcome recorded for a claim closed when it is delivered again (the pipeline's Status values).
CLOSED_AS = {Claim.SENT: "sent_before_crash", Claim.ABANDONED: "abandoned"}

#: For each state a claimant may mark, the states it may be marked from (SQL lists).
MARKS = {
    Handling.SENDING: f"('{Handling.HANDLING.value}')",
    Handling.DONE: f"('{Handling.HANDLING.value}', '{Handling.SENDING.value}')",
}

#: SQL condition: a claim its claimant may give back unsent — still being answered (fenced before
#: marking), SENDING, or closed meanwhile by the lease holder as sent before a crash (it was not:
#: the holder could not know). Never one answered, and never one taken over (see the claimant).
RELEASABLE = (
    f"(status IN ('{Handling.HANDLING.value}', '{Handling.SENDING.value}') "
    f"OR (status = '{Handling.DONE.value}' AND outcome = '{CLOSED_AS[Claim.SENT]}'))"
)

#: SQL condition: a claim recovery may close as too old to answer (nobody's reply is going out).
EXPIRABLE = f"status IN ('{Handling.HANDLING.value}', '{Handling.RELEASED.value}')"

#: What ``unfinished_messages`` lists: claims never finished, and those given back unsent.
UNFINISHED = (Handling.HANDLING.value, Handling.RELEASED.value)


def same_claimant(found: str, claimant: str) -> bool:
    """Whether a claim left by ``found`` is being claimed again by the same runtime (a store
    error made it try again): not a crash, so no attempt is counted."""
    return claimant != ANONYMOUS and found == claimant


def marks(status: Handling) -> str:
    """The SQL list of states a claim may be marked ``status`` from; ValueError for others."""
    try:
        return MARKS[status]
    except KeyError:
        raise ValueError(f"a claim is marked SENDING or DONE, not {status.value}") from None


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
