"""UNMUTE_ROOM: speak in this room again."""

from bot.sdk import RoomState

from ._room_state import room_state_action

__all__ = ["action"]

action = room_state_action(
    "UNMUTE_ROOM",
    new_state=None,
    offered_when={RoomState.MUTED},
    done="Room unmuted",
    description="Unmute this room: take part again. Use when asked to unmute, speak again or come back.",
    similes=("UNMUTE_CHAT", "UNMUTE_CONVERSATION", "UNMUTE_THREAD", "UNMUTE_CHANNEL"),
)
