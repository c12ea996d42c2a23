"""MUTE_ROOM: stay silent in this room until addressed and asked to unmute."""

from bot.sdk import RoomState

from ._room_state import room_state_action

__all__ = ["action"]

action = room_state_action(
    "MUTE_ROOM",
    new_state=RoomState.MUTED,
    offered_when={None, RoomState.FOLLOWED, RoomState.STOPPED},
    done="Room muted",
    description="Mute this room: say nothing here unless addressed directly. Use when asked to be quiet, "
    "shut up, stop talking or leave the conversation alone.",
    similes=(
        "MUTE_CHAT",
        "MUTE_CONVERSATION",
        "MUTE_THREAD",
        "MUTE_CHANNEL",
        "SHUT_UP",
        "BE_QUIET",
        "STOP_TALKING",
        "SILENCE",
    ),
    # Only when asked: a small model otherwise mutes a room (a DM even) on a whim, and a muted
    # room stays silent until someone unmutes it.
    keywords=(
        "mute",
        "quiet",
        "shut up",
        "silen",
        "hush",
        "shush",
        "shh",
        "pipe down",
        "stop talking",
        "stop responding",
        "stop replying",
        "stop answering",
        "go away",
        "leave us",
        "leave me",
        "leave the",
        "alone",
    ),
)
