"""A message's claim, from the pipeline's side: taking it (``Store.claim_message``), what a
claim that is not to be answered comes to, and closing it (``bot/store/_handling.py`` has the
store's side).

Every claim is this runtime's (``runtime.claimant``): a claimant that claims again after a store
error counts no attempt, and its closing of a claim taken over meanwhile changes nothing. A
claim the store failed is claimed again with back-off; one whose answer the fence refused, or
the store failed under, is given back to be answered again — neither is dropped.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.sdk import Claim, ExponentialBackoff, Handling, Memory, Outcome, Status, StoreError, now_ms

from ._delivery import Delivery

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["RETRIES", "claim_for", "finish", "refusal"]

_log = logging.getLogger(__name__)

#: How many times a message left unfinished by a crash is taken up again.
RETRIES = 1
# Claiming again while the store fails: the first wait, and the longest.
CLAIM_RETRY_FIRST_S = 0.5
CLAIM_RETRY_MAX_S = 5.0


async def claim_for(runtime: AgentRuntime, message_id: str, message: Memory) -> Claim:
    """Claim the message for ``runtime``; while the store fails (the database restarting, out of
    reach, the disk full), try again with back-off until it answers or the agent closes, rather
    than drop it: a statement in flight is not a reason to lose a person's message. Trying again
    is not a crash: the same claimant counts no attempt."""
    store, name = runtime.store, runtime.character.name
    backoff = ExponentialBackoff(CLAIM_RETRY_FIRST_S, CLAIM_RETRY_MAX_S)
    warned = False
    while True:
        try:
            claim = await store.claim_message(
                message_id,
                message.room_id,
                message.created_at or now_ms(),
                retries=RETRIES,
                claimant=runtime.claimant,
            )
        except StoreError as exc:
            if not runtime.accepting:
                raise
            # While the store cannot write it says so itself, once: not a line per message.
            if not warned and store.health.writable:
                warned = True
                _log.warning("%s: could not claim message %s (%s); trying again", name, message_id, exc)
            await store.health.pause(backoff.delay())
            continue
        if warned:
            _log.info("%s: claimed message %s after the store came back", name, message_id)
        return claim


def refusal(runtime: AgentRuntime, message: Memory, claim: Claim) -> Outcome | None:
    """The outcome of a claim that says the message is not to be answered now; None to answer it."""
    name = runtime.character.name
    if claim is Claim.DUPLICATE:
        _log.debug("%s: message %s was delivered again; it was already handled", name, message.id)
        return Outcome(Status.DUPLICATE, "already handled")
    if claim is Claim.SENT:
        # At most once wins: the reply went out unless troupe died in the moment between
        # recording that it was sending and the platform receiving it.
        _log.warning(
            "%s: message %s in room %s is not answered again: troupe stopped while its reply was going out",
            name,
            message.id,
            message.room_id,
        )
        return Outcome(Status.SENT_BEFORE_CRASH, "its reply went out before a crash")
    if claim is Claim.ABANDONED:
        _log.warning(
            "%s: message %s in room %s is not answered: troupe died while answering it, then again "
            "while answering it after the restart; a message that crashes troupe must not do so "
            "forever",
            name,
            message.id,
            message.room_id,
        )
        return Outcome(Status.ABANDONED, "troupe died twice while answering it")
    return None


async def finish(
    runtime: AgentRuntime, delivery: Delivery, message_id: str, outcome: Outcome, *, store_failed: bool = False
) -> None:
    """Close the claim with ``outcome`` — if it is still ``runtime``'s: a daemon that lost the
    character's lease, or whose store failed under the message, and sent nothing gives the
    message back instead, to be answered again (a refused send is not a finished message)."""
    if not delivery.sent and (store_failed or not runtime.may_send()):
        await delivery.give_back()
        return
    store, status = runtime.store, outcome.status.value
    try:  # while the store cannot write, waits for it: a claim left open is taken up again
        await store.health.retry(
            lambda: store.mark_message(message_id, Handling.DONE, status, claimant=runtime.claimant),
            going_on=lambda: runtime.accepting,
        )
    except StoreError as exc:  # the answer stands; a restart may take the message up once more
        log = _log.warning if store.health.writable else _log.debug
        log("%s: could not record the end of message %s: %s", runtime.character.name, message_id, exc)
