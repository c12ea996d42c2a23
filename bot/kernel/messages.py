"""The message contract between a platform and the runtime.

A platform turns each message it hears into an :class:`IncomingMessage`: the message (a
:class:`~bot.kernel.types.Memory`) plus a :class:`ReplyChannel`, the platform's side of the
conversation — in the spirit of discord.py's ``on_message(message)`` with
``message.channel.send()`` and ``channel.typing()``. It hands the event to
:meth:`AgentRuntime.receive <bot.runtime.agent.AgentRuntime.receive>` and gets back an
:class:`Outcome` whose status says how the handling ended. Nothing the platform passed in is
changed: the handler works on its own copy of the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from bot.kernel.outgoing import Reply
from bot.kernel.slash_commands import SlashCommand
from bot.kernel.types import Memory

__all__ = [
    "IncomingMessage",
    "MessageHandler",
    "NativeRef",
    "Outcome",
    "QuietChannel",
    "Reacted",
    "ReplyChannel",
    "Status",
]


class Status(StrEnum):
    """How the handling of one message ended."""

    REPLIED = "replied"  # a reply went out
    ACTED = "acted"  # actions ran, no reply was asked for
    SEND_FAILED = "send_failed"  # there was a reply to send and nothing went out
    IGNORED = "ignored"  # the gate or the model chose silence
    STOPPED = "stopped"  # the small model said STOP
    MUTED = "muted"
    LOOP_GUARD = "loop_guard"  # too many bot turns in a row
    OWN = "own"  # the agent's own message
    SUPERSEDED = "superseded"  # a newer message in the room took over
    UNPARSED = "unparsed"  # the model answered, but never in a form that parses
    MODEL_UNREACHABLE = "model_unreachable"  # no model answered (outage, timeout, no key)
    TIMEOUT = "timeout"  # the whole message took longer than RUN_TIMEOUT_S
    ERROR = "error"  # a bug: logged with its traceback
    CLOSING = "closing"  # refused: the agent is draining
    DUPLICATE = "duplicate"  # delivered again: already answered, or being answered
    SENT_BEFORE_CRASH = "sent_before_crash"  # delivered again after a crash that came while its reply went out
    ABANDONED = "abandoned"  # troupe died while answering it, twice: given up (see Claim.ABANDONED)
    NOT_TAKEN_UP = "not_taken_up"  # left by a crash, but not addressed to the agent: not worth answering late
    UNHANDLED = "unhandled"  # no plugin of the agent handles messages


class Reacted(StrEnum):
    """How putting an emoji reaction on the message being answered ended."""

    DONE = "done"  # the reaction is on the message
    REFUSED = "refused"  # the platform would not take it (no permission, message gone, emoji not allowed): logged
    UNSUPPORTED = "unsupported"  # this channel cannot react at all
    NOT_SENT = "not_sent"  # nothing went out: the answer is not this runtime's to give (already given, or elsewhere)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one message ended; logged at debug, counted in metrics, returned to the platform."""

    status: Status
    reason: str = ""
    actions: tuple[str, ...] = ()


class ReplyChannel(Protocol):
    """Where the answer to one incoming message goes, and what else only the platform can do
    for it. Every method is optional in spirit: :class:`QuietChannel` has the defaults."""

    @property
    def streams(self) -> bool:
        """Whether :meth:`stream` wants the reply while the model is still writing it (asking
        the model to stream costs a little; only voice needs it)."""
        ...

    async def send(self, reply: Reply) -> list[Memory]:
        """Send ``reply`` (its text, files, buttons …) in answer; the messages that went out,
        as recorded. Never raises: what could not be sent is
        logged and missing from the result (a file too big for the platform is named in the text)."""
        ...

    async def typing(self) -> None:
        """Show that an answer is coming (until the next :meth:`send`, or a platform's cap).
        Called once the agent has decided to answer; never raises."""
        ...

    async def fetch(self, attachment: Mapping[str, object]) -> bytes:
        """The bytes of one of the message's attachments, downloaded the platform's own way.

        Raises:
            LookupError: the platform has no such attachment, or no way to download it.
            TooLargeToFetch: the platform does not let bots download one this large.
        """
        ...

    def stream(self, text_so_far: str) -> None:
        """The reply written so far, once the plan says REPLY; the whole reply still arrives
        through :meth:`send`. The text may start again, shorter or empty, when what was written
        turned out not to be the reply (a tool turn's text before its calls): the new text
        takes the old one's place (what was already spoken stays said)."""
        ...

    async def react(self, emoji: str) -> Reacted:
        """Put ``emoji`` (a unicode emoji, or a platform's own such as Discord's ``<:name:id>``)
        on the message being answered, as a person would. Never raises: a refusal is logged
        and said in the result."""
        ...


class QuietChannel:
    """A reply channel's defaults: no typing, no attachments, no streaming, and sends go nowhere.
    Platforms subclass it and override what they can do."""

    streams: bool = False

    async def send(self, reply: Reply) -> list[Memory]:
        return []

    async def typing(self) -> None:
        return None

    async def fetch(self, attachment: Mapping[str, object]) -> bytes:
        raise LookupError("this platform offers no attachments")

    def stream(self, text_so_far: str) -> None:
        return None

    async def react(self, emoji: str) -> Reacted:
        return Reacted.UNSUPPORTED


@dataclass(frozen=True, slots=True)
class NativeRef:
    """A message as its platform knows it: the same for every character that hears it, so the
    characters of one daemon can tell they are in the same room, hearing the same message."""

    source: str
    room: str
    """The platform's room: a channel, a chat, a chat's forum topic."""
    message: str
    """The platform's id of the message (unique in its room)."""
    author: str
    """The platform's id of whoever wrote it."""
    listener: str
    """The platform's id of the bot that heard it: the character's own account."""


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """One message a platform heard, as the runtime receives it."""

    message: Memory
    channel: ReplyChannel
    recovered: bool = False
    """Left unanswered by a crashed process and delivered again after a restart: answered only
    if it addressed the agent."""
    native: NativeRef | None = None
    """Where the platform heard it; None where the character is alone (a terminal, a voice
    session, a message taken up after a crash)."""
    command: SlashCommand | None = None
    """The slash command it came by (Discord's ``/chat``), announced with it (INTERACTION_RECEIVED)."""

    @property
    def source(self) -> str:
        """The platform it came from (``content.source``), or ``"unknown"``."""
        return self.message.content.source or "unknown"


class MessageHandler(Protocol):
    """What answers messages for a runtime (the core plugin's pipeline)."""

    async def handle(self, incoming: IncomingMessage) -> Outcome:
        """Handle one message to its end; never raises."""
        ...
