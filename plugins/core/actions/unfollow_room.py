"""UNFOLLOW_ROOM: stop answering in this room unless addressed."""

from bot.sdk import RoomState

from ._room_state import room_state_action

__all__ = ["action"]

action = room_state_action(
    "UNFOLLOW_ROOM",
    new_state=None,
    offered_when={RoomState.FOLLOWED},
    done="Stopped following room",
    description="Stop following this room: only answer when addressed again. Use when asked to stop following "
    "or to only speak when spoken to.",
    similes=("UNFOLLOW_CHAT", "UNFOLLOW_CONVERSATION", "UNFOLLOW_THREAD", "UNFOLLOW_CHANNEL"),
)
