"""Exactly once, as the protocol shows it: claims of platform messages and the event inbox.

Behaviour every backend must show (the contract); the rows behind it are in ../test_store_handling.py."""

from __future__ import annotations

from bot.kernel.types import Claim, Handling, now_ms
from bot.store import MessageHandling, Store

from ..conftest import R, make_memory


async def test_a_finished_message_is_a_duplicate_and_no_longer_unfinished(store: Store) -> None:
    assert await store.claim_message("m1", R, 1000) is Claim.NEW
    assert await store.unfinished_messages() == [("m1", 1000, 1)]
    await store.mark_message("m1", Handling.DONE, "replied")
    assert await store.unfinished_messages() == []
    assert await store.claim_message("m1", R, 1000) is Claim.DUPLICATE


async def test_a_claim_reads_back_as_it_stands_for_its_agent_only(store: Store, store_b: Store) -> None:
    assert await store.get_message_handling("m1") is None
    await store.claim_message("m1", R, 1000)
    assert await store.get_message_handling("m1") == MessageHandling("m1", R, Handling.HANDLING, None, 1, 1000)
    await store.claim_message("m1", R, 1000, retries=2)  # a process died: taken up again
    await store.mark_message("m1", Handling.SENDING)
    assert await store.get_message_handling("m1") == MessageHandling("m1", R, Handling.SENDING, None, 2, 1000)
    await store.mark_message("m1", Handling.DONE, "replied")
    assert await store.get_message_handling("m1") == MessageHandling("m1", R, Handling.DONE, "replied", 2, 1000)
    assert await store_b.get_message_handling("m1") is None


async def test_a_message_stored_before_any_claim_is_a_duplicate(store: Store) -> None:
    await store.create_memory(make_memory("from an older troupe", id="m1"), "messages")
    assert await store.claim_message("m1", R, 1000) is Claim.DUPLICATE
    assert await store.unfinished_messages() == []
    handling = await store.get_message_handling("m1")
    assert handling is not None and (handling.status, handling.outcome) == (Handling.DONE, "duplicate")


async def test_an_unfinished_claim_is_retried_up_to_its_limit_then_abandoned(store: Store) -> None:
    assert await store.claim_message("m1", R, 1000) is Claim.NEW
    assert await store.claim_message("m1", R, 1000, retries=2) is Claim.RETRY
    assert await store.unfinished_messages() == [("m1", 1000, 2)]
    assert await store.claim_message("m1", R, 1000, retries=2) is Claim.RETRY
    assert await store.claim_message("m1", R, 1000, retries=2) is Claim.ABANDONED
    assert await store.unfinished_messages() == []
    assert await store.claim_message("m1", R, 1000) is Claim.DUPLICATE


async def test_a_claim_whose_reply_was_going_out_is_closed_as_sent(store: Store) -> None:
    await store.claim_message("m1", R, 1000)
    await store.mark_message("m1", Handling.SENDING)
    assert await store.unfinished_messages() == []
    assert await store.claim_message("m1", R, 1000, retries=5) is Claim.SENT
    assert await store.claim_message("m1", R, 1000, retries=5) is Claim.DUPLICATE


async def test_a_reply_given_back_unsent_is_answered_by_the_next_claim_without_counting_a_crash(store: Store) -> None:
    """A daemon that lost the character's lease between marking SENDING and sending gives the
    message back; the lease holder finds it and answers it, whether or not it had already closed
    the claim as sent before a crash."""
    await store.claim_message("m1", R, 1000)
    await store.mark_message("m1", Handling.SENDING)
    assert await store.release_message("m1") is True
    assert await store.unfinished_messages(idle_before=0) == [("m1", 1000, 1)]  # given back: at once
    assert await store.unfinished_messages() == [("m1", 1000, 1)]
    assert await store.claim_message("m1", R, 1000, retries=1) is Claim.RETRY
    handling = await store.get_message_handling("m1")
    assert handling is not None and (handling.status, handling.attempts) == (Handling.HANDLING, 1)
    assert await store.unfinished_messages(idle_before=0) == []  # HANDLING again, and just now
    assert await store.unfinished_messages(idle_before=now_ms() + 1000) == [("m1", 1000, 1)]  # idle since

    await store.claim_message("m2", R, 2000)
    await store.mark_message("m2", Handling.SENDING)
    assert await store.claim_message("m2", R, 2000) is Claim.SENT  # the holder judged first …
    assert await store.release_message("m2") is True  # … then heard it was never sent
    assert await store.claim_message("m2", R, 2000) is Claim.RETRY
    await store.mark_message("m2", Handling.DONE, "replied")
    assert await store.release_message("m2") is False  # answered: it stays answered
    assert await store.claim_message("m2", R, 2000) is Claim.DUPLICATE


async def test_every_change_of_a_claim_expects_its_state_and_its_claimant(store: Store) -> None:
    """A deposed daemon's write that waited for a connection (the link was cut) runs after the
    holder took the claim over and answered it: it changes nothing, and says so."""
    assert await store.claim_message("m1", R, 1000, claimant="old") is Claim.NEW
    assert await store.claim_message("m1", R, 1000, claimant="holder") is Claim.RETRY  # taken over
    assert await store.mark_message("m1", Handling.SENDING, claimant="old") is False
    assert await store.mark_message("m1", Handling.SENDING, claimant="holder") is True
    assert await store.mark_message("m1", Handling.DONE, "replied", claimant="holder") is True
    # Late, from the deposed one: SENDING, DONE, a give-back, and the holder's own mark again.
    assert await store.mark_message("m1", Handling.SENDING, claimant="old") is False
    assert await store.mark_message("m1", Handling.DONE, "error", claimant="old") is False
    assert await store.release_message("m1", claimant="old") is False
    assert await store.release_message("m1", claimant="holder") is False  # answered: stays answered
    assert await store.mark_message("m1", Handling.SENDING, claimant="holder") is False  # DONE is final
    handling = await store.get_message_handling("m1")
    assert handling is not None and (handling.status, handling.outcome) == (Handling.DONE, "replied")
    assert await store.unfinished_messages(idle_before=now_ms() + 1000) == []
    assert await store.claim_message("m1", R, 1000, claimant="old") is Claim.DUPLICATE


async def test_a_claim_given_back_is_answered_once_and_never_marked_by_its_old_claimant(store: Store) -> None:
    # Fenced before marking SENDING: given back from HANDLING, no attempt counted.
    assert await store.claim_message("m1", R, 1000, claimant="old") is Claim.NEW
    assert await store.release_message("m1", claimant="holder") is False  # not the holder's to give
    assert await store.release_message("m1", claimant="old") is True
    assert await store.mark_message("m1", Handling.DONE, "send_failed", claimant="old") is False
    assert await store.claim_message("m1", R, 1000, claimant="holder", retries=0) is Claim.RETRY
    handling = await store.get_message_handling("m1")
    assert handling is not None and (handling.status, handling.attempts) == (Handling.HANDLING, 1)
    assert await store.release_message("m1", claimant="old") is False  # taken up: too late now


async def test_a_claimant_claiming_again_after_a_store_error_counts_no_attempt(store: Store) -> None:
    """The claim's statement reached the database but its answer did not (the server crashed):
    claiming again is no crash, so no retry is used up — while another claimant's is one."""
    assert await store.claim_message("m1", R, 1000, claimant="mine") is Claim.NEW
    assert await store.claim_message("m1", R, 1000, claimant="mine", retries=0) is Claim.RETRY
    assert await store.claim_message("m1", R, 1000, claimant="mine", retries=0) is Claim.RETRY
    handling = await store.get_message_handling("m1")
    assert handling is not None and handling.attempts == 1
    assert await store.claim_message("m1", R, 1000, claimant="another", retries=1) is Claim.RETRY
    assert await store.claim_message("m1", R, 1000, claimant="a third", retries=1) is Claim.ABANDONED


async def test_only_an_unfinished_claim_expires(store: Store) -> None:
    await store.claim_message("m1", R, 1000)
    assert await store.expire_message("m1") is True
    assert await store.get_message_handling("m1") == MessageHandling("m1", R, Handling.DONE, "expired", 1, 1000)
    await store.claim_message("m2", R, 1000)
    await store.mark_message("m2", Handling.SENDING)
    assert await store.expire_message("m2") is False  # its reply may be going out
    await store.mark_message("m2", Handling.DONE, "replied")
    assert await store.expire_message("m2") is False
    assert await store.expire_message("never claimed") is False


async def test_unfinished_messages_are_oldest_first_and_per_agent(store: Store, store_b: Store) -> None:
    await store.claim_message("late", R, 3000)
    await store.claim_message("early", R, 1000)
    assert await store.unfinished_messages() == [("early", 1000, 1), ("late", 3000, 1)]
    assert await store_b.unfinished_messages() == []
    assert await store_b.claim_message("late", R, 3000) is Claim.NEW


async def test_pruning_forgets_claims_older_than_the_cutoff_whatever_their_state(store: Store) -> None:
    await store.claim_message("done", R, 1000)
    await store.mark_message("done", Handling.DONE, "replied")
    await store.claim_message("handling", R, 1500)
    await store.claim_message("young", R, 5000)
    assert await store.prune_handled(2000) == 2
    assert await store.unfinished_messages() == [("young", 5000, 1)]
    assert await store.prune_handled(2000) == 0


async def test_the_inbox_keeps_events_until_done_oldest_first(store: Store, store_b: Store) -> None:
    await store.inbox_put("telegram", "2", '{"update_id": 2}')
    await store.inbox_put("telegram", "1", '{"update_id": 1}')
    await store.inbox_put("discord", "9", "{}")
    await store.inbox_put("telegram", "1", '{"update_id": 1}')  # delivered again: kept once
    pending = await store.inbox_pending("telegram")
    assert sorted((event_id, payload) for event_id, payload, _ in pending) == [
        ("1", '{"update_id": 1}'),
        ("2", '{"update_id": 2}'),
    ]
    received = [at for _, _, at in pending]
    assert received == sorted(received)  # oldest first
    assert await store_b.inbox_pending("telegram") == []
    await store.inbox_done("telegram", "1")
    assert [event_id for event_id, _, _ in await store.inbox_pending("telegram")] == ["2"]
    assert [event_id for event_id, _, _ in await store.inbox_pending("discord")] == ["9"]


async def test_the_databases_clock_reads_as_ms_since_the_epoch(store: Store) -> None:
    # What daemons compare times with (PostgreSQL's own; SQLite's is this machine's).
    assert abs(await store.clock_ms() - now_ms()) < 5_000
