"""After a crash: answer what the dead process stored but never answered.

A process killed mid-reply leaves its messages claimed ``HANDLING`` (bot/store/_handling.py).
When the agent connects to a platform again, each such message from that platform is looked at
once:
- younger than ``RECOVERY_WINDOW_S`` (default 300 s): handled again through the pipeline, which
  answers it only if it addressed the agent (a DM, a mention, a reply, its name, a followed room)
  and only if it has not been taken up once already;
- older: logged as skipped and closed — an answer that late would only confuse.
A message whose reply had started going out (``SENDING``) is never taken up: at most once.

Several daemons: a daemon that lost a character's lease after marking a reply ``SENDING`` but
before sending it gives the message back (``RELEASED``) and says so on the troupe's bus
(:func:`say_given_back`); the daemon serving the character answers it at once
(:func:`keep_recovering`), and every few seconds looks for what such news missed and for claims
a daemon that lost the lease left idle.
A message the platform's connection does not serve (``Replier.serves``: a Discord shard another
daemon holds, whose runtime of the same agent may be answering it right now) is left to that one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.sdk import (
    IncomingMessage,
    LinkState,
    Memory,
    MessageHandler,
    Outcome,
    Post,
    QuietChannel,
    Replier,
    Reply,
    StoreError,
    next_round,
)

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["KEEP_HANDLED_MS", "Recovery", "keep_recovering", "recover", "say_given_back", "wait_for_link"]

_log = logging.getLogger(__name__)

# Finished claims are kept this long: longer than any platform redelivers (Telegram keeps
# unconfirmed updates for 24 hours). After that the stored message itself marks a redelivery.
KEEP_HANDLED_MS = 2 * 24 * 3600 * 1000
_LINK_WAIT_S = 60.0
_LINK_POLL_S = 0.1
#: How often a character served by one of several daemons looks for messages given back unsent
#: without news of them on the bus (the post was lost), or left idle (see _ORPHANED_AFTER_S).
_LOOK_EVERY_S = 5.0
#: The bus topic of "a message of this character, on this platform, was given back".
GIVEN_BACK = "given-back"
#: A claim untouched this long, of a message this process is not answering, was left by a daemon
#: that lost the character's lease (the daemon serving the character is the only one answering).
_ORPHANED_AFTER_S = 10.0


@dataclass(frozen=True, slots=True)
class Recovery:
    """What one recovery pass did, by message id."""

    taken_up: dict[str, Outcome]
    skipped: list[str]
    """Too old to answer now."""


async def recover(
    runtime: AgentRuntime,
    pipeline: MessageHandler,
    source: str,
    *,
    idle_before: int | None = None,
    busy: Collection[str] = (),
) -> Recovery:
    """Take up the messages from ``source`` that a crashed process left unanswered (see the module
    docstring) — or, with ``idle_before`` (ms), those another daemon that lost the character
    gave back or left claimed untouched since then, except the ``busy`` ones (being answered
    here); returns what was done. Never raises for one message's failure.

    Rooms are taken up side by side, as live messages are, and each room's messages in the order
    they were written, so that its answers come out in that order too.
    """
    store = runtime.store
    window_ms = runtime.recovery_window_ms
    # The database's clock: the message's time is the platform's, and its claim's the database's;
    # this daemon's own clock may be minutes off the troupe's (it answered none once, 400 s ahead).
    now = await store.clock_ms()
    if idle_before is None:  # after a restart (memory retention prunes hourly too)
        try:
            await store.prune_handled(now - KEEP_HANDLED_MS)
        except StoreError as exc:  # housekeeping: the hourly retention run prunes them
            _log.debug("%s: could not forget old claims now: %s", runtime.character.name, exc)
    pending = [p for p in await store.unfinished_messages(idle_before=idle_before) if p[0] not in busy]
    if not pending:
        return Recovery({}, [])
    messenger = runtime.get_service(source)
    rooms: dict[str, list[Memory]] = defaultdict(list)
    skipped: list[str] = []
    for memory_id, created_at, _ in pending:
        message = await store.get_memory(memory_id)
        if message is None:
            # Claimed, then the process died before storing it: nothing is left to answer with.
            # A redelivery by the platform still gets it answered (the claim is retried once).
            continue
        if message.content.source != source:
            continue
        if isinstance(messenger, Replier) and not messenger.serves(message):
            continue  # another daemon serves it (a Discord shard held elsewhere) and may be answering it now
        age_s = (now - created_at) / 1000
        if now - created_at > window_ms:
            _log.info(
                "%s: not answering message %s in room %s after the restart: it is %.0f s old (more than "
                "RECOVERY_WINDOW_S)",
                runtime.character.name,
                memory_id,
                message.room_id,
                age_s,
            )
            # While the store cannot write, waits for it: the pass goes on from here after.
            await store.health.retry(
                functools.partial(store.expire_message, memory_id),
                going_on=lambda: runtime.accepting,
            )
            skipped.append(memory_id)
            continue
        if not isinstance(messenger, Replier):
            _log.warning(
                "%s: cannot answer message %s after the restart: %s offers no way to send",
                runtime.character.name,
                memory_id,
                source,
            )
            continue
        _log.info(
            "%s: answering message %s in room %s, left unanswered %.0f s ago by %s",
            runtime.character.name,
            memory_id,
            message.room_id,
            age_s,
            "a crash" if idle_before is None else "a daemon that lost the character",
        )
        rooms[message.room_id].append(message)
    taken_up: dict[str, Outcome] = {}

    async def take_up(messages: list[Memory]) -> None:
        assert isinstance(messenger, Replier)
        for message in messages:
            assert message.id is not None
            incoming = IncomingMessage(message, _ReplyLater(messenger, message), recovered=True)
            taken_up[message.id] = await pipeline.handle(incoming)

    await asyncio.gather(*(take_up(messages) for messages in rooms.values()))
    return Recovery(taken_up, skipped)


async def keep_recovering(
    runtime: AgentRuntime,
    pipeline: MessageHandler,
    source: str,
    *,
    busy: Collection[str] = (),
    keep_looking: bool = True,
) -> None:
    """Answer what a crash left unanswered on ``source``, once the link is up; with several
    daemons, then keep taking up messages given back on it, except the ``busy`` ones.
    ``keep_looking`` False: the first pass only (another call is looking already)."""
    name = runtime.character.name
    if not await wait_for_link(runtime, source):
        _log.warning("%s: %s is not up; messages a crash left unanswered there wait for the next start", name, source)
        return
    try:
        _report(runtime, source, await recover(runtime, pipeline, source), "after the restart")
    except StoreError as exc:  # a corrupt file (said once, by the store): the next start looks again
        _log.warning("%s: could not look for messages a crash left unanswered on %s: %s", name, source, exc)
    if not keep_looking or runtime.fence is None:
        return
    # Several daemons: a daemon that lost this character's lease may give back a message it
    # could not answer, at any moment after it resumes, or leave one claimed that it took in
    # just before it lost the lease, after this one's first recovery: take such messages up.
    news = asyncio.Event()

    async def heard(post: Post) -> None:
        if post.payload == _given_back(runtime.agent_id, source):
            news.set()

    bus = runtime.shared.bus
    bus.subscribe(GIVEN_BACK, heard)
    try:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_LOOK_EVERY_S):
                    await news.wait()
            await next_round(0)
            news.clear()
            if not runtime.may_send():
                # Fenced (its lease lapsed or moved): what was given back is the holder's to take
                # up. Taking it up here only to give it back again, news waking this loop each
                # time, kept a loaded daemon busy doing nothing else (the loop 41 s behind).
                continue
            try:
                idle_before = await runtime.store.clock_ms() - int(_ORPHANED_AFTER_S * 1000)
                result = await recover(runtime, pipeline, source, idle_before=idle_before, busy=busy)
            except StoreError as exc:
                _log.warning("%s: could not look for messages given back on %s: %s", name, source, exc)
            except Exception:  # a bug here must not end the looking for good
                _log.exception("%s: looking for messages given back on %s failed", name, source)
            else:
                _report(runtime, source, result, "given back by another daemon")
    finally:
        bus.unsubscribe(GIVEN_BACK, heard)


async def say_given_back(runtime: AgentRuntime, source: str) -> None:
    """Tell the daemon serving the character now that one of its messages on ``source`` was given
    back, so it answers at once; never raises (its next look finds the message anyway)."""
    bus = runtime.shared.bus
    if not bus.spans_daemons:
        return
    try:
        async with asyncio.timeout(_LOOK_EVERY_S):
            await bus.post(GIVEN_BACK, _given_back(runtime.agent_id, source))
    except (StoreError, TimeoutError) as exc:
        _log.info("%s: could not tell the troupe a message was given back (%s)", runtime.character.name, exc)


def _given_back(agent_id: str, source: str) -> str:
    return json.dumps({"agent": agent_id, "source": source}, sort_keys=True)


def _report(runtime: AgentRuntime, source: str, result: Recovery, when: str) -> None:
    if result.taken_up or result.skipped:
        ended = Counter(o.status.value for o in result.taken_up.values())
        if result.skipped:
            ended["too old"] = len(result.skipped)
        _log.info(
            "%s: %s, %d messages left unanswered on %s: %s",
            runtime.character.name,
            when,
            len(result.taken_up) + len(result.skipped),
            source,
            ", ".join(f"{n} {status}" for status, n in ended.most_common()),
        )


class _ReplyLater(QuietChannel):
    """Answers a stored message through the platform's messenger: the live message is gone, so
    there is no typing and no attachment to download (what was read before the crash is stored)."""

    def __init__(self, messenger: Replier, message: Memory) -> None:
        self.messenger, self.message = messenger, message

    async def send(self, reply: Reply) -> list[Memory]:
        return await self.messenger.reply_to(self.message, reply)


async def wait_for_link(runtime: AgentRuntime, source: str, timeout: float = _LINK_WAIT_S) -> bool:
    """Wait until the agent's link to ``source`` is up (a platform may still be logging in when
    the daemon's connect returns); False after ``timeout``."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                link = runtime.links.get(source)
                if link is None or link.state is LinkState.CONNECTED:
                    return True
                if link.state is LinkState.FAILED:
                    return False
                await asyncio.sleep(_LINK_POLL_S)
    except TimeoutError:
        return False
