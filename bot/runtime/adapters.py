"""The skeleton every platform adapter shares: what a platform needs beyond translating.

A platform subclasses :class:`PlatformAdapter` and fills in its abstract methods: how it
connects, how it sends one message natively and what the store keeps of a sent message, where
a room, a person and a stored message are on the platform. The adapter then has, written once
here:

- its lifecycle (:class:`~bot.kernel.lifecycle.AdapterState`): the bot token claimed for the run (one bot per
  character), the connection made (or everything undone again), the adapter offered to the
  runtime under :func:`platform_key` and withdrawn on close, the events being handled given
  time to finish before the runtime's database goes away;
- sending, in one flow for every platform. A live reply goes through
  :class:`PlatformReplyChannel` (the :class:`~bot.kernel.messages.ReplyChannel` of every message a
  platform hears): :meth:`PlatformAdapter.reply` sends it (:meth:`~PlatformAdapter.try_send`,
  the platform's :meth:`~PlatformAdapter.send_native`), stores what went out
  (:meth:`~PlatformAdapter.remember_sent`) and calls :meth:`~PlatformAdapter.after_sent` (a
  voice says it too). A reply that settles a press (``Reply.settles``) edits the message the
  button was under instead (:meth:`~PlatformAdapter.settle_native`), and the stored message with
  it; where the platform cannot, it is sent as any reply. A message the agent starts (the
  Messenger: SEND_MESSAGE) goes through :meth:`~PlatformAdapter.send_message`, which raises a
  :class:`~bot.kernel.errors.SendError` that says what went wrong;
- :class:`TypingIndicator`, "typing…" while an answer is prepared, as a tracked task.

Worlds, rooms and people are written through :class:`~bot.runtime.connections.Connections`, which
also merges the roles a platform reports (:meth:`~bot.runtime.connections.Connections.merge_world`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from bot.config.shards import Reshardable
from bot.kernel.buttons import Settled
from bot.kernel.errors import ConfigError, PartlySent, SendError
from bot.kernel.lifecycle import AdapterState
from bot.kernel.messages import QuietChannel, Reacted
from bot.kernel.outgoing import Reply
from bot.kernel.record_metadata import PlatformProfile
from bot.kernel.text import first_words
from bot.kernel.types import Entity, Memory, Room
from bot.runtime.components import Messenger, Replier, ServiceKey
from bot.runtime.connections import Connections, SentMessage, TokenClaims, remember_sent

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = [
    "Delivery",
    "DISCORD_SERVICE",
    "platform_key",
    "PlatformAdapter",
    "PlatformReplyChannel",
    "PlatformService",
    "ShardedPlatformService",
    "TYPING_CAP_S",
    "TypingIndicator",
]

_log = logging.getLogger(__name__)

#: How long "typing…" shows at most: an answer that takes longer is not worth pretending about.
TYPING_CAP_S = 60.0
_DRAIN_TIMEOUT_S = 10.0

TargetT = TypeVar("TargetT")  # where a platform sends: a channel object, a chat id …
SentT = TypeVar("SentT")  # what a platform returns for a message it sent
QuotedT = TypeVar("QuotedT")  # what a reply quotes: a platform's message, its id …


@runtime_checkable
class PlatformService(Messenger, Replier, Protocol):
    """What the runtime and its plugins use of a connected platform (a :class:`PlatformAdapter`):
    messages the agent starts (:class:`~bot.runtime.components.Messenger`) and replies to stored messages
    (:class:`~bot.runtime.components.Replier`)."""


@runtime_checkable
class ShardedPlatformService(PlatformService, Reshardable, Protocol):
    """A platform service whose bot is served in shards, which the daemons of a troupe share and
    move between them (Discord)."""


def platform_key(source: str) -> ServiceKey[PlatformService]:
    """The key a platform's connection is offered under in its runtime: its source name
    (``discord``, ``telegram``)."""
    return ServiceKey(source)


#: Discord's connection, which the daemon moves to the shards it holds (see :mod:`bot.cluster.host`).
DISCORD_SERVICE: ServiceKey[ShardedPlatformService] = ServiceKey("discord")


@dataclass(frozen=True, slots=True)
class Delivery(Generic[TargetT, SentT, QuotedT]):
    """A message that went out whole and is stored: what :meth:`PlatformAdapter.after_sent` is told."""

    target: TargetT
    text: str
    """Its words, as they were sent."""
    sent: list[SentT]
    memories: list[Memory]
    """What the store keeps of it, one memory per message the platform sent."""
    in_reply_to: Memory | None = None
    """The incoming message it answers; None for a message the agent starts."""
    quoting: QuotedT | None = None
    """The platform's own message it quotes."""


class TypingIndicator:
    """ "typing…" (or another activity) from :meth:`start` until :meth:`stop`, renewed every
    ``every_s`` seconds and shown at most :data:`TYPING_CAP_S`.

    Args:
        runtime: owns the task (``runtime.create_task``): it is tracked, and cancelled at close.
        show_once: shows the activity once (the platform's "send typing" call); the platform
            lets it fade after a few seconds, so it is called again every ``every_s``.
        job: the task's name after the agent's (``<platform>:typing``).
    """

    def __init__(
        self, runtime: AgentRuntime, show_once: Callable[[], Awaitable[object]], *, every_s: float, job: str
    ) -> None:
        self.runtime, self.show_once, self.every_s, self.job = runtime, show_once, every_s, job
        self.cap_s = TYPING_CAP_S
        self._task: asyncio.Task[Any] | None = None

    async def start(self) -> None:
        """Start showing it (once: later calls change nothing)."""
        if self._task is not None:
            return
        try:
            self._task = self.runtime.create_task(self._run(), self.job)
        except RuntimeError:  # the runtime is closing: no answer is coming any more
            _log.debug("%s: no typing indicator: the runtime is closed", self.runtime.character.name)

    async def _run(self) -> None:
        try:
            async with asyncio.timeout(self.cap_s):
                while True:
                    await self.show_once()
                    await asyncio.sleep(self.every_s)
        except Exception as exc:  # noqa: BLE001 - typing is a courtesy: never worth an error
            _log.debug("%s: typing indicator stopped: %s", self.runtime.character.name, exc.__class__.__name__)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Stop showing it, and wait until it has stopped."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task


class PlatformAdapter(ABC, Generic[TargetT, SentT, QuotedT]):
    """Connects one runtime to one platform as its own bot; the runtime's
    :class:`PlatformService` for ``source``.

    Type parameters: where the platform sends (``TargetT``: a channel, a chat …), what it returns
    for a message it sent (``SentT``), what a reply quotes (``QuotedT``: a message, its id …).

    A subclass sets :attr:`source`, :attr:`label` and :attr:`where`, and implements the abstract
    methods: :meth:`connect` and :meth:`disconnect` (lifecycle); :meth:`send_native`,
    :meth:`record_of_sent` and :meth:`describe_send` (sending); :meth:`room_target`,
    :meth:`entity_target` and :meth:`reply_target` (where the Messenger sends).

    Lifecycle: :meth:`start` once, then :meth:`close` once or more (``start`` registers it with
    the runtime's close).
    """

    source: ClassVar[str]  # the platform's name: content.source, the key it is offered under
    label: ClassVar[str]  # the platform's name in messages for people ("Discord")
    where: ClassVar[str]  # what a room is there, in messages for people ("channel", "chat")
    sends_files: ClassVar[bool] = True  # False: only text goes out (stripped; nothing without it)
    strips_replies: ClassVar[bool] = False  # True: a reply's text is stripped; nothing goes without text or files
    reacts: ClassVar[bool] = False  # True: the bot can put an emoji on a message (react_native)

    def __init__(self, runtime: AgentRuntime, tokens: type[TokenClaims], token: str) -> None:
        self.runtime = runtime
        self.name = runtime.character.name
        self.state = AdapterState.NEW
        self.connections = Connections(runtime, self.source)
        self._tokens = runtime.shared.instance_of(tokens)  # the bots of this daemon's other characters
        self.token = token
        self._handling: set[asyncio.Task[Any]] = set()  # events being handled: close waits for them

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Claim the bot token, connect, and offer the adapter to the runtime; on failure
        everything started is stopped again before the error is raised.

        Raises:
            ConfigError: another character of the daemon uses the token, or the platform
                refused the configuration (from :meth:`connect`).
        """
        self.state = AdapterState.STARTING
        try:
            self._tokens.claim(self.token, self.name)
        except ConfigError:
            self.state = AdapterState.CLOSED  # nothing started, nothing to undo
            raise
        try:
            await self.connect(self.token)
        except BaseException:
            await self.close()
            raise
        self.state = AdapterState.RUNNING
        self.runtime.on_close(self.close)
        key = platform_key(self.source)
        if self.runtime.get_service(key) is None:
            self.runtime.register_service(key, self)
        await self.on_started()

    async def close(self) -> None:
        """Withdraw the adapter, release the token, disconnect (:meth:`disconnect`); again is
        nothing."""
        if self.state is AdapterState.CLOSED:
            return
        self.state = AdapterState.CLOSED
        self.runtime.unregister_service(platform_key(self.source))
        self._tokens.release(self.token, self.name)
        await self.disconnect()

    @abstractmethod
    async def connect(self, token: str) -> None:
        """Connect with ``token``; returns once the platform can be used."""

    async def on_started(self) -> None:
        """After a successful start: what else the platform offers the runtime (actions …)."""

    @abstractmethod
    async def disconnect(self) -> None:
        """Disconnect, and let the events being handled finish (:meth:`finish_handling`)."""

    @contextlib.contextmanager
    def handling(self) -> Iterator[None]:
        """Mark the current task as handling a platform event until the block ends: closing
        waits for it (:meth:`finish_handling`) rather than pulling the database from under a
        reply. Platform SDKs run each event in a task of their own."""
        task = asyncio.current_task()
        if task is not None:
            self._handling.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._handling.discard(task)

    def track_handling(self, task: asyncio.Task[Any]) -> None:
        """Count ``task`` as handling a platform event until it ends (see :meth:`handling`), for
        an SDK that runs the steps of one event as separate callbacks in its task."""
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)

    async def finish_handling(self) -> None:
        """Give the events being handled a little time to finish (a reply going out), then stop
        them: the runtime's database goes away after this."""
        if not self._handling:
            return
        _, late = await asyncio.wait(set(self._handling), timeout=_DRAIN_TIMEOUT_S)
        for task in late:
            task.cancel()
        if late:
            _log.warning("%s: stopped %d %s events still being handled", self.name, len(late), self.label)

    # -- what a platform does natively ----------------------------------------------------

    @abstractmethod
    async def send_native(self, target: TargetT, text: str, reply: Reply, quoting: QuotedT | None) -> list[SentT]:
        """Send ``text`` (and what else of ``reply`` the platform can send) to ``target``,
        quoting ``quoting`` (or nothing). What went out, in order.

        Raises:
            PartlySent: only the first pieces went out (``sent``).
            Exception: the platform's error when nothing went out.
        """

    @abstractmethod
    def record_of_sent(self, message: SentT) -> SentMessage:
        """What the store keeps of one message the agent sent."""

    @abstractmethod
    def describe_send(self, target: TargetT, quoting: QuotedT | None) -> str:
        """What could not be sent, for the log: ``a reply in #general (channel 1) to message 2``."""

    def failure_reason(self, exc: Exception) -> str:
        """Why sending failed, for the log: never a secret (a URL with a token) nor a traceback."""
        return getattr(exc, "message", None) or exc.__class__.__name__

    def refusal_message(self, exc: Exception) -> str | None:
        """The SendError message when ``exc`` means the platform does not allow sending there
        at all (not worth trying again); None for any other failure."""
        return None

    async def fetch_attachment(self, quoting: QuotedT | None, attachment: Mapping[str, object]) -> bytes:
        """The bytes of one attachment of the message ``quoting`` (see
        :meth:`bot.kernel.messages.ReplyChannel.fetch`).

        Raises:
            LookupError: the platform has no such attachment, or no way to download it.
        """
        raise LookupError(f"{self.label} offers no attachments")

    async def react_native(self, target: TargetT, quoting: QuotedT, emoji: str) -> None:
        """Put ``emoji`` on the platform's message ``quoting`` in ``target``, as the bot.

        Raises:
            NotImplementedError: the platform has no reactions (the default).
            Exception: the platform refused it (no permission, the message deleted, an emoji it
                does not take); :meth:`failure_reason` says why, for the log.
        """
        raise NotImplementedError

    async def settle_native(self, target: TargetT, under: SentT, settled: Settled) -> SentT | None:
        """Edit ``under`` (the platform's message a pressed button was under, in ``target``) to
        show ``settled``'s note under its text, without its buttons. The message as edited; None
        when the platform cannot edit it (the default).

        Raises:
            Exception: the platform refused the edit; :meth:`failure_reason` says why, for the log.
        """
        return None

    async def record_direct_chat(self, sent: list[SentT], room_id: str, person: Entity) -> None:
        """After a direct message to ``person`` went out, before it is stored: write what it
        needs (a private chat first seen through it)."""

    async def after_sent(self, delivery: Delivery[TargetT, SentT, QuotedT]) -> None:
        """After a whole live reply or message the agent started went out and was stored (a
        voice says it too). Not for a reply to a stored message (:meth:`reply_to`)."""

    @abstractmethod
    async def room_target(self, room: Room) -> TargetT:
        """Where to post in ``room`` (one of this platform's, with a channel id).

        Raises:
            SendError: the room cannot be reached, or the agent may not talk there.
        """

    @abstractmethod
    async def entity_target(self, entity: Entity, user_id: str) -> tuple[TargetT, str, str | None]:
        """Where a direct message to ``entity`` (``user_id`` on the platform) goes: the target,
        its room id and world id.

        Raises:
            SendError: the person cannot be reached.
        """

    @abstractmethod
    async def reply_target(self, message: Memory, text: str) -> tuple[TargetT, QuotedT | None] | None:
        """Where a reply (``text``) to the stored ``message`` goes, and the platform's message it
        quotes (or None). None when there is nowhere to send it: the message says nothing of
        where it came from, or the place cannot be found (logged, with ``text``'s first words)."""

    # -- sending --------------------------------------------------------------------------

    def _log_send_failure(self, target: TargetT, text: str, exc: Exception, quoting: QuotedT | None = None) -> None:
        """What could not be sent: where, in answer to which message, what it began with, and why."""
        _log.error(
            '%s: could not send %s, "%s": %s',
            self.name,
            self.describe_send(target, quoting),
            first_words(text),
            self.failure_reason(exc),
        )

    def _reply_text(self, reply: Reply) -> str | None:
        """A reply's words as they are sent; None when the platform can send nothing of it."""
        text = reply.text
        if self.strips_replies or not self.sends_files:
            text = text.strip()
            if not text and not (self.sends_files and reply.files):
                return None
        return text

    async def try_send(
        self, target: TargetT, text: str, reply: Reply, quoting: QuotedT | None
    ) -> tuple[list[SentT], bool]:
        """Send ``text`` and ``reply`` (:meth:`send_native`), quoting ``quoting``: what went
        out, and whether that is all of it. Never raises: what is not sent is logged. Nothing is
        stored (see :meth:`reply`)."""
        if not self.runtime.may_send():
            _log.warning("%s: not sending a reply: another daemon may serve this character now", self.name)
            return [], False
        try:
            return await self.send_native(target, text, reply, quoting), True
        except Exception as exc:  # noqa: BLE001 - a reply that fails is logged, the conversation goes on
            self._log_send_failure(target, text, exc, quoting)
            # What did go out is part of the conversation.
            return (list(exc.sent), False) if isinstance(exc, PartlySent) else ([], False)

    async def react(self, target: TargetT, quoting: QuotedT | None, emoji: str) -> Reacted:
        """Put ``emoji`` on the message ``quoting`` (:meth:`react_native`); never raises: a
        refusal is logged, with the emoji, where, and why."""
        emoji = emoji.strip()
        if quoting is None or not emoji:
            return Reacted.UNSUPPORTED
        if not self.runtime.may_send():
            _log.warning("%s: not reacting: another daemon may serve this character now", self.name)
            return Reacted.NOT_SENT
        where = self.describe_send(target, quoting).replace("a reply in", "in", 1)
        try:
            await self.react_native(target, quoting, emoji)
        except NotImplementedError:
            return Reacted.UNSUPPORTED
        except Exception as exc:  # noqa: BLE001 - a reaction refused is logged, the answer goes on
            _log.warning("%s: could not react with %s %s: %s", self.name, emoji, where, self.failure_reason(exc))
            return Reacted.REFUSED
        _log.debug("%s: reacted with %s %s", self.name, emoji, where)
        return Reacted.DONE

    async def reply(
        self,
        target: TargetT,
        reply: Reply,
        quoting: QuotedT | None,
        incoming: Memory,
        *,
        live: bool = True,
        under: SentT | None = None,
    ) -> list[Memory]:
        """Send ``reply`` to ``target`` in answer to the stored ``incoming`` (quoting
        ``quoting``, its platform's message), store what went out, and (``live``: the person is
        waiting for it, not a reply to a message taken up after a crash) after a whole reply,
        :meth:`after_sent`. The memories of what went out; never raises (see :meth:`try_send`).

        ``under``: for a press, the platform's message its button was under, which a reply that
        settles the press edits (:meth:`settle`) instead of sending anything new."""
        if reply.settles is not None:
            if under is not None and live:
                settled = await self.settle(target, under, reply.settles, incoming)
                if settled is not None:
                    return settled
            if not reply.text.strip() and not reply.files:
                return []  # only the edit was meant: nothing to say instead
            reply = replace(reply, settles=None)
        text = self._reply_text(reply)
        if text is None:
            return []
        reply = reply.checked()  # read once: what is sent is what is stored
        sent, whole = await self.try_send(target, text, reply, quoting)
        memories = await self.remember_sent(sent, reply, incoming.room_id, incoming.world_id, in_reply_to=incoming.id)
        if whole and live:
            await self.after_sent(Delivery(target, text, sent, memories, incoming, quoting))
        return memories

    async def settle(self, target: TargetT, under: SentT, settled: Settled, incoming: Memory) -> list[Memory] | None:
        """Edit ``under`` as ``settled`` says (:meth:`settle_native`) and the stored message with
        it: its text as shown now, its buttons gone. Its memory; ``[]`` when nothing may go out
        now; None when the platform did not edit it (logged), for the reply to go as any other."""
        if not self.runtime.may_send():
            _log.warning("%s: not answering a press: another daemon may serve this character now", self.name)
            return []
        try:
            edited = await self.settle_native(target, under, settled)
        except Exception as exc:  # noqa: BLE001 - an edit refused becomes a new message
            _log.warning(
                "%s: could not show %r on the message pressed (%s); saying it in a new message",
                self.name,
                settled.note,
                self.failure_reason(exc),
            )
            return None
        if edited is None:
            return None
        record = self.record_of_sent(edited)
        stored = await self.runtime.store.get_memory(record.id)
        if stored is None:  # sent before troupe kept what it sent: kept now, as it reads
            said = Reply(text=record.text, source=self.source)
            return await self.remember_sent([edited], said, incoming.room_id, incoming.world_id)
        content = replace(stored.content, text=record.text, buttons=None)
        await self.runtime.store.update_memory(record.id, content=content)
        return [replace(stored, content=content)]

    async def remember_sent(
        self,
        sent: list[SentT],
        reply: Reply,
        room_id: str,
        world_id: str | None,
        *,
        in_reply_to: str | None = None,
    ) -> list[Memory]:
        """Store and announce what went out (:func:`~bot.runtime.connections.remember_sent`)."""
        records = [self.record_of_sent(message) for message in sent]
        return await remember_sent(
            self.runtime, self.source, records, reply, room_id, world_id, in_reply_to=in_reply_to
        )

    async def send_message(
        self, target: TargetT, reply: Reply, room_id: str, world_id: str | None, *, person: Entity | None = None
    ) -> list[Memory]:
        """Send a message the agent starts (not a reply), store what went out, and after a
        whole message, :meth:`after_sent`.

        ``person``: the one a direct message goes to (see :meth:`record_direct_chat`).

        Raises:
            SendError: nothing went out, or only the beginning (which is stored); the
                message says why, for the person who asked.
        """
        if not self.runtime.may_send():
            raise SendError(f"{self.label} is served by another daemon now; try again in a moment")
        read = reply  # what is sent is what is stored
        text = read.text
        whole = True
        try:
            sent = await self.send_native(target, text, read, None)
        except PartlySent as exc:
            self._log_send_failure(target, text, exc)
            sent, whole = list(exc.sent), False
        except Exception as exc:  # noqa: BLE001 - every failure becomes a SendError the person can read
            refusal = self.refusal_message(exc)
            if refusal is not None:
                raise SendError(refusal) from None
            self._log_send_failure(target, text, exc)
            raise SendError(f"{self.label} did not take the message; try again later") from None
        if person is not None and sent:
            await self.record_direct_chat(sent, room_id, person)
        memories = await self.remember_sent(sent, read, room_id, world_id)
        if not whole:
            raise SendError(
                f"only the beginning of the message went out; {self.label} did not take the rest, try again later"
            )
        await self.after_sent(Delivery(target, text, sent, memories))
        return memories

    # -- Messenger and Replier ------------------------------------------------------------

    async def send_to_room(self, room: Room, reply: Reply) -> list[Memory]:
        """Messenger: post in a room of this platform the bot is in."""
        if room.source != self.source or not room.channel_id:
            raise SendError(f"that is not a {self.label} {self.where}")
        target = await self.room_target(room)
        return await self.send_message(target, reply, room.id, room.world_id)

    async def send_to_entity(self, entity: Entity, reply: Reply) -> list[Memory]:
        """Messenger: a direct message to a person."""
        profile = entity.metadata.profile(self.source)
        user_id = self.user_id_in(profile) if profile is not None else None
        if not user_id:
            raise SendError(f"I don't know {entity.names[0] if entity.names else 'them'} on {self.label}")
        target, room_id, world_id = await self.entity_target(entity, str(user_id))
        return await self.send_message(target, reply, room_id, world_id, person=entity)

    def user_id_in(self, profile: PlatformProfile) -> str | None:
        """A person's platform id in their profile from this platform."""
        return profile.id

    def serves(self, message: Memory) -> bool:
        """Replier: every message of the platform is this connection's (Discord's shards differ)."""
        return True

    async def reply_to(self, message: Memory, reply: Reply) -> list[Memory]:
        """Replier: answer a stored message where it was said, quoting it (if it still exists).
        Nothing sent (logged) gives ``[]``, as for a live reply."""
        text = self._reply_text(reply)
        if text is None:
            return []  # nothing this platform can send
        found = await self.reply_target(message, text)
        if found is None:
            return []
        target, quoting = found
        return await self.reply(target, reply, quoting, message, live=False)


class PlatformReplyChannel(QuietChannel, Generic[TargetT, SentT, QuotedT]):
    """The reply channel (:class:`~bot.kernel.messages.ReplyChannel`) of one message a platform heard:
    replies go to ``target`` quoting ``quoting`` (:meth:`PlatformAdapter.reply`), "typing…"
    shows while one is prepared (``typing_indicator``, stopped by the first reply), and the
    message's attachments come from the platform (:meth:`PlatformAdapter.fetch_attachment`)."""

    def __init__(
        self,
        adapter: PlatformAdapter[TargetT, SentT, QuotedT],
        target: TargetT,
        quoting: QuotedT | None,
        incoming: Memory,
        typing_indicator: TypingIndicator,
        *,
        under: SentT | None = None,
    ) -> None:
        self.adapter, self.target, self.quoting, self.incoming = adapter, target, quoting, incoming
        self.typing_indicator = typing_indicator
        self.under = under
        """For a press: the platform's message its button was under (a reply may settle it)."""

    async def send(self, reply: Reply) -> list[Memory]:
        await self.typing_indicator.stop()
        return await self.adapter.reply(self.target, reply, self.quoting, self.incoming, under=self.under)

    async def typing(self) -> None:
        await self.typing_indicator.start()

    async def fetch(self, attachment: Mapping[str, object]) -> bytes:
        return await self.adapter.fetch_attachment(self.quoting, attachment)

    async def react(self, emoji: str) -> Reacted:
        return await self.adapter.react(self.target, self.quoting, emoji)
