"""What the runtime and platforms announce: one frozen class per event, named by its type.

A handler takes the event it is registered for (``runtime.on(MessageSent, handler)``), so its
fields are typed. Any other name (an elizaOS-style plugin's ``"discord:voice:joined"``) is a
:class:`CustomEvent` with a name and a mapping of data. :func:`event_name` also accepts the docs'
lower-case colon form (``"message:received"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar

from bot.kernel.buttons import Press
from bot.kernel.slash_commands import SlashCommand
from bot.kernel.types import JSON, Entity, Memory, Room, World

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = [
    "ActionCompleted",
    "ActionFailed",
    "ActionStarted",
    "AgentReloaded",
    "ChannelCleared",
    "CustomEvent",
    "EntityJoined",
    "EntityLeft",
    "EntityUpdated",
    "EvaluatorCompleted",
    "EvaluatorFailed",
    "EvaluatorStarted",
    "Event",
    "event_name",
    "EventType",
    "InteractionReceived",
    "MessageDeleted",
    "MessageReceived",
    "MessageSent",
    "MessageUpdated",
    "ModelFailed",
    "ModelUsed",
    "PlatformConnected",
    "ReactionReceived",
    "RoomJoined",
    "RoomLeft",
    "RoomUpdated",
    "RunCompleted",
    "RunEnded",
    "RunFailed",
    "RunStarted",
    "RunTimeout",
    "ServiceError",
    "ServiceStarted",
    "ServiceStopped",
    "TYPED_EVENTS",
    "VoiceEnded",
    "VoiceMessageReceived",
    "VoiceMessageSent",
    "VoiceStarted",
    "WorldConnected",
    "WorldJoined",
    "WorldLeft",
]


class EventType(StrEnum):
    """Event names; values equal names, as upstream. Those with a class below are typed; the
    others are upstream names nothing in troupe emits, open to :class:`CustomEvent`."""

    WORLD_JOINED = "WORLD_JOINED"
    WORLD_CONNECTED = "WORLD_CONNECTED"
    WORLD_LEFT = "WORLD_LEFT"
    ENTITY_JOINED = "ENTITY_JOINED"
    ENTITY_LEFT = "ENTITY_LEFT"
    ENTITY_UPDATED = "ENTITY_UPDATED"
    ROOM_JOINED = "ROOM_JOINED"
    ROOM_LEFT = "ROOM_LEFT"
    ROOM_UPDATED = "ROOM_UPDATED"
    MESSAGE_RECEIVED = "MESSAGE_RECEIVED"
    MESSAGE_SENT = "MESSAGE_SENT"
    MESSAGE_UPDATED = "MESSAGE_UPDATED"
    MESSAGE_DELETED = "MESSAGE_DELETED"
    CHANNEL_CLEARED = "CHANNEL_CLEARED"
    VOICE_MESSAGE_RECEIVED = "VOICE_MESSAGE_RECEIVED"
    VOICE_MESSAGE_SENT = "VOICE_MESSAGE_SENT"
    VOICE_STARTED = "VOICE_STARTED"
    VOICE_ENDED = "VOICE_ENDED"
    REACTION_RECEIVED = "REACTION_RECEIVED"
    POST_GENERATED = "POST_GENERATED"
    INTERACTION_RECEIVED = "INTERACTION_RECEIVED"
    RUN_STARTED = "RUN_STARTED"
    RUN_ENDED = "RUN_ENDED"
    RUN_TIMEOUT = "RUN_TIMEOUT"
    ACTION_STARTED = "ACTION_STARTED"
    ACTION_COMPLETED = "ACTION_COMPLETED"
    EVALUATOR_STARTED = "EVALUATOR_STARTED"
    EVALUATOR_COMPLETED = "EVALUATOR_COMPLETED"
    RUN_COMPLETED = "RUN_COMPLETED"
    RUN_FAILED = "RUN_FAILED"
    ACTION_FAILED = "ACTION_FAILED"
    EVALUATOR_FAILED = "EVALUATOR_FAILED"
    MODEL_USED = "MODEL_USED"
    MODEL_FAILED = "MODEL_FAILED"
    SERVICE_STARTED = "SERVICE_STARTED"
    SERVICE_STOPPED = "SERVICE_STOPPED"
    SERVICE_ERROR = "SERVICE_ERROR"
    # troupe's own: a reload re-read the character files and left this agent running unchanged;
    # plugins that load from disk (knowledge) look again.
    AGENT_RELOADED = "AGENT_RELOADED"
    # troupe's own: the daemon connected the agent to a platform (first connect, or after a
    # reconnect it had to retry).
    PLATFORM_CONNECTED = "PLATFORM_CONNECTED"


def event_name(name: str | EventType) -> str:
    """The canonical name: ``"message:received"`` → ``"MESSAGE_RECEIVED"``; custom names pass through."""
    if isinstance(name, EventType):
        return name.value
    candidate = name.strip().upper().replace(":", "_")
    return candidate if candidate in EventType.__members__ else name


class Event:
    """What every event is: handlers are registered, and the event emitted, under its ``name``."""

    __slots__ = ()
    type: ClassVar[EventType]

    @property
    def name(self) -> str:
        return self.type.value


# -- messages ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _MessageEvent(Event):
    message: Memory
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageReceived(_MessageEvent):
    """A platform heard a message; listeners see it alongside the pipeline answering it."""

    type: ClassVar[EventType] = EventType.MESSAGE_RECEIVED


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageSent(_MessageEvent):
    """The agent sent a message (stored as ``message``)."""

    type: ClassVar[EventType] = EventType.MESSAGE_SENT


@dataclass(frozen=True, slots=True, kw_only=True)
class VoiceMessageReceived(_MessageEvent):
    """A platform heard a spoken message (a Telegram voice note or round video, words said in a
    Discord voice channel), after its MESSAGE_RECEIVED: ``message.content.text`` is the transcript
    (empty when it could not be transcribed)."""

    type: ClassVar[EventType] = EventType.VOICE_MESSAGE_RECEIVED


@dataclass(frozen=True, slots=True, kw_only=True)
class InteractionReceived(Event):
    """Someone used the platform's own controls with the agent. Either ``press``: a button
    pressed, a menu's options chosen or a text prompt answered under one of the agent's
    messages, after the MESSAGE_RECEIVED of the ``message`` it became (its value, label, the
    other options chosen, the text written). Or ``command``: a slash command used (its name,
    options, who and where); ``message`` is what the pipeline received for one that talks to
    the agent (Discord's ``/chat`` and ``/ask``, after its MESSAGE_RECEIVED), None for one
    answered without it (``/troupe``, ``/summarize`` …)."""

    type: ClassVar[EventType] = EventType.INTERACTION_RECEIVED
    source: str
    message: Memory | None = None
    press: Press | None = None
    command: SlashCommand | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VoiceMessageSent(_MessageEvent):
    """The agent spoke (a Telegram voice note, a reply said in a Discord voice channel):
    ``message`` is what it said, as stored; on Telegram the voice note is among its attachments."""

    type: ClassVar[EventType] = EventType.VOICE_MESSAGE_SENT


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageUpdated(_MessageEvent):
    """A message was edited: ``message`` carries its id and new content."""

    type: ClassVar[EventType] = EventType.MESSAGE_UPDATED


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageDeleted(Event):
    """A message was deleted; ids as the store has them (empty when the platform gave none)."""

    type: ClassVar[EventType] = EventType.MESSAGE_DELETED
    message_id: str
    room_id: str | None = None
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelCleared(Event):
    """Every message of a room was removed."""

    type: ClassVar[EventType] = EventType.CHANNEL_CLEARED
    room_id: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReactionReceived(_MessageEvent):
    """Someone reacted: the reaction as a message of its own."""

    type: ClassVar[EventType] = EventType.REACTION_RECEIVED


# -- worlds and the people in them ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _WorldEvent(Event):
    world: World
    rooms: Sequence[Room]
    entities: Sequence[Entity]
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldJoined(_WorldEvent):
    """The agent joined a server or group (its world, rooms and members, as written)."""

    type: ClassVar[EventType] = EventType.WORLD_JOINED


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldConnected(_WorldEvent):
    """The agent is connected to a server it was already in (at start, after a reconnect)."""

    type: ClassVar[EventType] = EventType.WORLD_CONNECTED


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldLeft(Event):
    """The agent left, or was removed from, a server or group (``status`` says how)."""

    type: ClassVar[EventType] = EventType.WORLD_LEFT
    world_id: str
    world: World | None
    rooms: Sequence[Room]
    status: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _PresenceEvent(Event):
    entity_id: str
    world_id: str | None = None
    room_id: str | None = None
    source: str
    metadata: JSON = field(default_factory=dict)
    """What the platform says of the person (its id and names for them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityJoined(_PresenceEvent):
    """Someone joined a server or group (written before the event)."""

    type: ClassVar[EventType] = EventType.ENTITY_JOINED


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityLeft(_PresenceEvent):
    """Someone left a server or group."""

    type: ClassVar[EventType] = EventType.ENTITY_LEFT


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityUpdated(_PresenceEvent):
    """Someone's names or platform details changed (seen on their first message or event of a
    run, or when the platform says so): ``names`` are every name kept for them, newest first, and
    ``metadata`` the entity's metadata as now stored."""

    type: ClassVar[EventType] = EventType.ENTITY_UPDATED
    names: Sequence[str] = ()


# -- rooms ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _RoomEvent(Event):
    room: Room
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RoomJoined(_RoomEvent):
    """The agent is in a room it was never in before: a channel, thread, group or DM it just
    heard from or was given (the room is stored before the event)."""

    type: ClassVar[EventType] = EventType.ROOM_JOINED


@dataclass(frozen=True, slots=True, kw_only=True)
class RoomUpdated(_RoomEvent):
    """A room was renamed on the platform: ``room`` as now stored, ``previous_name`` as it was."""

    type: ClassVar[EventType] = EventType.ROOM_UPDATED
    previous_name: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RoomLeft(_RoomEvent):
    """The agent is no longer in a room: ``status`` says how (``removed``, ``kicked``, ``left``,
    ``deleted``); the room stays stored, marked as left."""

    type: ClassVar[EventType] = EventType.ROOM_LEFT
    status: str


# -- voice ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _VoiceEvent(Event):
    room_id: str
    world_id: str
    channel_id: str
    """The platform's own id of the voice channel."""
    channel_name: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VoiceStarted(_VoiceEvent):
    """The agent is in a voice channel (joined, or moved there)."""

    type: ClassVar[EventType] = EventType.VOICE_STARTED


@dataclass(frozen=True, slots=True, kw_only=True)
class VoiceEnded(_VoiceEvent):
    """The agent left a voice channel (or was moved out of it)."""

    type: ClassVar[EventType] = EventType.VOICE_ENDED


# -- runs, actions, evaluators ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _RunEvent(Event):
    run_id: str
    message_id: str
    room_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(_RunEvent):
    """The pipeline took up a message (``start_time`` in ms since the epoch)."""

    type: ClassVar[EventType] = EventType.RUN_STARTED
    entity_id: str
    start_time: int


@dataclass(frozen=True, slots=True, kw_only=True)
class _RunEndEvent(_RunEvent):
    status: str
    """The outcome's status (``replied``, ``ignored``, ``error``: ``bot.kernel.messages.Status``)."""
    duration: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEnded(_RunEndEvent):
    """The pipeline is done with a message: ``status`` is its outcome's, ``duration`` in ms.
    Every run ends with this, then with one of :class:`RunCompleted` or :class:`RunFailed`."""

    type: ClassVar[EventType] = EventType.RUN_ENDED


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCompleted(_RunEndEvent):
    """The run ended as meant: answered, or left unanswered by choice (ignored, muted, stopped)."""

    type: ClassVar[EventType] = EventType.RUN_COMPLETED


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFailed(_RunEndEvent):
    """The run broke: a bug, no model answered, nothing could be sent, time ran out. ``error``
    says why in a few words."""

    type: ClassVar[EventType] = EventType.RUN_FAILED
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunTimeout(_RunEvent):
    """A message took longer than ``RUN_TIMEOUT_S`` and was given up."""

    type: ClassVar[EventType] = EventType.RUN_TIMEOUT


@dataclass(frozen=True, slots=True, kw_only=True)
class _ActionEvent(Event):
    action: str
    room_id: str
    message_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionStarted(_ActionEvent):
    type: ClassVar[EventType] = EventType.ACTION_STARTED


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionCompleted(_ActionEvent):
    """The action is done, whether it succeeded or not (``success``)."""

    type: ClassVar[EventType] = EventType.ACTION_COMPLETED
    success: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionFailed(_ActionEvent):
    """The action raised or returned no success; sent after its ACTION_COMPLETED. ``error`` is
    the exception's name or the action's own ``ActionResult.error``."""

    type: ClassVar[EventType] = EventType.ACTION_FAILED
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _EvaluatorEvent(Event):
    evaluator: str
    message_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluatorStarted(_EvaluatorEvent):
    type: ClassVar[EventType] = EventType.EVALUATOR_STARTED


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluatorCompleted(_EvaluatorEvent):
    """``error`` names the exception the evaluator raised; None when it did not."""

    type: ClassVar[EventType] = EventType.EVALUATOR_COMPLETED
    error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluatorFailed(_EvaluatorEvent):
    """The evaluator raised (``error`` names the exception); sent after its EVALUATOR_COMPLETED."""

    type: ClassVar[EventType] = EventType.EVALUATOR_FAILED
    error: str


# -- models -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _ModelEvent(Event):
    model_type: str
    """``ModelType``'s value (``TEXT_LARGE``)."""
    provider: str
    duration_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelUsed(_ModelEvent):
    """A model call answered."""

    type: ClassVar[EventType] = EventType.MODEL_USED


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelFailed(_ModelEvent):
    """A model call failed: ``error`` names the exception."""

    type: ClassVar[EventType] = EventType.MODEL_FAILED
    error: str


# -- services ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _ServiceEvent(Event):
    service: str
    """The name it is offered under (``runtime.get_service(service)``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceStarted(_ServiceEvent):
    """A service was registered (``runtime.register_service``): a platform connected, a plugin set up."""

    type: ClassVar[EventType] = EventType.SERVICE_STARTED


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceStopped(_ServiceEvent):
    """A service was withdrawn (``runtime.unregister_service``): a platform disconnected."""

    type: ClassVar[EventType] = EventType.SERVICE_STOPPED


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceError(_ServiceEvent):
    """A platform's link failed: it could not connect, lost its connection (and retries), or
    had its token refused. ``service`` is the platform's name; ``error`` says what went wrong,
    without secrets; ``retrying`` whether troupe keeps trying by itself (else the configuration
    must change)."""

    type: ClassVar[EventType] = EventType.SERVICE_ERROR
    error: str
    retrying: bool


# -- troupe's own -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentReloaded(Event):
    """A reload left this agent running unchanged; plugins that load from disk look again."""

    type: ClassVar[EventType] = EventType.AGENT_RELOADED
    runtime: AgentRuntime


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformConnected(Event):
    """The agent is connected to ``source`` (``discord``, ``telegram``)."""

    type: ClassVar[EventType] = EventType.PLATFORM_CONNECTED
    source: str


#: Every typed event class; their names are not open to :class:`CustomEvent`.
TYPED_EVENTS: tuple[type[Event], ...] = (
    ActionCompleted,
    ActionFailed,
    ActionStarted,
    AgentReloaded,
    ChannelCleared,
    EntityJoined,
    EntityLeft,
    EntityUpdated,
    EvaluatorCompleted,
    EvaluatorFailed,
    EvaluatorStarted,
    InteractionReceived,
    MessageDeleted,
    MessageReceived,
    MessageSent,
    MessageUpdated,
    ModelFailed,
    ModelUsed,
    PlatformConnected,
    ReactionReceived,
    RoomJoined,
    RoomLeft,
    RoomUpdated,
    RunCompleted,
    RunEnded,
    RunFailed,
    RunStarted,
    RunTimeout,
    ServiceError,
    ServiceStarted,
    ServiceStopped,
    VoiceEnded,
    VoiceMessageReceived,
    VoiceMessageSent,
    VoiceStarted,
    WorldConnected,
    WorldJoined,
    WorldLeft,
)

_TYPED_NAMES = frozenset(cls.type.value for cls in TYPED_EVENTS)


@dataclass(frozen=True, slots=True)
class CustomEvent(Event):
    """An event no class above types: a plugin's own (``"discord:voice:joined"``), or an
    upstream name troupe does not emit. ``name`` is canonical (:func:`event_name`).

    Raises:
        ValueError: ``name`` is a typed event's: emit that class instead.
    """

    # A field where typed events derive it from their class; field() so that the inherited
    # property is not taken for its default.
    name: str = field()
    data: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        canonical = event_name(self.name)
        if canonical in _TYPED_NAMES:
            raise ValueError(f"{canonical} is a typed event: emit its class, not a CustomEvent")
        object.__setattr__(self, "name", canonical)
