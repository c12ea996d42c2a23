"""What was said while no one listened, fetched when a connection starts or identifies again.

When Discord cannot resume a session (INVALID_SESSION, a session that timed out), discord.py
identifies afresh and the events of the gap are never replayed. The adapter then reads
(:func:`catch_up`), through the REST history, what was said meanwhile in the channels where this
run last saw activity, and hands each message to its ordinary message handler, so the gate
decides as for a live message.

Which channels: those where the adapter saw a message (anyone's, its own included) during this
run, the most recently active first, then those where it saw nothing but the guild cache of the
new session shows a message since this run began listening (``last_message_id``: the first words
said in a channel may be said during the gap); at most ``max_channels`` of them. From where:
after the newest message seen in that channel before the connection was lost (the quiet ones:
since listening began), and never before ``window_s`` ago; at most ``max_messages`` per channel,
oldest first.

A sharded client loses and re-identifies each shard on its own: a shard's channels are read
back from where they stood when that shard's session was lost.

Every start of a connection takes its shards on (a daemon alone too: its one shard, 0), as do
:meth:`DiscordAdapter.reshard` adding shards and a character placed among several daemons: what
was said while no one listened — the daemon was stopped or killed, or another daemon had just
let the shards go — and what a stopped daemon held in memory while the store could not write
are in no one's memory but Discord's. For shards taken on the store says where to read
(:func:`with_stored_gap`): the channels of their servers with stored messages within the window,
after the newest stored one. A channel where nothing was stored yet (the first words said there
were said while no one listened) is found by its ``last_message_id`` in the guild cache: the
connection that takes shards on notes in the store since when it listens on each
(:func:`listening_key`); the next one to take them on reads every channel of their servers active
since that mark, from the mark (a little earlier, for the daemons' clocks). Without a mark (the
character never listened there) nothing is read. The window for shards taken on is the shorter
of ``window_s`` and ``RECOVERY_WINDOW_S``, by the database's clock: as after a restart on
Telegram (its inbox replay) and after a crash (``plugins/core/_recovery.py``), an older message
is not taken up, however it was missed; a younger one is handled as a live one (the gate
decides).

Nothing is answered twice: every message handed over in this run is claimed by id (live and
fetched alike, so a message that arrives live while the history is read is handled once), and a
fetched message already in the store is skipped (one stored but left unanswered by a crash is
recovery's).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import discord

from bot.sdk import Memory, Shards, StoreError

from ._mapping import SOURCE, discord_id

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = [
    "CatchUpLimits",
    "MissedMessages",
    "active_since",
    "catch_up",
    "listening_key",
    "taken_on",
    "with_stored_gap",
]

_log = logging.getLogger(__name__)

_FETCH_TIMEOUT_S = 30.0
# A mark is read back from this much earlier: the daemons' clocks and Discord's differ a little
# (reading more costs nothing: what is stored is skipped).
_CLOCK_MARGIN_MS = 5_000
# How many handed-over message ids are remembered: a message older than this many is never
# fetched again anyway (each channel is read only after the newest message seen in it).
_CLAIMS_KEPT = 2000
_STORED_SCAN = 500  # recent stored messages looked at for the channels of shards taken on


@dataclass(frozen=True)  # no slots: ``CatchUpLimits.window_s`` must read as the default
class CatchUpLimits:
    window_s: float = 600.0
    """How far back to read after a lost session; 0 switches catching up off."""
    max_messages: int = 50
    """At most this many messages per channel (one history request)."""
    max_channels: int = 20
    """At most this many channels, the most recently active first."""

    @property
    def enabled(self) -> bool:
        return self.window_s > 0 and self.max_messages > 0 and self.max_channels > 0


class MissedMessages:
    """Where this run saw activity, which messages it handed over, and what it missed."""

    def __init__(self, limits: CatchUpLimits) -> None:
        self.limits = limits
        self._last_seen: OrderedDict[int, int] = OrderedDict()
        """Channel id → the newest message id seen there; the most recently active channel last."""
        self._guild_of: dict[int, int | None] = {}
        """Channel id → its server's id (``None``: a DM), for the channels in ``_last_seen``."""
        self._before_loss: dict[int | None, dict[int, int]] = {}
        """``_last_seen`` as it was when the connection was lost (messages seen later are not a
        gap), by connection: ``None`` the client's, a shard id one shard's of a sharded client."""
        self._claimed: OrderedDict[int, None] = OrderedDict()

    def claim(self, message: Any) -> bool:
        """Note ``message`` as seen; False if it was already handed over in this run.

        Synchronous, so that of two handlers of one message (live and fetched) exactly one wins.
        """
        channel_id = message.channel.id
        self._last_seen[channel_id] = max(message.id, self._last_seen.get(channel_id, 0))
        self._last_seen.move_to_end(channel_id)
        guild = getattr(message, "guild", None)
        self._guild_of[channel_id] = guild.id if guild is not None else None
        while len(self._last_seen) > self.limits.max_channels:
            gone, _ = self._last_seen.popitem(last=False)
            if not any(gone in lost for lost in self._before_loss.values()):
                self._guild_of.pop(gone, None)
        if message.id in self._claimed:
            return False
        self._claimed[message.id] = None
        while len(self._claimed) > _CLAIMS_KEPT:
            self._claimed.popitem(last=False)
        return True

    def claimed(self, message_id: int) -> bool:
        return message_id in self._claimed

    def connection_lost(self, shard: int | None = None) -> None:
        """Remember where each channel stood when the client's connection (or one ``shard``'s)
        was lost; later disconnects before a reconnect change nothing."""
        self._before_loss.setdefault(shard, dict(self._last_seen))

    def resumed(self, shard: int | None = None) -> None:
        """Discord replays what the session (or ``shard``'s) missed: there is nothing to fetch."""
        self._before_loss.pop(shard, None)

    def plan(
        self,
        now: datetime.datetime | None = None,
        *,
        covers: Callable[[int | None], bool] | None = None,
        shard: int | None = None,
        quiet: Iterable[tuple[int, int]] = (),
    ) -> list[tuple[int, int]]:
        """``(channel id, read after this message id)`` for each channel to read, most recent first;
        with ``covers``, only channels whose server (``None``: a DM) it accepts — the shards the
        connection serves now, or the one ``shard`` that identified again. ``quiet``: channels
        active since this run began listening where it saw nothing (:func:`active_since`), after
        those it saw.

        Called once per fresh IDENTIFY (of the client: every loss is planned; of one shard: its);
        empty when catching up is off or nothing was seen.
        """
        lost = self._before_loss.pop(shard, None)
        if shard is None:
            self._before_loss.clear()
        seen = lost if lost is not None else dict(self._last_seen)
        heard = [(c, last) for c, last in reversed(seen.items()) if covers is None or covers(self._guild_of.get(c))]
        heard += [(c, after) for c, after in quiet if c not in seen]
        kept = set(self._last_seen).union(*self._before_loss.values())
        self._guild_of = {c: g for c, g in self._guild_of.items() if c in kept}
        return self._bounded(heard, now)

    def with_stored(
        self,
        plan: list[tuple[int, int]],
        stored: Iterable[Memory],
        covers: Callable[[int | None], bool],
        now: datetime.datetime | None = None,
        active: Iterable[tuple[int, int]] = (),
        window_s: float | None = None,
    ) -> list[tuple[int, int]]:
        """``plan`` and, for shards this connection has just taken on (their last holder's gap
        is not in this run's memory), the channels of servers ``covers`` accepts where ``stored``
        (the agent's recent messages, newest first) shows activity, read after the newest stored
        message there, and the channels ``active`` since the shards' listening marks
        (:func:`active_since`); within the same bounds (``window_s``: a shorter window), the most
        recent first."""
        start: dict[int, int] = {}
        for memory in stored:
            meta = memory.metadata
            channel, message, server = meta.channel_id, meta.discord_message_id, meta.server_id
            if memory.content.source != SOURCE or not channel or not message:
                continue
            if covers(int(server) if server else None):
                start.setdefault(int(channel), int(message))  # newest first: the first seen is the newest
        for channel_id, after in [*plan, *active]:
            start[channel_id] = min(after, start.get(channel_id, after))  # the earlier bound reads more
        recent_first = sorted(start.items(), key=lambda item: item[1], reverse=True)
        return self._bounded(recent_first, now, window_s)

    def _bounded(
        self, recent_first: list[tuple[int, int]], now: datetime.datetime | None, window_s: float | None = None
    ) -> list[tuple[int, int]]:
        """At most ``max_channels`` of ``(channel, after)``, none read from before the window."""
        if not self.limits.enabled:
            return []
        moment = now or datetime.datetime.now(datetime.UTC)
        window = self.limits.window_s if window_s is None else min(window_s, self.limits.window_s)
        oldest = discord.utils.time_snowflake(moment - datetime.timedelta(seconds=window))
        return [(channel_id, max(last, oldest)) for channel_id, last in recent_first[: self.limits.max_channels]]

    async def fetch(self, client: discord.Client, channel_id: int, after: int) -> list[discord.Message]:
        """Up to ``max_messages`` messages after ``after`` in the channel, oldest first.

        discord.py waits out rate limits itself; the timeout bounds that wait too.

        Raises:
            discord.HTTPException: Discord refused (403 without access, 404 for a deleted channel …).
            TimeoutError: Discord did not answer in time.
        """
        async with asyncio.timeout(_FETCH_TIMEOUT_S):
            channel: Any = client.get_channel(channel_id) or await client.fetch_channel(channel_id)
            return [
                m
                async for m in channel.history(
                    after=discord.Object(after), oldest_first=True, limit=self.limits.max_messages
                )
            ]


def taken_on(held: Shards | None, wanted: Shards) -> frozenset[int]:
    """The shards of ``wanted`` that ``held`` did not cover (all of them when the count changes)."""
    if held is None:
        return frozenset()  # unsharded, it heard every server
    if held.count != wanted.count:
        return frozenset(wanted.ids)
    return frozenset(wanted.ids) - frozenset(held.ids)


async def catch_up(adapter: DiscordAdapter, plan: list[tuple[int, int]]) -> None:
    """The session was lost for good, or shards were taken on (at every start too): hand over
    what was said meanwhile as if it had just arrived (the gate decides), skipping what was
    already handed over or stored."""
    assert adapter.client is not None
    agent, read, handed = adapter.runtime.agent_id, 0, 0
    for channel_id, after in plan:
        try:
            messages = await adapter.missed.fetch(adapter.client, channel_id, after)
        except (discord.HTTPException, TimeoutError) as exc:
            detail = f"{exc.status} {exc.text}" if isinstance(exc, discord.HTTPException) else "no answer in time"
            _log.warning("%s: could not read the messages missed in channel %s: %s", adapter.name, channel_id, detail)
            continue
        read += 1
        for message in messages:
            if (
                adapter.missed.claimed(message.id)
                or await adapter.runtime.store.get_memory(discord_id(agent, message.id)) is not None
            ):
                continue
            handed += 1
            # Like the gateway: one task per message, in order, so a burst behaves like one.
            adapter.runtime.create_task(adapter.run_handler("message", adapter.on_message(message)), "discord:message")
    _log.info(
        "%s: caught up with Discord; read back %d of %d channel(s), %d missed message(s) handed over",
        adapter.name,
        read,
        len(plan),
        handed,
    )


async def with_stored_gap(
    adapter: DiscordAdapter, plan: list[tuple[int, int]], taken_on: frozenset[int]
) -> list[tuple[int, int]]:
    """``plan``, and the recently active channels of the shards ``taken_on``, from the store,
    within the shorter of the catch-up window and ``RECOVERY_WINDOW_S``."""
    shards = adapter.shards or Shards.all(1)
    window_ms = min(int(adapter.missed.limits.window_s * 1000), adapter.runtime.recovery_window_ms)
    if not adapter.missed.limits.enabled or window_ms <= 0:
        return plan
    store = adapter.runtime.store
    assert adapter.client is not None
    try:
        # The database's clock: the marks are another daemon's, whose clock may differ from this one's.
        now = await store.clock_ms()
        stored = await store.get_memories(table="messages", start=now - window_ms, count=_STORED_SCAN)
        marks = {k: mark for k in taken_on if isinstance(mark := await store.get_cache(listening_key(k)), int)}
        for k in taken_on:  # read before written: the last holder's mark says where its listening began
            await store.set_cache(listening_key(k), now)
    except StoreError as exc:
        _log.warning("%s: cannot tell what was said on the shards just taken on: %s", adapter.name, exc)
        return plan
    active = active_since(adapter.client.guilds, marks, shards.shard_of)
    moment = datetime.datetime.fromtimestamp(now / 1000, datetime.UTC)
    return adapter.missed.with_stored(
        plan, stored, lambda guild: shards.shard_of(guild) in taken_on, moment, active, window_ms / 1000
    )


def listening_key(shard: int) -> str:
    """The agent's store cache key noting since when (ms) a connection has listened on ``shard``."""
    return f"discord:listening:{shard}"


def active_since(
    guilds: Iterable[discord.Guild], marks: Mapping[int, int], shard_of: Callable[[int], int]
) -> list[tuple[int, int]]:
    """``(channel id, read after this message id)`` for each channel of ``guilds`` (threads too)
    with a message after the listening mark of its guild's shard (``marks``: shard → ms), the
    most recently active first."""
    after = {
        shard: discord.utils.time_snowflake(
            datetime.datetime.fromtimestamp((ms - _CLOCK_MARGIN_MS) / 1000, datetime.UTC)
        )
        for shard, ms in marks.items()
    }
    active: list[tuple[int, int, int]] = []
    for guild in guilds:
        since = after.get(shard_of(guild.id))
        if since is None:
            continue
        for channel in [*guild.channels, *guild.threads]:
            last = getattr(channel, "last_message_id", None)
            if last is not None and last > since:
                active.append((last, channel.id, since))
    return [(channel_id, since) for _, channel_id, since in sorted(active, reverse=True)]
