"""A platform message is answered at most once, however often it is delivered, across restarts
and crashes; what a crash left unanswered is taken up once; an outcome says what happened."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.kernel.bus import Handler, Post
from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.errors import StoreError
from bot.kernel.messages import IncomingMessage, QuietChannel
from bot.kernel.outgoing import Reply
from bot.kernel.types import ChannelType, Claim, Handling, Memory, Room, now_ms
from bot.runtime.events import PlatformConnected
from bot.runtime.shared import Shared
from plugins.core import _recovery
from plugins.core._pipeline import MessagePipeline
from plugins.core._recovery import keep_recovering, recover

from . import harness as harness_module
from .harness import HUMAN, plan


def _hang(params: dict) -> Any:
    return asyncio.Event().wait()  # a model (or a platform) that never answers: the process dies meanwhile


async def _crash_while(h: Any, text: str, message_id: str, **meta: Any) -> None:
    """Deliver a message and kill its handling mid-way, as kill -9 would: nothing after that point runs."""
    task = asyncio.create_task(h.say(text, id=message_id, **meta))
    async with asyncio.timeout(60):
        while h.large_calls == 0 and not h.sent:
            await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _crashed_run(harness: Any, text: str) -> tuple[Any, str]:
    """A DM handled until the model was asked, then the process died; a new process on the same
    database, and the message's id."""
    first = await harness(ChannelType.DM)
    message_id = str(uuid.uuid4())
    first.large.append(_hang)
    await _crash_while(first, text, message_id)
    await first.rt.close()
    return await harness(ChannelType.DM), message_id


async def _status(h: Any, message_id: str) -> str:
    handling = await h.rt.store.get_message_handling(message_id)
    return f"{handling.status.value}:{handling.outcome}" if handling else "none"


async def test_a_message_delivered_twice_is_answered_once(harness) -> None:
    h = await harness(ChannelType.DM)
    message_id = str(uuid.uuid4())
    assert (await h.say("hi", id=message_id)).status == "replied"
    again = await h.say("hi", id=message_id)
    assert again.status == "duplicate" and len(h.sent) == 1 and h.large_calls == 1
    assert await _status(h, message_id) == "done:replied"


async def test_a_redelivery_while_the_first_is_being_answered_is_not_answered(harness) -> None:
    h = await harness(ChannelType.DM)
    release = asyncio.Event()

    async def slow(params: dict) -> str:
        await release.wait()
        return plan("Once.")

    h.large.append(slow)
    message_id = str(uuid.uuid4())
    first = asyncio.create_task(h.say("hi", id=message_id))
    while h.large_calls == 0:
        await asyncio.sleep(0.01)
    assert (await h.say("hi", id=message_id)).status == "duplicate"
    release.set()
    assert (await first).status == "replied" and [s["text"] for s in h.sent] == ["Once."]


async def test_a_redelivery_after_a_restart_is_not_answered_again(harness) -> None:
    first = await harness(ChannelType.DM)
    message_id = str(uuid.uuid4())
    assert (await first.say("hi", id=message_id)).status == "replied"
    await first.rt.close()
    second = await harness(ChannelType.DM)  # the same character and database: a restart
    assert (await second.say("hi", id=message_id)).status == "duplicate"
    assert second.sent == [] and second.large_calls == 0


async def test_a_message_stored_before_claims_existed_is_a_duplicate(harness) -> None:
    h = await harness(ChannelType.DM)
    message = Memory(
        id=str(uuid.uuid4()), entity_id=HUMAN, room_id=h.room, content=Content(text="old", source="discord")
    )
    await h.rt.store.create_memory(message, "messages")
    assert (await h.say("old", id=message.id)).status == "duplicate" and h.sent == []


async def test_a_crash_before_the_reply_is_answered_once_on_redelivery(harness) -> None:
    second, message_id = await _crashed_run(harness, "are you there?")
    assert await _status(second, message_id) == "handling:None"
    assert (await second.say("are you there?", id=message_id)).status == "replied"
    assert (await second.say("are you there?", id=message_id)).status == "duplicate"
    assert len(second.sent) == 1


async def test_a_message_taken_up_once_and_crashing_again_is_abandoned(harness) -> None:
    second, message_id = await _crashed_run(harness, "hello?")
    second.large.append(_hang)
    await _crash_while(second, "hello?", message_id)
    await second.rt.close()
    third = await harness(ChannelType.DM)
    outcome = await third.say("hello?", id=message_id)
    assert outcome.status == "abandoned" and third.sent == [] and third.large_calls == 0


async def test_a_crash_while_the_reply_was_going_out_never_sends_it_again(harness) -> None:
    first = await harness(ChannelType.DM)
    message_id = str(uuid.uuid4())
    sending = asyncio.Event()

    class Stuck(QuietChannel):
        async def send(self, reply: Reply) -> list[Memory]:
            sending.set()
            await asyncio.Event().wait()
            return []

    message = Memory(id=message_id, entity_id=HUMAN, room_id=first.room, content=Content(text="hi", source="discord"))
    task = asyncio.create_task(first.rt.receive(IncomingMessage(message, Stuck())))
    await asyncio.wait_for(sending.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert await _status(first, message_id) == "sending:None"
    await first.rt.close()
    second = await harness(ChannelType.DM)
    assert (await second.say("hi", id=message_id)).status == "sent_before_crash" and second.sent == []
    assert await _status(second, message_id) == "done:sent_before_crash"


class _Platform:
    """A Messenger that records what was sent as replies to stored messages."""

    def __init__(self, *, serves: bool = True) -> None:
        self.replies: list[tuple[str | None, str]] = []
        self.serving = serves

    def serves(self, message: Memory) -> bool:
        return self.serving

    async def send_to_room(self, room: Any, reply: Reply) -> list[Memory]:
        raise AssertionError("not used")

    async def send_to_entity(self, entity: Any, reply: Reply) -> list[Memory]:
        raise AssertionError("not used")

    async def reply_to(self, message: Memory, reply: Reply) -> list[Memory]:
        self.replies.append((message.id, reply.text))
        return [
            Memory(
                id=str(uuid.uuid4()),
                entity_id=message.agent_id or "",
                room_id=message.room_id,
                content=Content.from_json(reply.to_json()),
            )
        ]


async def test_after_a_crash_addressed_recent_messages_are_answered_and_the_rest_are_not(harness) -> None:
    first = await harness(ChannelType.GROUP)
    addressed, chatter, old = (str(uuid.uuid4()) for _ in range(3))
    for message_id, text in ((addressed, "Ada, what time is it?"), (chatter, "nice weather")):
        first.large.append(_hang)
        first.small.append("<response><action>RESPOND</action></response>")
        await _crash_while(first, text, message_id)
        first.large.clear()
        first.large_calls = 0
    # The third one, addressed too, was left long ago: claimed and stored an hour ago, never answered.
    left_at = now_ms() - 3_600_000
    assert await first.rt.store.claim_message(old, first.room, left_at) is Claim.NEW
    await first.rt.store.create_memory(
        Memory(
            id=old,
            entity_id=HUMAN,
            room_id=first.room,
            content=Content(text="Ada?", source="discord"),
            metadata=MemoryMetadata(is_mention=True),
            created_at=left_at,
        ),
        "messages",
    )
    assert await _status(first, old) == "handling:None"
    await first.rt.close()

    second = await harness(ChannelType.GROUP)
    platform = _Platform()
    second.rt.register_service("discord", platform)
    second.large.append(plan("It is noon."))
    result = await recover(second.rt, MessagePipeline(second.rt), "discord")

    assert {k: v.status for k, v in result.taken_up.items()} == {addressed: "replied", chatter: "not_taken_up"}
    assert result.skipped == [old] and platform.replies == [(addressed, "It is noon.")]
    assert second.small_calls == 0  # unaddressed chatter is not worth a model call after a crash
    assert [await _status(second, i) for i in (addressed, chatter, old)] == [
        "done:replied",
        "done:not_taken_up",
        "done:expired",
    ]
    # Once: a second pass (another reconnect) finds nothing left.
    again = await recover(second.rt, MessagePipeline(second.rt), "discord")
    assert again.taken_up == {} and again.skipped == [] and len(platform.replies) == 1


async def test_after_a_crash_rooms_are_taken_up_side_by_side_and_each_in_order(harness) -> None:
    first = await harness(ChannelType.DM)
    other_room = first.rt.unique_id("discord:room-2")
    await first.rt.store.create_rooms([Room(other_room, source="discord", type=ChannelType.DM, name="dm-2")])
    left = [
        (str(uuid.uuid4()), text, room)
        for text, room in (
            ("first question", first.room),
            ("second question", first.room),
            ("other room question", other_room),
        )
    ]
    for message_id, text, room in left:
        first.large.append(_hang)
        task = asyncio.create_task(first.say(text, id=message_id, room=room))
        async with asyncio.timeout(60):
            while first.large_calls == 0:
                await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        first.large_calls = 0
    await first.rt.close()

    second = await harness(ChannelType.DM)
    platform = _Platform()
    second.rt.register_service("discord", platform)
    other_answered = asyncio.Event()

    async def answer(params: dict) -> str:
        if "other room question" in params["prompt"]:
            other_answered.set()
            return plan("Answer in the other room.")
        await other_answered.wait()  # one slow room does not hold up the others
        return plan("Answer in the first room.")

    second.large.extend([answer] * 3)
    async with asyncio.timeout(60):
        result = await recover(second.rt, MessagePipeline(second.rt), "discord")
    assert [o.status for o in result.taken_up.values()] == ["replied"] * 3
    assert [message_id for message_id, _ in platform.replies] == [left[2][0], left[0][0], left[1][0]]


async def test_recovery_starts_when_the_platform_connects(harness) -> None:
    second, message_id = await _crashed_run(harness, "still there?")
    platform = _Platform()
    second.rt.register_service("discord", platform)
    await second.rt.emit(PlatformConnected(source="discord"))
    async with asyncio.timeout(60):
        while await _status(second, message_id) != "done:replied":
            await asyncio.sleep(0.01)
    assert [m for m, _ in platform.replies] == [message_id]


async def test_nothing_sent_is_a_send_failure_not_a_reply(harness) -> None:
    h = await harness(ChannelType.DM)
    h.platform_down = True
    outcome = await h.say("hi")
    assert outcome.status == "send_failed" and len(h.sent) == 1
    rendered = h.rt.metrics.render()
    assert 'troupe_messages_handled_total{agent="Ada",outcome="send_failed"} 1' in rendered


async def test_a_huge_model_reply_is_cut_before_it_is_sent(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(plan("word " * 60_000))  # 300,000 characters
    assert (await h.say("write a lot")).status == "replied"
    assert len(h.sent) == 1 and len(h.sent[0]["text"]) <= 6000 and h.sent[0]["text"].endswith("…")
    stored = await h.rt.store.get_memories(table="messages", room_id=h.room, count=1)
    assert len(stored[0].content.text) <= 6000  # what is remembered as said is what was sent


async def test_the_reply_bound_is_a_setting(harness) -> None:
    h = await harness(ChannelType.DM, settings={"MAX_REPLY_CHARS": "500"})
    h.large.append(plan("x" * 2000))
    await h.say("write a lot")
    assert 100 < len(h.sent[0]["text"]) <= 500


class _Fence:
    def __init__(self) -> None:
        self.held = True

    def allows(self) -> bool:
        return self.held


async def test_a_reply_under_way_when_the_lease_is_lost_is_left_to_the_daemon_that_took_over(harness) -> None:
    h = await harness(ChannelType.DM)
    h.rt.fence = fence = _Fence()
    release = asyncio.Event()

    async def slow(params: dict) -> str:
        await release.wait()  # meanwhile this daemon is paused past its lease and another takes over
        return plan("Too late.")

    h.large.append(slow)
    message_id = str(uuid.uuid4())
    run = asyncio.create_task(h.say("hi", id=message_id))
    while h.large_calls == 0:
        await asyncio.sleep(0.01)
    fence.held = False
    release.set()
    await run
    assert h.sent == []
    # Not SENDING (that would forbid anyone to answer it) and not done: given back, so the daemon
    # that holds the lease now takes it up and answers it once, no retry used up.
    assert await _status(h, message_id) == "released:None"
    taker = await harness(ChannelType.DM)  # the character on the daemon that took over
    platform = _Platform()
    taker.rt.register_service("discord", platform)
    taker.large.append(plan("Answered by the new daemon."))
    recovered = await recover(taker.rt, MessagePipeline(taker.rt), "discord")
    assert {k: v.status for k, v in recovered.taken_up.items()} == {message_id: "replied"}
    assert platform.replies == [(message_id, "Answered by the new daemon.")]


async def test_a_reply_fenced_off_after_it_was_marked_sending_is_given_back_and_answered_by_the_holder(
    harness, monkeypatch
) -> None:
    """Paused between marking the reply SENDING and sending it, then resumed without the lease:
    nothing goes out, and the message is given back (RELEASED) — even though the new holder,
    finding it SENDING, already closed it as sent before a crash — and the holder answers it."""
    h = await harness(ChannelType.DM)
    h.rt.fence = fence = _Fence()
    h.large.append(plan("Too late."))
    message_id = str(uuid.uuid4())
    taker = await harness(ChannelType.DM)  # the character on the daemon that took over

    async def paused_then_refused(channel: Any, content: dict[str, Any]) -> list[Memory]:
        handling = await h.rt.store.get_message_handling(message_id)
        assert handling is not None and handling.status is Handling.SENDING
        # Paused here; meanwhile the lease went to the taker, whose recovery judged it sent …
        assert await taker.rt.store.claim_message(message_id, h.room, now_ms()) is Claim.SENT
        fence.held = False
        return []  # … and on resuming, the adapter refuses to send without the lease

    monkeypatch.setattr(harness_module._Channel, "send", paused_then_refused)
    outcome = await h.say("hi", id=message_id)
    assert outcome.status == "send_failed"
    assert await _status(h, message_id) == "released:sent_before_crash"
    monkeypatch.undo()
    platform = _Platform()
    taker.rt.register_service("discord", platform)
    taker.large.append(plan("Answered by the new daemon."))
    recovered = await recover(taker.rt, MessagePipeline(taker.rt), "discord", idle_before=0)
    assert {k: v.status for k, v in recovered.taken_up.items()} == {message_id: "replied"}
    assert platform.replies == [(message_id, "Answered by the new daemon.")]
    assert await _status(taker, message_id) == "done:replied"
    again = await recover(taker.rt, MessagePipeline(taker.rt), "discord", idle_before=0)
    assert again.taken_up == {}


async def test_recovery_leaves_a_message_its_connection_does_not_serve_to_the_daemon_that_does(harness) -> None:
    # A Discord shard held by another daemon: its runtime of the same agent may be answering the
    # message right now, so taking it up here would answer it twice.
    elsewhere = await harness(ChannelType.DM)
    elsewhere.large.append(_hang)
    message_id = str(uuid.uuid4())
    await _crash_while(elsewhere, "hi", message_id)
    assert await _status(elsewhere, message_id) == "handling:None"
    here = await harness(ChannelType.DM)
    platform = _Platform(serves=False)
    here.rt.register_service("discord", platform)
    here.large.append(plan("Not mine to answer."))
    recovered = await recover(here.rt, MessagePipeline(here.rt), "discord")
    assert recovered.taken_up == {} and recovered.skipped == [] and platform.replies == []
    assert await _status(here, message_id) == "handling:None"  # still there for the one that serves it


async def test_a_claim_left_by_a_daemon_that_lost_the_lease_after_the_holder_recovered_is_taken_up(
    harness, monkeypatch
) -> None:
    """The old daemon took a message in just before losing the lease, after the new holder's
    first recovery ran: the holder's later looks find the claim idle and answer it, but never
    one it is answering itself."""
    old = await harness(ChannelType.DM)
    old.rt.fence = fence = _Fence()
    release = asyncio.Event()

    async def slow(params: dict) -> str:
        await release.wait()  # meanwhile its lease ran out
        return plan("Too late.")

    old.large.append(slow)

    async def cut_off(*args: Any, **kwargs: Any) -> bool:
        raise StoreError("database write failed: the link is cut")  # so it cannot give it back

    message_id = str(uuid.uuid4())
    run = asyncio.create_task(old.say("hi", id=message_id))
    while old.large_calls == 0:
        await asyncio.sleep(0.01)
    fence.held = False
    monkeypatch.setattr(type(old.rt.store), "release_message", cut_off)
    release.set()
    await run
    monkeypatch.undo()
    assert await _status(old, message_id) == "handling:None" and old.sent == []
    holder = await harness(ChannelType.DM)
    platform = _Platform()
    holder.rt.register_service("discord", platform)
    holder.large.append(plan("Answered by the holder."))
    pipeline = MessagePipeline(holder.rt)
    busy = await recover(holder.rt, pipeline, "discord", idle_before=now_ms() + 1000, busy={message_id})
    assert busy.taken_up == {}  # as if the holder were answering it itself
    recent = await recover(holder.rt, pipeline, "discord", idle_before=now_ms() - 60_000)
    assert recent.taken_up == {}  # claimed moments ago: not yet taken for left behind
    taken = await recover(holder.rt, pipeline, "discord", idle_before=now_ms() + 1000)
    assert {k: v.status for k, v in taken.taken_up.items()} == {message_id: "replied"}
    assert platform.replies == [(message_id, "Answered by the holder.")]


class _TroupeBus:
    """One bus for the test's daemons: each post reaches every subscriber at once."""

    spans_daemons = True

    def __init__(self) -> None:
        self.handlers: dict[str, list[Handler]] = {}
        self.posts: list[Post] = []

    def subscribe(self, topic: str, handler: Handler) -> None:
        self.handlers.setdefault(topic, []).append(handler)

    def unsubscribe(self, topic: str, handler: Handler) -> None:
        self.handlers[topic].remove(handler)

    async def post(self, topic: str, payload: str) -> None:
        self.posts.append(post := Post(len(self.posts) + 1, topic, "old daemon", payload))
        for handler in list(self.handlers.get(topic, ())):
            await handler(post)

    async def recent(self, topic: str, within_s: float) -> list[Post]:
        return []

    async def run(self) -> None:
        pass


@contextlib.asynccontextmanager
async def _recovering(rt: Any, bus: _TroupeBus) -> AsyncIterator[None]:
    """``rt`` looking for work left behind, as a connected platform does; inside, its first
    look is done and it waits for news of messages given back."""
    looking = asyncio.create_task(keep_recovering(rt, MessagePipeline(rt), "discord"))
    try:
        while not bus.handlers.get(_recovery.GIVEN_BACK):
            await asyncio.sleep(0.01)
        yield
    finally:
        looking.cancel()
        await asyncio.gather(looking, return_exceptions=True)


def _lose_the_lease_while_sending(monkeypatch: pytest.MonkeyPatch, fence: _Fence) -> None:
    """Every send is paused after its SENDING mark and resumed without the lease: refused."""

    async def refused(channel: Any, content: dict[str, Any]) -> list[Memory]:
        fence.held = False
        return []

    monkeypatch.setattr(harness_module._Channel, "send", refused)


async def test_a_message_given_back_is_answered_at_once_on_the_news_of_it(harness, monkeypatch) -> None:
    """The daemon that gives a message back says so on the bus, and the holder answers it then,
    not at its next look (one every few seconds per character and platform, a query each)."""
    monkeypatch.setattr(_recovery, "_LOOK_EVERY_S", 60.0)  # only the news can wake the holder
    bus = _TroupeBus()
    old_daemon, new_daemon = Shared(), Shared()
    old_daemon.bus = new_daemon.bus = bus
    old = await harness(ChannelType.DM, shared=old_daemon)
    old.rt.fence = fence = _Fence()
    holder = await harness(ChannelType.DM, shared=new_daemon)
    holder.rt.fence = _Fence()
    platform = _Platform()
    holder.rt.register_service("discord", platform)
    holder.large.append(plan("Answered by the holder."))
    async with _recovering(holder.rt, bus):
        _lose_the_lease_while_sending(monkeypatch, fence)
        message_id = str(uuid.uuid4())
        old.large.append(plan("Too late."))
        assert (await old.say("hi", id=message_id)).status == "send_failed"
        assert [p.topic for p in bus.posts] == [_recovery.GIVEN_BACK]
        async with asyncio.timeout(60):
            while await _status(holder, message_id) != "done:replied":
                await asyncio.sleep(0.01)  # answered, and its claim closed just after
        assert platform.replies == [(message_id, "Answered by the holder.")]
    assert not bus.handlers[_recovery.GIVEN_BACK]  # stopped looking: no longer subscribed


async def test_a_fenced_runtime_leaves_what_was_given_back_to_the_holder(harness, monkeypatch) -> None:
    """A runtime whose lease lapsed gives its message back and says so; its own look must not take
    the message up again only to give it back again: under load that cycle (news waking the look
    each time) kept two daemons busy doing nothing else until every lease lapsed."""
    monkeypatch.setattr(_recovery, "_LOOK_EVERY_S", 0.05)  # many looks while fenced
    bus = _TroupeBus()
    daemon = Shared()
    daemon.bus = bus
    h = await harness(ChannelType.DM, shared=daemon)

    class _CountingFence(_Fence):
        asked = 0

        def allows(self) -> bool:
            self.asked += 1
            return self.held

    h.rt.fence = fence = _CountingFence()
    h.rt.register_service("discord", _Platform())
    async with _recovering(h.rt, bus):
        _lose_the_lease_while_sending(monkeypatch, fence)
        message_id = str(uuid.uuid4())
        h.large += [plan("Too late."), plan("Again, too late.")]
        assert (await h.say("hi", id=message_id)).status == "send_failed"
        asked = fence.asked
        async with asyncio.timeout(60):
            while fence.asked < asked + 20:  # the look has gone round many times since
                await asyncio.sleep(0.01)
        assert h.large_calls == 1
        assert [p.topic for p in bus.posts] == [_recovery.GIVEN_BACK]
        assert await _status(h, message_id) == "released:None"


async def test_connecting_again_looks_once_more_but_keeps_one_loop(harness, monkeypatch) -> None:
    # Discord connects again when the shards a daemon holds change: each time, what was left is
    # taken up once more, and one loop (a query every few seconds) goes on, not one per connect.
    bus = _TroupeBus()
    daemon = Shared()
    daemon.bus = bus
    h = await harness(ChannelType.DM, shared=daemon)
    h.rt.fence = _Fence()
    h.rt.register_service("discord", _Platform())
    first_passes: list[int] = []  # each first pass prunes the claims past keeping
    prune = type(h.rt.store).prune_handled

    async def counted(store: Any, before: int) -> int:
        first_passes.append(before)
        return await prune(store, before)

    monkeypatch.setattr(type(h.rt.store), "prune_handled", counted)
    for _ in range(3):
        await h.rt.emit(PlatformConnected(source="discord"))
    async with asyncio.timeout(60):
        while len(first_passes) < 3 or not bus.handlers.get(_recovery.GIVEN_BACK):
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    assert len(bus.handlers[_recovery.GIVEN_BACK]) == 1 and len(first_passes) == 3


async def test_a_deposed_daemons_delayed_reply_neither_goes_out_nor_reopens_the_answered_message(harness) -> None:
    """The old daemon's reply passed the fence, then waited (its link was cut; here: its model)
    while the daemon holding the character now took the claim over and answered it. When the
    old one resumes, its SENDING finds the claim not its own: nothing goes out, nothing changes."""
    old = await harness(ChannelType.DM)
    release = asyncio.Event()

    async def held(params: dict) -> str:
        await release.wait()
        return plan("A second answer.")

    old.large.append(held)
    message_id = str(uuid.uuid4())
    run = asyncio.create_task(old.say("hi", id=message_id))
    while old.large_calls == 0:
        await asyncio.sleep(0.01)
    holder = await harness(ChannelType.DM)
    platform = _Platform()
    holder.rt.register_service("discord", platform)
    holder.large.append(plan("Answered by the holder."))
    taken = await recover(holder.rt, MessagePipeline(holder.rt), "discord", idle_before=now_ms() + 1000)
    assert {k: v.status for k, v in taken.taken_up.items()} == {message_id: "replied"}
    release.set()  # the fence lets it by: this daemon holds the character again, say
    await run
    assert old.sent == [] and platform.replies == [(message_id, "Answered by the holder.")]
    assert await _status(holder, message_id) == "done:replied"
    again = await recover(holder.rt, MessagePipeline(holder.rt), "discord", idle_before=now_ms() + 1000)
    assert again.taken_up == {}


async def test_a_send_refused_while_the_fence_flickered_is_given_back_and_answered_once(harness, monkeypatch) -> None:
    """A renewal landed late: the fence refused the send, then allowed again before the pipeline
    closed the claim. The message is not closed as send_failed (never answered): it is given
    back, and answered once."""
    h = await harness(ChannelType.DM)
    h.rt.fence = fence = _Fence()
    h.large.append(plan("Refused."))

    async def flickered(channel: Any, content: dict[str, Any]) -> list[Memory]:
        fence.held = False
        assert not h.rt.may_send()  # the adapter's check: refused
        fence.held = True  # and the late renewal lands
        return []

    monkeypatch.setattr(harness_module._Channel, "send", flickered)
    message_id = str(uuid.uuid4())
    await h.say("hi", id=message_id)
    monkeypatch.undo()
    assert await _status(h, message_id) == "released:None"
    platform = _Platform()
    h.rt.register_service("discord", platform)
    h.large.append(plan("Answered now."))
    pipeline = MessagePipeline(h.rt)
    recovered = await recover(h.rt, pipeline, "discord", idle_before=0)
    assert {k: v.status for k, v in recovered.taken_up.items()} == {message_id: "replied"}
    assert platform.replies == [(message_id, "Answered now.")]
    assert (await recover(h.rt, pipeline, "discord", idle_before=now_ms() + 1000)).taken_up == {}


async def test_fenced_attempts_use_up_no_retries(harness) -> None:
    """A database outage longer than the lease: the message is taken up, fenced, taken up again,
    fenced again — and still answered in the end, not abandoned as if troupe had crashed."""
    message_id = str(uuid.uuid4())
    for attempt in range(3):
        daemon = await harness(ChannelType.DM)
        daemon.rt.fence = fence = _Fence()
        fence.held = attempt == 2
        platform = _Platform()
        daemon.rt.register_service("discord", platform)
        daemon.large.append(plan(f"Answer {attempt}."))
        if attempt == 0:
            await daemon.say("hi", id=message_id)
        else:
            await recover(daemon.rt, MessagePipeline(daemon.rt), "discord", idle_before=now_ms() + 1000)
        if attempt < 2:
            assert await _status(daemon, message_id) == "released:None"
    assert platform.replies == [(message_id, "Answer 2.")]
    assert await _status(daemon, message_id) == "done:replied"


async def test_a_claim_the_store_failed_is_claimed_again_and_answered(harness, monkeypatch) -> None:
    """PostgreSQL crashed under the claim's INSERT: the message is not recorded as an error and
    dropped; it is claimed again once the store answers, and answered once."""
    from plugins.core import _claiming

    monkeypatch.setattr(_claiming, "CLAIM_RETRY_FIRST_S", 0.01)
    h = await harness(ChannelType.DM)
    h.large.append(plan("Answered after all."))
    claim = type(h.rt.store).claim_message
    failures = [StoreError("database write failed: the server closed the connection")] * 2
    calls = 0

    async def crashing(store: Any, *args: Any, **kwargs: Any) -> Claim:
        nonlocal calls
        calls += 1
        if calls == 1:  # the INSERT reached the database, its answer did not
            await claim(store, *args, **kwargs)
        if failures:
            raise failures.pop()
        return await claim(store, *args, **kwargs)

    monkeypatch.setattr(type(h.rt.store), "claim_message", crashing)
    message_id = str(uuid.uuid4())
    outcome = await h.say("hi", id=message_id)
    assert outcome.status == "replied" and [s["text"] for s in h.sent] == ["Answered after all."]
    handling = await h.rt.store.get_message_handling(message_id)
    assert handling is not None and (handling.status, handling.attempts) == (Handling.DONE, 1)


@pytest.mark.parametrize("skew_s", [400, -400])
async def test_a_daemon_whose_clock_is_off_takes_up_what_a_killed_owner_left_by_the_databases_clock(
    tmp_path, postgres_url: str, monkeypatch, skew_s: int
) -> None:
    """Several daemons on PostgreSQL, the holder's clock 400 s ahead or behind: it still finds
    the claim a killed daemon left once it has been idle a while — by the database's clock, not
    at once (ahead) nor 400 s late (behind) — and answers it (ahead, it answered none: each
    looked older than RECOVERY_WINDOW_S)."""
    from bot.store.postgres import PostgresDatabase

    monkeypatch.setattr(_recovery, "_ORPHANED_AFTER_S", 1.0)
    monkeypatch.setattr(_recovery, "_LOOK_EVERY_S", 0.2)
    bus = _TroupeBus()
    daemon = Shared()
    daemon.bus = bus
    async with PostgresDatabase(postgres_url) as db, harness_module.harnesses(db, tmp_path) as harness:
        holder = await harness(ChannelType.DM, shared=daemon)
        holder.rt.fence = _Fence()
        platform = _Platform()
        holder.rt.register_service("discord", platform)
        holder.large.append(plan("Answered by the holder."))
        real = time.time_ns
        monkeypatch.setattr(time, "time_ns", lambda: real() + skew_s * 1_000_000_000)  # this process's clock
        looking = asyncio.create_task(keep_recovering(holder.rt, MessagePipeline(holder.rt), "discord"))
        try:
            while not bus.handlers.get(_recovery.GIVEN_BACK):
                await asyncio.sleep(0.01)  # the first pass is done: nothing was left then
            monkeypatch.setattr(time, "time_ns", real)  # the killed daemon's clock was right
            killed = await harness(ChannelType.DM)
            killed.large.append(_hang)
            message_id = str(uuid.uuid4())
            await _crash_while(killed, "hi", message_id)
            monkeypatch.setattr(time, "time_ns", lambda: real() + skew_s * 1_000_000_000)
            async with asyncio.timeout(30):
                while not platform.replies:
                    await asyncio.sleep(0.05)
                while await _status(holder, message_id) != "done:replied":
                    await asyncio.sleep(0.05)  # the claim is closed just after the reply went out
            assert platform.replies == [(message_id, "Answered by the holder.")]
        finally:
            looking.cancel()
            await asyncio.gather(looking, return_exceptions=True)


async def test_a_message_the_store_failed_under_is_given_back_not_closed_as_an_error(harness, monkeypatch) -> None:
    """The database crashed while the message was being stored: not recorded as an error and
    left unanswered, but given back, and answered when taken up again."""
    h = await harness(ChannelType.DM)
    store_type = type(h.rt.store)
    create = store_type.create_memory

    async def crashed(store: Any, *args: Any, **kwargs: Any) -> Any:
        raise StoreError("database write failed: the server closed the connection unexpectedly")

    monkeypatch.setattr(store_type, "create_memory", crashed)
    message_id = str(uuid.uuid4())
    assert (await h.say("hi", id=message_id)).status == "error"
    monkeypatch.setattr(store_type, "create_memory", create)
    assert await _status(h, message_id) == "released:None" and h.sent == []
    platform = _Platform()
    h.rt.register_service("discord", platform)
    h.large.append(plan("Answered after all."))
    # The store never kept the message itself: only a redelivery can bring it back (as Telegram's
    # does for an update it was not confirmed); it is answered then, once.
    again = await h.say("hi", id=message_id)
    assert again.status == "replied" and [s["text"] for s in h.sent] == ["Answered after all."]
    assert await _status(h, message_id) == "done:replied"


async def test_a_reply_held_across_losing_and_regaining_the_lease_is_not_sent_by_the_old_runtime(harness) -> None:
    """Paused with a model answer under way, the daemon lost the character, then got it back at
    a later epoch before the answer arrived: the runtime started under the old epoch sends
    nothing (the other daemon answered meanwhile); it gives the message back instead."""
    from bot.cluster.host import _LeaseFence
    from bot.cluster.placement import Placement
    from bot.store._leases import LocalLeases

    class Host:
        async def serve(self, unit: str, lease: Any) -> None:
            pass

        async def stop_serving(self, unit: str) -> None:
            pass

    old = await harness(ChannelType.DM)
    leases = LocalLeases()
    placement = Placement(leases, Host(), "d1", [old.rt.agent_id], ttl_s=60.0)
    await placement.step()
    old.rt.fence = _LeaseFence(placement, old.rt.agent_id, home=True)  # started under epoch 1
    release = asyncio.Event()

    async def held(params: dict) -> str:
        await release.wait()
        return plan("From the old epoch.")

    old.large.append(held)
    message_id = str(uuid.uuid4())
    run = asyncio.create_task(old.say("hi", id=message_id))
    while old.large_calls == 0:
        await asyncio.sleep(0.01)
    lease = placement.lease_of(old.rt.agent_id)
    assert lease is not None and await leases.release(lease)  # lost (paused past it) …
    await placement.step()  # … and, resumed, taken again
    regained = placement.lease_of(old.rt.agent_id)
    assert regained is not None and regained.epoch == 2
    release.set()
    await run
    assert old.sent == []
    assert await _status(old, message_id) == "released:None"
    await placement.settled()
