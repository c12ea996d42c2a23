"""Event names the runtime and platforms emit. Values equal names, as upstream.

Custom events are any other string (``"discord:voice:joined"``); :func:`event_name` also accepts
the docs' lower-case colon form (``"message:received"``).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["EventType", "event_name"]


class EventType(StrEnum):
    WORLD_JOINED = "WORLD_JOINED"
    WORLD_CONNECTED = "WORLD_CONNECTED"
    WORLD_LEFT = "WORLD_LEFT"
    ENTITY_JOINED = "ENTITY_JOINED"
    ENTITY_LEFT = "ENTITY_LEFT"
    ENTITY_UPDATED = "ENTITY_UPDATED"
    ROOM_JOINED = "ROOM_JOINED"
    ROOM_LEFT = "ROOM_LEFT"
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
    MODEL_USED = "MODEL_USED"
    MODEL_FAILED = "MODEL_FAILED"
    # troupe's own: a reload re-read the character files and left this agent running unchanged;
    # plugins that load from disk (knowledge) look again. Payload: ``{"runtime"}``.
    AGENT_RELOADED = "AGENT_RELOADED"
    # troupe's own: the daemon connected the agent to a platform (first connect, or after a
    # reconnect it had to retry). Payload: ``{"runtime", "source"}``.
    PLATFORM_CONNECTED = "PLATFORM_CONNECTED"


def event_name(name: str | EventType) -> str:
    """The canonical name: ``"message:received"`` → ``"MESSAGE_RECEIVED"``; custom names pass through."""
    if isinstance(name, EventType):
        return name.value
    candidate = name.strip().upper().replace(":", "_")
    return candidate if candidate in EventType.__members__ else name
