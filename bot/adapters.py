"""The skeleton every platform adapter shares: what a platform needs beyond translating.

A platform subclasses :class:`PlatformAdapter` and fills in how it connects, how it sends one
message and what a sent message looks like; the adapter then has, written once here:

- its lifecycle (:class:`~bot.lifecycle.AdapterState`): the bot token claimed for the run (one bot per
  character), the connection made (or everything undone again), the adapter registered as the
  runtime's Messenger for its source and withdrawn on close, the events being handled given
  time to finish before the runtime's database goes away;
- the Messenger (SEND_MESSAGE, and replies to stored messages): the native target resolved,
  the message sent, a failure logged and raised as a :class:`~bot.errors.SendError` that says
  what went wrong, what went out remembered (:func:`~bot.connections.remember_sent`);
- :class:`TypingIndicator`, "typing…" while an answer is prepared, as a tracked task.

Worlds, rooms and people are written through :class:`~bot.connections.Connections`, which
also merges the roles a platform reports (:meth:`~bot.connections.Connections.merge_world`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from .buttons import buttons_read
from .connections import Connections, SentMessage, TokenClaims, remember_sent
from .errors import ConfigError, PartlySent, SendError
from .lifecycle import AdapterState
from .text import first_words
from .types import JSON, Entity, Memory, Room

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["PlatformAdapter", "TYPING_CAP_S", "TypingIndicator"]

_log = logging.getLogger(__name__)

#: How long "typing…" shows at most: an answer that takes longer is not worth pretending about.
TYPING_CAP_S = 60.0
_DRAIN_TIMEOUT_S = 10.0

TargetT = TypeVar("TargetT")  # where a platform sends: a channel object, a chat id …
SentT = TypeVar("SentT")  # what a platform returns for a message it sent


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


class PlatformAdapter(Generic[TargetT, SentT]):
    """Connects one runtime to one platform as its own bot; the runtime's Messenger for
    ``source`` (:class:`~bot.components.Messenger`).

    A subclass sets :attr:`source`, :attr:`label` and :attr:`where`, and implements
    :meth:`_connect` and :meth:`_disconnect` (lifecycle), :meth:`_send_native`,
    :meth:`_record_of`, :meth:`_what` (sending), and :meth:`_room_target`,
    :meth:`_entity_target`, :meth:`_reply_target` (the Messenger's targets).

    Lifecycle: :meth:`start` once, then :meth:`close` once or more (``start`` registers it with
    the runtime's close).
    """

    source: ClassVar[str]  # the platform's name: content["source"], the Messenger's service name
    label: ClassVar[str]  # the platform's name in messages for people ("Discord")
    where: ClassVar[str]  # what a room is there, in messages for people ("channel", "chat")
    user_key: ClassVar[str] = "id"  # the key of a person's platform id in entity.metadata[source]
    sends_files: ClassVar[bool] = True  # False: only text goes out (stripped; nothing without it)

    def __init__(self, runtime: AgentRuntime, tokens: type[TokenClaims], token: str) -> None:
        self.runtime = runtime
        self.name = runtime.character.name
        self.state = AdapterState.NEW
        self.connections = Connections(runtime, self.source)
        self._tokens = runtime.shared.one(tokens)  # the bots of this daemon's other characters
        self._token = token
        self._handling: set[asyncio.Task[Any]] = set()  # events being handled: close waits for them

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Claim the bot token, connect, and offer the Messenger; on failure everything started
        is stopped again before the error is raised.

        Raises:
            ConfigError: another character of the daemon uses the token, or the platform
                refused the configuration (from :meth:`_connect`).
        """
        self.state = AdapterState.STARTING
        try:
            self._tokens.claim(self._token, self.name)
        except ConfigError:
            self.state = AdapterState.CLOSED  # nothing started, nothing to undo
            raise
        try:
            await self._connect(self._token)
        except BaseException:
            await self.close()
            raise
        self.state = AdapterState.RUNNING
        self.runtime.on_close(self.close)
        if self.runtime.get_service(self.source) is None:
            self.runtime.register_service(self.source, self)
        await self._started()

    async def close(self) -> None:
        """Withdraw the Messenger, release the token, disconnect (:meth:`_disconnect`); again is
        nothing."""
        if self.state is AdapterState.CLOSED:
            return
        self.state = AdapterState.CLOSED
        self.runtime.unregister_service(self.source)
        self._tokens.release(self._token, self.name)
        await self._disconnect()

    async def _connect(self, token: str) -> None:
        """Connect with ``token``; returns once the platform can be used."""
        raise NotImplementedError

    async def _started(self) -> None:
        """After a successful start: what else the platform offers the runtime (actions …)."""

    async def _disconnect(self) -> None:
        """Disconnect, and let the events being handled finish (:meth:`_finish_handling`)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def handling(self) -> Iterator[None]:
        """Mark the current task as handling a platform event until the block ends: closing
        waits for it (:meth:`_finish_handling`) rather than pulling the database from under a
        reply. Platform SDKs run each event in a task of their own."""
        task = asyncio.current_task()
        if task is not None:
            self._handling.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._handling.discard(task)

    async def _finish_handling(self) -> None:
        """Give the events being handled a little time to finish (a reply going out), then stop
        them: the runtime's database goes away after this."""
        if not self._handling:
            return
        _, late = await asyncio.wait(set(self._handling), timeout=_DRAIN_TIMEOUT_S)
        for task in late:
            task.cancel()
        if late:
            _log.warning("%s: stopped %d %s events still being handled", self.name, len(late), self.label)

    # -- sending --------------------------------------------------------------------------

    async def _send_native(self, target: TargetT, text: str, content: Mapping[str, Any], answering: Any) -> list[SentT]:
        """Send ``text`` (and what else of ``content`` the platform can send) to ``target``,
        quoting ``answering`` (a platform message, or None). What went out, in order.

        Raises:
            PartlySent: only the first pieces went out (``sent``).
            Exception: the platform's error when nothing went out.
        """
        raise NotImplementedError

    def _record_of(self, message: SentT) -> SentMessage:
        """What the store keeps of one message the agent sent."""
        raise NotImplementedError

    def _what(self, target: TargetT, answering: Any) -> str:
        """What could not be sent, for the log: ``a reply in #general (channel 1) to message 2``."""
        raise NotImplementedError

    def _why(self, exc: Exception) -> str:
        """Why sending failed, for the log: never a secret (a URL with a token) nor a traceback."""
        return getattr(exc, "message", None) or exc.__class__.__name__

    def _refusal(self, exc: Exception) -> str | None:
        """The SendError message when ``exc`` means the platform does not allow sending there
        at all (not worth trying again); None for any other failure."""
        return None

    def _log_send_failure(self, target: TargetT, text: str, exc: Exception, answering: Any = None) -> None:
        """What could not be sent: where, in answer to which message, what it began with, and why."""
        _log.error(
            '%s: could not send %s, "%s": %s',
            self.name,
            self._what(target, answering),
            first_words(text),
            self._why(exc),
        )

    async def send_reply(
        self, target: TargetT, text: str, content: Mapping[str, Any], answering: Any
    ) -> tuple[list[SentT], bool]:
        """Send a reply to ``answering``: what went out, and whether that is all of it. Never
        raises: a reply not sent, or not all of it, is logged."""
        if not self.runtime.may_send():
            _log.warning("%s: not sending a reply: another daemon may serve this character now", self.name)
            return [], False
        try:
            return await self._send_native(target, text, content, answering), True
        except Exception as exc:  # noqa: BLE001 - a reply that fails is logged, the conversation goes on
            self._log_send_failure(target, text, exc, answering)
            # What did go out is part of the conversation.
            return (list(exc.sent), False) if isinstance(exc, PartlySent) else ([], False)

    async def answer(
        self, target: TargetT, text: str, content: Mapping[str, Any], answering: Any, message: Memory
    ) -> tuple[list[Memory], bool]:
        """Send ``content`` (``text`` its words) as a reply to ``answering``, the platform's own
        message for the stored ``message``, and remember what went out: those memories, and
        whether that is all of it. Never raises (see :meth:`send_reply`)."""
        content = buttons_read(content)  # read once: what is sent is what is stored
        sent, whole = await self.send_reply(target, text, content, answering)
        memories = await self.remember_sent(sent, content, message.room_id, message.world_id, in_reply_to=message.id)
        return memories, whole

    async def remember_sent(
        self,
        sent: list[SentT],
        content: Mapping[str, Any],
        room_id: str,
        world_id: str | None,
        *,
        in_reply_to: str | None = None,
    ) -> list[Memory]:
        """Store and announce what went out (:func:`~bot.connections.remember_sent`)."""
        records = [self._record_of(message) for message in sent]
        return await remember_sent(
            self.runtime, self.source, records, content, room_id, world_id, in_reply_to=in_reply_to
        )

    async def deliver(
        self, target: TargetT, content: JSON, room_id: str, world_id: str | None, *, person: Entity | None = None
    ) -> list[Memory]:
        """Send a message the agent starts (not a reply) and remember what went out.

        ``person``: the one a direct message goes to (see :meth:`_delivered`).

        Raises:
            SendError: nothing went out, or only the beginning (which is remembered); the
                message says why, for the person who asked.
        """
        if not self.runtime.may_send():
            raise SendError(f"{self.label} is served by another daemon now; try again in a moment")
        text = str(content.get("text") or "")
        read = buttons_read(content)  # read once: what is sent is what is stored
        whole = True
        try:
            sent = await self._send_native(target, text, read, None)
        except PartlySent as exc:
            self._log_send_failure(target, text, exc)
            sent, whole = list(exc.sent), False
        except Exception as exc:  # noqa: BLE001 - every failure becomes a SendError the person can read
            refusal = self._refusal(exc)
            if refusal is not None:
                raise SendError(refusal) from None
            self._log_send_failure(target, text, exc)
            raise SendError(f"{self.label} did not take the message; try again later") from None
        await self._delivered(target, sent, room_id, person)
        memories = await self.remember_sent(sent, read, room_id, world_id)
        if not whole:
            raise SendError(
                f"only the beginning of the message went out; {self.label} did not take the rest, try again later"
            )
        await self._after_delivery(target, text, sent, memories)
        return memories

    async def _delivered(self, target: TargetT, sent: list[SentT], room_id: str, person: Entity | None) -> None:
        """After something went out, before it is remembered: write what it needs (a private
        chat first seen through it)."""

    async def _after_delivery(self, target: TargetT, text: str, sent: list[SentT], memories: list[Memory]) -> None:
        """After a whole message went out and was remembered (a voice version of it)."""

    # -- Messenger ------------------------------------------------------------------------

    async def _room_target(self, room: Room) -> TargetT:
        """Where to post in ``room`` (one of this platform's, with a channel id).

        Raises:
            SendError: the room cannot be reached, or the agent may not talk there.
        """
        raise NotImplementedError

    async def _entity_target(self, entity: Entity, user_id: str) -> tuple[TargetT, str, str | None]:
        """Where a direct message to ``entity`` (``user_id`` on the platform) goes: the target,
        its room id and world id.

        Raises:
            SendError: the person cannot be reached.
        """
        raise NotImplementedError

    async def _reply_target(self, message: Memory, text: str) -> tuple[TargetT, Any] | None:
        """Where a reply (``text``) to the stored ``message`` goes, and the native message it
        quotes (or None). None when there is nowhere to send it: the message says nothing of
        where it came from, or the place cannot be found (logged, with ``text``'s first words)."""
        raise NotImplementedError

    async def send_to_room(self, room: Room, content: JSON) -> list[Memory]:
        """Messenger: post in a room of this platform the bot is in."""
        if room.source != self.source or not room.channel_id:
            raise SendError(f"that is not a {self.label} {self.where}")
        target = await self._room_target(room)
        return await self.deliver(target, content, room.id, room.world_id)

    async def send_to_entity(self, entity: Entity, content: JSON) -> list[Memory]:
        """Messenger: a direct message to a person."""
        user_id = (entity.metadata.get(self.source) or {}).get(self.user_key)
        if not user_id:
            raise SendError(f"I don't know {entity.names[0] if entity.names else 'them'} on {self.label}")
        target, room_id, world_id = await self._entity_target(entity, str(user_id))
        return await self.deliver(target, content, room_id, world_id, person=entity)

    def serves(self, message: Memory) -> bool:
        """Replier: every message of the platform is this connection's (Discord's shards differ)."""
        return True

    async def reply_to(self, message: Memory, content: JSON) -> list[Memory]:
        """Messenger: answer a stored message where it was said, quoting it (if it still exists).
        Nothing sent (logged) gives ``[]``, as for a live reply."""
        text = str(content.get("text") or "")
        if not self.sends_files:
            text = text.strip()
            if not text:
                return []  # nothing this platform can send
        found = await self._reply_target(message, text)
        if found is None:
            return []
        target, answering = found
        memories, _ = await self.answer(target, text, content, answering, message)
        return memories
