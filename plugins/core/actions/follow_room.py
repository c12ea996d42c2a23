"""FOLLOW_ROOM: take part in this room without being addressed."""

from bot.sdk import RoomState

from ._room_state import room_state_action

__all__ = ["action"]

action = room_state_action(
    "FOLLOW_ROOM",
    new_state=RoomState.FOLLOWED,
    offered_when={None},
    done="Now following room",
    description="Start following this room: answer messages here without being addressed. Use when asked to "
    "follow, join in, keep an eye on or participate in the conversation.",
    similes=("FOLLOW_CHAT", "FOLLOW_CHANNEL", "FOLLOW_CONVERSATION", "FOLLOW_THREAD"),
    keywords=("follow", "participate", "engage", "listen", "take interest", "join", "keep an eye", "chime in"),
)
