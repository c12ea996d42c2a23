"""The claims behind exactly once (bot/store/_handling.py): the rows every state a delivery can meet leaves.

What the protocol shows of them (and the inbox) is in contract/test_handling.py."""

from __future__ import annotations

from bot.kernel.types import Claim, Handling
from bot.store import AgentStore

from .conftest import R, make_memory


async def _row(store: AgentStore, memory_id: str) -> tuple[str, int, str | None] | None:
    row = await store.database.fetchone(
        "SELECT status, attempts, outcome FROM message_handling WHERE agent_id = ? AND memory_id = ?",
        (store.agent_id, memory_id),
    )
    return None if row is None else (row[0], int(row[1]), row[2])


async def test_a_first_delivery_is_new_and_a_finished_one_is_a_duplicate(store: AgentStore) -> None:
    assert await store.claim_message("m1", R, 1000) is Claim.NEW
    assert await _row(store, "m1") == ("handling", 1, None)
    await store.mark_message("m1", Handling.DONE, "replied")
    assert await store.claim_message("m1", R, 1000) is Claim.DUPLICATE
    assert await _row(store, "m1") == ("done", 1, "replied")


async def test_a_message_stored_before_any_claim_is_a_duplicate(store: AgentStore) -> None:
    await store.create_memory(make_memory("from an older troupe", id="m1"), "messages")
    assert await store.claim_message("m1", R, 1000) is Claim.DUPLICATE
    assert await _row(store, "m1") == ("done", 1, "duplicate")


async def test_an_unfinished_claim_is_retried_once_then_abandoned(store: AgentStore) -> None:
    assert await store.claim_message("m1", R, 1000) is Claim.NEW
    assert await store.unfinished_messages() == [("m1", 1000, 1)]
    assert await store.claim_message("m1", R, 1000, retries=1) is Claim.RETRY
    assert await _row(store, "m1") == ("handling", 2, None)
    assert await store.claim_message("m1", R, 1000, retries=1) is Claim.ABANDONED
    assert await _row(store, "m1") == ("done", 2, "abandoned")
    assert await store.claim_message("m1", R, 1000) is Claim.DUPLICATE
    assert await store.unfinished_messages() == []


async def test_a_claim_whose_reply_was_going_out_is_closed_as_sent(store: AgentStore) -> None:
    await store.claim_message("m1", R, 1000)
    await store.mark_message("m1", Handling.SENDING)
    assert await store.unfinished_messages() == []  # never taken up again by recovery
    assert await store.claim_message("m1", R, 1000, retries=5) is Claim.SENT
    assert await _row(store, "m1") == ("done", 1, "sent_before_crash")


async def test_pruning_forgets_old_claims_whatever_their_state(store: AgentStore) -> None:
    for memory_id, status in (("done", Handling.DONE), ("sending", Handling.SENDING), ("handling", None)):
        await store.claim_message(memory_id, R, 1000)
        if status is not None:
            await store.mark_message(memory_id, status, "replied" if status is Handling.DONE else None)
    await store.claim_message("young", R, 5000)
    assert await store.prune_handled(2000) == 3
    assert [await _row(store, m) for m in ("done", "sending", "handling")] == [None, None, None]
    assert await _row(store, "young") == ("handling", 1, None)
