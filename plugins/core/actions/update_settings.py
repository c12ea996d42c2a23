"""UPDATE_SETTINGS: a server's owner or admins configure it by telling the agent the values.

A server's settings live in ``world.metadata.settings``, keyed by setting key; each a
:class:`~bot.kernel.record_metadata.Setting` (name, description, value, required, secret, the keys it
depends on). In a DM the agent helps with the servers the sender owns or administers (the
onboarding conversation the SETTINGS provider starts); in a server room, with that server.

Only an OWNER or ADMIN may change settings; anyone else is told so and nothing changes. Only
existing keys are set (keys starting with ``_`` are internal and never set), a setting whose
``dependsOn`` keys have no value yet is refused, and the confirmation never repeats a secret
value. The answer is built from what happened, not by another model call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from bot.sdk import Action, ActionContext, ActionResult, ChannelType, Memory, Setting, State, World

from ..providers.settings import MASK, character_secrets, is_secret_setting
from ._common import (
    PRIVILEGED,
    as_list,
    ask_small_model,
    notify,
    role_in,
    room_and_world,
    sender_text,
)

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["action", "apply_updates", "configurable_worlds"]

NAME = "UPDATE_SETTINGS"
_DM_TYPES = frozenset({ChannelType.DM, ChannelType.VOICE_DM})
_MAX_VALUE_CHARS = 2000


def _settings(world: World) -> dict[str, Setting]:
    return dict(world.metadata.settings or {})


async def configurable_worlds(runtime: AgentRuntime, message: Memory, state: State | None = None) -> list[World]:
    """The worlds whose settings the sender may change from this room."""
    room, world = await room_and_world(runtime, message, state)
    if room is not None and room.type in _DM_TYPES:
        candidates = await runtime.store.get_worlds_with_settings()
    else:
        candidates = [world] if world is not None else []
    return [w for w in candidates if _settings(w) and role_in(w, message.entity_id) in PRIVILEGED]


def apply_updates(
    settings: dict[str, Setting], updates: list[tuple[str, str]], secrets: list[str]
) -> tuple[list[str], list[str]]:
    """Set each ``(key, value)`` in ``settings`` in order.

    Returns the keys set and one line per update saying what happened (secret values masked).
    A dependency set earlier in the same request counts as set.
    """
    updated: list[str] = []
    lines: list[str] = []
    for key, value in updates:
        if key.startswith("_") or key not in settings:
            lines.append(f"There is no setting called {key}.")
            continue
        setting = settings[key]
        name = setting.name or key
        missing = [d for d in setting.dependencies if d not in settings or not settings[d].is_set]
        if missing:
            lines.append(f"{name} needs {', '.join(str(m) for m in missing)} set first.")
            continue
        if not value.strip():
            lines.append(f"I need a value for {name}.")
            continue
        if len(value) > _MAX_VALUE_CHARS:
            lines.append(f"The value for {name} is too long (at most {_MAX_VALUE_CHARS} characters).")
            continue
        # A setting given a value is stored as an object from now on, whatever it was.
        settings[key] = setting = replace(setting, value=value.strip(), bare=False)
        shown = MASK if is_secret_setting(key, setting, secrets) else setting.value
        updated.append(key)
        lines.append(f"{name} is now {shown}.")
    return updated, lines


def _prompt_lines(settings: Mapping[str, Setting], secrets: list[str]) -> str:
    lines = []
    for key, setting in settings.items():
        if key.startswith("_"):
            continue
        shown = (MASK if is_secret_setting(key, setting, secrets) else setting.value) if setting.is_set else "not set"
        need = "required" if setting.required else "optional"
        description = setting.usage_description or setting.description or ""
        lines.append(f"- {key} ({setting.name or key}; {need}; now: {shown}): {description}".rstrip(": "))
    return "\n".join(lines)


def _still_required(settings: Mapping[str, Setting]) -> list[str]:
    return [
        setting.name or key
        for key, setting in settings.items()
        if not key.startswith("_") and setting.required and not setting.is_set
    ]


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    return bool(await configurable_worlds(runtime, message, state))


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message = context.runtime, context.message
    worlds = await configurable_worlds(runtime, message)
    if not worlds:
        await notify(context.reply, "Only a server's owner or an admin can change its settings.", NAME, message)
        return ActionResult(success=False, error="the requester may not configure any server from here")
    # The server still waiting for required settings first: that is the one being set up.
    world = next((w for w in worlds if _still_required(_settings(w))), worlds[0])
    settings = _settings(world)
    secrets = character_secrets(runtime)

    parsed = await ask_small_model(
        runtime,
        "settingsExtractionTemplate",
        {
            "agentName": runtime.character.name,
            "serverName": world.name or "the server",
            "settings": _prompt_lines(settings, secrets),
            "request": sender_text(message),
        },
    )
    updates = [
        (str(u.get("key") or "").strip(), str(u.get("value") or ""))
        for u in as_list((parsed or {}).get("updates"), "update")
    ]
    updates = [(k, v) for k, v in updates if k]
    if not updates:
        await notify(
            context.reply,
            "I couldn't tell which setting to change to what. Tell me the setting and its value.",
            NAME,
            message,
        )
        return ActionResult(success=False, error="no setting found in the request")

    updated, lines = apply_updates(settings, updates, secrets)
    if updated:
        world.metadata = replace(world.metadata, settings=settings)
        await runtime.store.update_world(world)
    remaining = _still_required(settings)
    if updated:
        lines.append(
            f"Still needed: {', '.join(remaining)}."
            if remaining
            else f"Every required setting of {world.name or 'the server'} has a value now."
        )
    await notify(context.reply, "\n".join(lines), NAME, message)
    return ActionResult(
        success=bool(updated),
        text="\n".join(lines),
        values={"settingsUpdated": len(updated), "onboardingComplete": not remaining},
        data={"actionName": NAME, "worldId": world.id, "updated": updated},
        error=None if updated else "no setting was changed",
    )


action = Action(
    name=NAME,
    handler=_handler,
    validate=_validate,
    description="Save server settings the owner or an admin gives you (the setting and its value).",
    similes=("UPDATE_SETTING", "SAVE_SETTING", "SET_CONFIGURATION", "CONFIGURE"),
)
