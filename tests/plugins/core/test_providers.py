"""The core providers against a real store: text, values, flags, and what they must never show."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import plugins.core as core
from bot.config.character import load_character
from bot.kernel.content import Attachment, Content, MemoryMetadata
from bot.kernel.models import ModelType
from bot.kernel.record_metadata import EntityMetadata, RelationshipMetadata, TaskMetadata, WorldMetadata
from bot.kernel.types import ChannelType, Entity, Memory, Room, Task, World
from bot.runtime.agent import AgentRuntime
from bot.runtime.choices import AWAITING_CHOICE
from bot.runtime.components import MESSAGE_VECTORS, Action, ActionResult, ProviderResult, State
from bot.store import AgentStore, Database
from plugins.core._embedding import MessageEmbeddings
from plugins.core.providers import anxiety
from plugins.core.providers._common import format_messages
from tests.choices import waiting_choice

NOW = 1_700_000_000_000  # Tuesday, November 14, 2023 10:13:20 PM UTC
MINUTE = 60_000

ALICE = "00000000-0000-0000-0000-0000000000a1"
BOB = "00000000-0000-0000-0000-0000000000a2"
NAMELESS = "00000000-0000-0000-0000-0000000000a3"
CAROL = "00000000-0000-0000-0000-0000000000a4"

ROOM = "00000000-0000-0000-0000-00000000c001"
DM_ROOM = "00000000-0000-0000-0000-00000000c002"
VOICE_ROOM = "00000000-0000-0000-0000-00000000c003"
FEED_ROOM = "00000000-0000-0000-0000-00000000c004"
OTHER_ROOM = "00000000-0000-0000-0000-00000000c005"
UNKNOWN_ROOM = "00000000-0000-0000-0000-00000000cfff"
WORLD_ID = "00000000-0000-0000-0000-00000000d001"

CHARACTER_SECRET = "sk-test-very-secret-9f8e7d"
SETTINGS_SECRET = "discord-token-abc123xyz"
WORLD_SECRET = "world-webhook-secret-5544"

DYNAMIC = {"ATTACHMENTS", "CAPABILITIES", "ENTITIES", "FACTS", "RELATIONSHIPS", "WORLD"}
DEFAULT = {
    "ACTIONS",
    "ACTION_STATE",
    "ANXIETY",
    "CHARACTER",
    "CHOICE",
    "PROVIDERS",
    "RECENT_MESSAGES",
    "ROLES",
    "SETTINGS",
    "TIME",
}

ADA = {
    "name": "Ada",
    "bio": ["Ada designs analytical engines.", "Ada writes notes on Bernoulli numbers."],
    "topics": ["mathematics", "engines", "poetry"],
    "adjectives": ["curious"],
    "style": {"all": ["Be precise."], "chat": ["Keep replies short."], "post": ["Write like a pamphlet."]},
    "messageExamples": [
        [
            {"name": "{{name1}}", "content": {"text": "What is an engine?"}},
            {"name": "Ada", "content": {"text": "A machine that computes."}},
        ]
    ],
    "postExamples": ["Engines will weave algebra as looms weave flowers."],
    "system": "You are Ada.",
}


# -- fixtures and helpers -----------------------------------------------------------------------


@pytest.fixture
async def provider_runtime(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[AgentRuntime]]]:
    """Build a runtime with every core provider registered and its own rows stored.

    ``start()`` is not called: it would load the whole core plugin (the pipeline too).
    """
    async with Database(tmp_path / "t.db") as db:

        async def make(*, seed: int = 1, **character: Any) -> AgentRuntime:
            path = tmp_path / f"ada-{uuid.uuid4().hex}.json"
            path.write_text(json.dumps({**ADA, **character}))
            char = load_character(path, environ={}).raise_for_problems()
            rt = AgentRuntime(char, db.for_agent(char.agent_id), environ={}, rng=random.Random(seed), clock=lambda: NOW)
            await rt._ensure_self()
            for provider in core._components("providers", "provider"):
                rt.register_provider(provider)  # type: ignore[arg-type]
            rt.register_service(MESSAGE_VECTORS, MessageEmbeddings(rt))  # what FACTS searches with
            return rt

        yield make


async def add_room(
    rt: AgentRuntime,
    room_id: str = ROOM,
    type: ChannelType = ChannelType.GROUP,
    *,
    world_id: str | None = WORLD_ID,
    name: str = "general",
) -> None:
    await rt.store.create_rooms([Room(room_id, source="discord", type=type, name=name, world_id=world_id)])


async def add_world(rt: AgentRuntime, metadata: dict[str, Any] | None = None, name: str = "Analytical Society") -> None:
    await rt.store.create_world(
        World(WORLD_ID, rt.agent_id, name=name, server_id="srv", metadata=WorldMetadata.from_json(metadata))
    )


async def add_people(rt: AgentRuntime, room_id: str = ROOM, people: dict[str, list[str]] | None = None) -> None:
    people = {ALICE: ["Alice"], BOB: ["Bob", "Bobby"]} if people is None else people
    await rt.store.create_entities([Entity(i, rt.agent_id, names=n) for i, n in people.items()])
    await rt.store.add_participants([*people, rt.agent_id], room_id)


async def post(
    rt: AgentRuntime, text: str | None, *, entity: str = ALICE, room: str = ROOM, at: int = NOW, **fields: Any
) -> Memory:
    """A message stored in ``room``; ``fields`` are more of its :class:`Content`."""
    content = Content(text=text, **fields)
    memory = Memory(id=str(uuid.uuid4()), entity_id=entity, room_id=room, content=content, created_at=at)
    await rt.store.create_memory(memory, "messages", unique=False)
    return memory


def message(text: str = "hello", *, entity: str = ALICE, room: str = ROOM, **fields: Any) -> Memory:
    """The message being answered; ``fields`` are more of its :class:`Content`."""
    content = Content(text=text, **fields)
    return Memory(id=str(uuid.uuid4()), entity_id=entity, room_id=room, content=content, created_at=NOW)


async def run(rt: AgentRuntime, name: str, msg: Memory, state: State | None = None) -> ProviderResult:
    return await rt.providers[name].get(rt, msg, state or State())


# -- registration and composition -----------------------------------------------------------


async def test_every_provider_is_discovered_with_its_flags_and_position(provider_runtime) -> None:
    rt = await provider_runtime()
    providers = rt.providers
    assert set(providers) == DEFAULT | DYNAMIC
    assert {n for n, p in providers.items() if p.dynamic} == DYNAMIC
    assert not any(p.private for p in providers.values())
    assert providers["ACTIONS"].position == -1
    assert providers["RECENT_MESSAGES"].position == 100
    assert providers["ACTION_STATE"].position == 150
    assert all(p.position == 0 for n, p in providers.items() if n not in {"ACTIONS", "RECENT_MESSAGES", "ACTION_STATE"})
    assert all(p.description for p in providers.values())


async def test_compose_state_runs_the_default_providers_in_position_order(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_world(rt)
    await add_room(rt)
    await add_people(rt)
    rt.register_action(_action("WAVE"))
    msg = await post(rt, "Hi Ada, how are the engines?")
    state = await rt.compose_state(msg)
    assert set(state.providers) == DEFAULT
    assert state.values["agentName"] == "Ada"
    assert state.text.startswith("# Available Actions\nWAVE: does wave")  # ACTIONS, position -1
    assert state.values["actionNames"] == "Possible response actions: WAVE"
    assert state.text.index("# About Ada") < state.text.index("# Received Message")
    assert state.order[0] == "ACTIONS" and state.order[-1] == "RECENT_MESSAGES"
    assert "Alice: Hi Ada, how are the engines?" in state.values["recentMessages"]


async def test_a_seeded_runtime_composes_byte_identical_state(provider_runtime) -> None:
    texts = []
    for _ in range(2):
        rt = await provider_runtime(seed=11)
        for name in ("WAVE", "NOD", "SHRUG"):
            rt.register_action(_action(name))
        await add_world(rt)
        await add_room(rt)
        await add_people(rt)
        msg = message("Hi Ada")
        texts.append((await rt.compose_state(msg, skip_cache=True)).text)
    assert texts[0] == texts[1]


async def test_missing_rows_give_explanations_not_errors(provider_runtime) -> None:
    rt = await provider_runtime()
    msg = message("anyone here?", room=UNKNOWN_ROOM)
    for name in sorted(rt.providers):
        result = await run(rt, name, msg)
        assert isinstance(result, ProviderResult), name
    assert "room is not known" in (await run(rt, "WORLD", msg)).text
    assert "room is not known" in (await run(rt, "ROLES", msg)).text
    assert "room is not known" in (await run(rt, "SETTINGS", msg)).text
    assert (await run(rt, "FACTS", msg)).text == "# What Ada Knows\nNo facts available."
    assert (await run(rt, "RELATIONSHIPS", msg)).text == "# Unknown User's Connections\nNo relationships found."
    assert "No one is known" in (await run(rt, "ENTITIES", msg)).text


# -- CHARACTER ------------------------------------------------------------------------------


async def test_character_uses_chat_format_in_chat_rooms(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    result = await run(rt, "CHARACTER", message())
    assert result.values["agentName"] == "Ada"
    assert result.text.startswith("# About Ada\n")
    assert "Ada is curious" in result.text
    assert "# Message Directions for Ada\nBe precise.\nKeep replies short." in result.text
    assert "# Example Conversations for Ada" in result.text
    assert "Ada: A machine that computes." in result.values["examples"]
    assert result.values["postDirections"] == ""
    assert result.text.endswith("Ada: A machine that computes.\n")
    assert "You are Ada." not in result.text  # the system message already says it
    assert result.data["isPost"] is False


async def test_character_uses_post_format_in_feed_rooms(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt, FEED_ROOM, ChannelType.FEED)
    result = await run(rt, "CHARACTER", message(room=FEED_ROOM))
    assert "# Post Directions for Ada\nBe precise.\nWrite like a pamphlet." in result.text
    assert "# Example Posts for Ada\nEngines will weave algebra" in result.text
    assert "Example Conversations" not in result.text
    assert result.data["isPost"] is True


@pytest.mark.parametrize("room_type", [ChannelType.THREAD, ChannelType.FORUM])
async def test_character_keeps_the_chat_format_in_threads_and_forum_posts(provider_runtime, room_type) -> None:
    # A thread is a conversation: the character keeps its chat examples and chat style there.
    rt = await provider_runtime()
    await add_room(rt, OTHER_ROOM, room_type)
    result = await run(rt, "CHARACTER", message(room=OTHER_ROOM))
    assert "# Message Directions for Ada\nBe precise.\nKeep replies short." in result.text
    assert "# Example Conversations for Ada" in result.text
    assert "Post Directions" not in result.text and "Example Posts" not in result.text
    assert result.data["isPost"] is False
    recent = await run(rt, "RECENT_MESSAGES", message(room=OTHER_ROOM))
    assert recent.values["recentPosts"] == ""


async def test_character_is_identical_for_the_same_seed(provider_runtime) -> None:
    first, second = await provider_runtime(seed=7), await provider_runtime(seed=7)
    for rt in (first, second):
        await add_room(rt)
    a = await run(first, "CHARACTER", message())
    b = await run(second, "CHARACTER", message())
    assert a.text == b.text


# -- RECENT_MESSAGES ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "clock"),
    [(0, "00:00"), (86_399_999, "23:59"), (86_400_000 * 20_000 + 61_000, "00:01"), (-1, "23:59")],
)
def test_message_lines_show_the_utc_clock_time_even_across_midnight(at: int, clock: str) -> None:
    line = format_messages([Memory(ALICE, "room", Content(text="hi"), created_at=at)], {ALICE: "Alice"}, at)
    assert line == f"{clock} (just now) Alice: hi"


async def test_recent_messages_are_chronological_with_names_times_and_actions(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_people(rt, people={ALICE: ["Alice"], NAMELESS: []})
    await post(rt, "First!", at=NOW - 90 * MINUTE)
    await post(rt, "Welcome, Alice.", entity=rt.agent_id, at=NOW - 2 * MINUTE, actions=("REPLY",))
    await post(rt, None, entity=rt.agent_id, at=NOW - MINUTE, actions=("IGNORE",), thought="not for me")
    await post(rt, "who am I?", entity=NAMELESS, at=NOW - 30_000)
    current = await post(rt, "Ada, what is 2+2?", at=NOW)

    result = await run(rt, "RECENT_MESSAGES", current)
    history = result.values["recentMessages"]
    assert history.splitlines() == [
        "# Conversation Messages",
        "20:43 (1 hour ago) Alice: First!",
        "22:11 (2 minutes ago) Ada: Welcome, Alice.",
        "(Ada's actions: REPLY)",
        "22:12 (just now) Unknown User: who am I?",
        "22:13 (just now) Alice: Ada, what is 2+2?",
    ]
    assert "IGNORE" not in result.text  # the stored decision not to speak is left out
    assert result.values["recentMessage"] == "Alice: Ada, what is 2+2?"
    assert "# Received Message\nAlice: Ada, what is 2+2?" in result.text
    assert result.text.count("Ada, what is 2+2?") == 1  # received, not also the conversation's last line
    assert "replying to the message above from **Alice**" in result.text
    assert [m.content.text for m in result.data["recentMessages"]] == [
        "First!",
        "Welcome, Alice.",
        "who am I?",
        "Ada, what is 2+2?",
    ]


async def test_recent_messages_look_up_names_in_one_batch(provider_runtime, monkeypatch) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_people(rt)
    for i in range(6):
        await post(rt, f"message {i}", entity=(ALICE, BOB)[i % 2], at=NOW - (6 - i) * MINUTE)
    calls: list[list[str]] = []
    original = AgentStore.get_entities_by_ids

    async def counting(self: AgentStore, ids: Any) -> list[Entity]:
        calls.append(list(ids))
        return await original(self, ids)

    monkeypatch.setattr(AgentStore, "get_entities_by_ids", counting)
    result = await run(rt, "RECENT_MESSAGES", message("again"))
    assert len(calls) == 1
    assert sorted(calls[0]) == sorted([ALICE, BOB])
    assert "Bob: message 1" in result.text


@pytest.mark.parametrize("configure", ["runtime_setting", "character_setting"])
async def test_recent_messages_show_the_configured_conversation_length(provider_runtime, configure: str) -> None:
    rt = await (
        provider_runtime(settings={"conversationLength": 10})
        if configure == "character_setting"
        else provider_runtime()
    )
    if configure == "runtime_setting":
        rt.set_setting("CONVERSATION_LENGTH", "10")
    await add_room(rt)
    await add_people(rt)
    for i in range(15):
        await post(rt, f"line {i:02d}", at=NOW - (15 - i) * MINUTE)
    result = await run(rt, "RECENT_MESSAGES", message("x"))
    texts = [m.content.text for m in result.data["recentMessages"]]
    assert texts == [f"line {i:02d}" for i in range(5, 15)]


async def test_recent_messages_default_to_32(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_people(rt)
    await rt.store.create_memories(
        [
            Memory(entity_id=ALICE, room_id=ROOM, content=Content(text=f"m{i}"), created_at=NOW - (40 - i) * MINUTE)
            for i in range(40)
        ],
        "messages",
        unique=False,
    )
    result = await run(rt, "RECENT_MESSAGES", message("x"))
    assert len(result.data["recentMessages"]) == 32
    assert result.data["recentMessages"][-1].content.text == "m39"


async def test_recent_messages_in_an_empty_room_say_so(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    result = await run(rt, "RECENT_MESSAGES", Memory(entity_id=ALICE, room_id=ROOM, content=Content()))
    assert result.text == "No recent messages available."


# -- ACTIONS --------------------------------------------------------------------------------


async def _noop(*args: Any) -> ActionResult:
    return ActionResult()


def _action(name: str, validate: Any = None, **kw: Any) -> Action:
    return Action(name=name, handler=_noop, description=f"does {name.lower()}", validate=validate, **kw)


async def test_actions_offers_only_actions_whose_validate_passes(provider_runtime, caplog) -> None:
    rt = await provider_runtime()

    async def yes(*args: Any) -> bool:
        return True

    async def no(*args: Any) -> bool:
        return False

    async def boom(*args: Any) -> bool:
        raise RuntimeError("validate exploded")

    example = (
        [
            {"name": "{{name1}}", "content": {"text": "wave please"}},
            {"name": "Ada", "content": {"text": "waves", "actions": ["WAVE"]}},
        ],
    )
    for action in (
        _action("ALWAYS"),
        _action("WAVE", yes, examples=example),
        _action("NEVER", no),
        _action("BROKEN", boom),
    ):
        rt.register_action(action)
    with caplog.at_level(logging.ERROR):
        result = await run(rt, "ACTIONS", message())
    offered = [a.name for a in result.data["actionsData"]]
    assert sorted(offered) == ["ALWAYS", "WAVE"]
    assert result.values["actionNames"] == "Possible response actions: " + ", ".join(offered)
    assert "WAVE: does wave" in result.values["actionsWithDescriptions"]
    assert "NEVER" not in result.text and "BROKEN" not in result.text
    assert "validate of action BROKEN failed" in caplog.text
    examples = result.values["actionExamples"]
    assert examples.startswith("# Action Examples\n")
    assert "Ada: waves (actions: WAVE)" in examples
    assert "{{name1}}" not in examples


async def test_actions_order_is_deterministic_for_a_seed(provider_runtime) -> None:
    orders = []
    for _ in range(2):
        rt = await provider_runtime(seed=3)
        for name in ("DELTA", "ALPHA", "CHARLIE", "BRAVO", "ECHO"):
            rt.register_action(_action(name))
        result = await run(rt, "ACTIONS", message())
        orders.append(result.values["actionNames"])
    assert orders[0] == orders[1]


async def test_actions_without_any_action(provider_runtime) -> None:
    rt = await provider_runtime()
    result = await run(rt, "ACTIONS", message())
    assert "No actions are available" in result.text
    assert result.data["actionsData"] == []


# -- TIME, ANXIETY, PROVIDERS, CAPABILITIES, ACTION_STATE -----------------------------------


async def test_time_is_utc_in_words(provider_runtime) -> None:
    rt = await provider_runtime()
    result = await run(rt, "TIME", message())
    assert result.values["time"] == "Tuesday, November 14, 2023 at 10:13:20 PM UTC"
    assert result.text.startswith("# Current Time\nIt is Tuesday, November 14, 2023 at 10:13:20 PM UTC.")


@pytest.mark.parametrize(
    ("room_type", "pool"),
    [
        (ChannelType.GROUP, anxiety._GROUP),
        (ChannelType.DM, anxiety._DM),
        (ChannelType.VOICE_GROUP, anxiety._VOICE),
        (ChannelType.API, anxiety._OTHER),
    ],
)
async def test_anxiety_picks_guidance_for_the_room_type(provider_runtime, room_type, pool) -> None:
    rt = await provider_runtime()
    await add_room(rt, type=room_type)
    result = await run(rt, "ANXIETY", message())
    assert result.text.startswith("# Keep It Short\n")
    assert len(result.data["anxiety"]) == 3
    assert set(result.data["anxiety"]) <= set(pool)
    assert result.values["anxiety"] == result.text


async def test_anxiety_falls_back_to_the_message_channel_type(provider_runtime) -> None:
    rt = await provider_runtime()
    result = await run(rt, "ANXIETY", message(room=UNKNOWN_ROOM, extra={"channelType": "dm"}))  # not a ChannelType
    assert set(result.data["anxiety"]) <= set(anxiety._DM)


async def test_providers_lists_the_dynamic_ones_for_the_model(provider_runtime) -> None:
    rt = await provider_runtime()
    result = await run(rt, "PROVIDERS", message())
    listed = {line.split("**")[1] for line in result.text.splitlines() if line.startswith("- **")}
    assert listed == DYNAMIC
    assert "**FACTS**: Facts the agent has learned" in result.text
    assert "**CHARACTER**" in result.values["providersWithDescriptions"]
    assert {p["name"] for p in result.data["dynamicProviders"]} == DYNAMIC


async def test_capabilities_lists_plugins_and_model_types(provider_runtime) -> None:
    rt = await provider_runtime()
    rt.loaded_plugins = ["core", "openai"]

    async def model(runtime: Any, params: Any) -> Any:
        return "x"

    rt.register_model(ModelType.TEXT_LARGE, model, "fake")
    rt.register_model(ModelType.IMAGE_DESCRIPTION, model, "fake")
    result = await run(rt, "CAPABILITIES", message())
    assert result.data["models"] == ["TEXT_LARGE", "IMAGE_DESCRIPTION"]
    assert result.data["plugins"] == ["core", "openai"]
    assert result.text.startswith("# Ada's Capabilities\n")
    assert "see and describe images" in result.text
    assert "Cannot: understand voice messages and audio, speak aloud." in result.text
    assert "Plugins: core, openai" in result.text


async def test_action_state_reports_previous_results(provider_runtime) -> None:
    rt = await provider_runtime()
    empty = await run(rt, "ACTION_STATE", message())
    assert empty.text == "" and empty.values["hasActionResults"] is False
    state = State(
        data={
            "actionResults": [
                ActionResult(text="Sent the reply", data={"actionName": "REPLY"}),
                ActionResult(success=False, error="no permission", data={"actionName": "MUTE_ROOM"}),
            ]
        }
    )
    result = await run(rt, "ACTION_STATE", message(), state)
    assert result.text == (
        "# Previous Action Results\n1. REPLY: succeeded — Sent the reply\n2. MUTE_ROOM: failed (error: no permission)"
    )
    assert result.values["completedActions"] == 1
    assert result.values["failedActions"] == 1


# -- ENTITIES, WORLD, ROLES, SETTINGS -------------------------------------------------------


async def test_entities_lists_the_people_in_the_room(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_people(rt)
    await rt.store.update_entity(
        Entity(
            BOB,
            rt.agent_id,
            names=["Bob", "Bobby"],
            metadata=EntityMetadata.from_json({"discord": {"username": "bob_the_builder"}}),
        )
    )
    result = await run(rt, "ENTITIES", message(entity=BOB))
    assert result.values["senderName"] == "Bob"
    assert result.text.startswith("# People in the Room\n")
    assert f"- Bob (id {BOB}), also known as Bobby, @bob_the_builder" in result.text
    assert f"- Ada (id {rt.agent_id}) — this is you" in result.text
    assert f"- Alice (id {ALICE})" in result.text
    assert result.data["room"].id == ROOM


async def test_world_describes_the_server_and_its_channels(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_world(rt)
    await add_room(rt)
    await add_room(rt, VOICE_ROOM, ChannelType.VOICE_GROUP, name="lounge")
    await add_people(rt)
    result = await run(rt, "WORLD", message())
    assert result.values["worldName"] == "Analytical Society"
    assert result.values["currentChannelName"] == "general"
    assert "Current channel: general (GROUP, 3 participants)" in result.text
    assert "Voice channels: lounge" in result.text
    assert result.data["world"]["channelStats"]["text"] == 1


async def test_world_without_a_world_row(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    assert "world is not known" in (await run(rt, "WORLD", message())).text
    await add_room(rt, DM_ROOM, ChannelType.DM, world_id=None)
    assert "belongs to no world" in (await run(rt, "WORLD", message(room=DM_ROOM))).text


async def test_roles_lists_owners_admins_and_members_in_groups_only(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_world(rt, {"roles": {ALICE: "OWNER", BOB: "ADMIN", CAROL: "NONE"}})
    await add_room(rt)
    await add_room(rt, DM_ROOM, ChannelType.DM)
    await add_people(rt, people={ALICE: ["Alice"], BOB: ["Bob"], CAROL: ["Carol"]})
    result = await run(rt, "ROLES", message())
    assert result.text == (
        f"# Roles in Analytical Society\n## Owners\n- Alice ({ALICE})\n## Administrators\n"
        f"- Bob ({BOB})\n## Members\n- Carol ({CAROL})"
    )
    assert result.values["roles"] == result.text
    assert "only shown in group" in (await run(rt, "ROLES", message(room=DM_ROOM))).text


async def test_roles_without_role_data(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_world(rt)
    await add_room(rt)
    assert "No role information" in (await run(rt, "ROLES", message())).text


async def test_choice_shows_the_newest_open_choices_whom_they_wait_for_and_their_options(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_room(rt, OTHER_ROOM)
    await add_people(rt)
    assert (await run(rt, "CHOICE", message())).values["tasks"] == "No pending choices for the moment."
    colour, _ = await waiting_choice(
        rt, room_id=ROOM, entity_id=ALICE, options=["red", {"name": "blue", "description": "calm"}]
    )
    result = await run(rt, "CHOICE", message())
    assert result.text == (
        "# Pending Choices\nQuestions in this conversation still waiting for an answer, newest first:\n"
        f'- task {str(colour.id)[:8]} "PICK_COLOUR": colour of the banner (waiting for Alice)\n'
        "  - red\n  - blue: calm\n  - ABORT: cancel this task\n"
        "When the person answers one of these in words, use the CHOOSE_OPTION action: it carries the answer out."
    )
    assert result.values["tasks"] == result.text and [t.id for t in result.data["tasks"]] == [colour.id]
    # Another room's choices are not this room's; a room with many shows the newest few.
    assert (await run(rt, "CHOICE", message(room=OTHER_ROOM))).text == ""
    for n in range(6):
        await waiting_choice(rt, room_id=ROOM, entity_id=BOB, name=f"STEP_{n}", description="", options=["go"])
    many = await run(rt, "CHOICE", message())
    assert [t.name for t in many.data["tasks"]] == ["STEP_5", "STEP_4", "STEP_3", "STEP_2", "STEP_1"]
    assert '"STEP_5" (waiting for Bob)' in many.text and "PICK_COLOUR" not in many.text
    assert "(and 2 older ones not shown)" in many.text


async def test_choice_shows_nothing_while_no_plugin_could_carry_a_choice_out(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    stored = Task(
        name="ORPHAN",
        room_id=ROOM,
        tags=[AWAITING_CHOICE],
        metadata=TaskMetadata.from_json({"options": ["yes", "no"]}),
    )
    await rt.store.create_task(stored)  # left by a plugin this character no longer runs
    result = await run(rt, "CHOICE", message())
    assert result.text == "" and result.values["tasks"] == "No pending choices for the moment."


def _world_settings() -> dict[str, Any]:
    return {
        "settings": {
            "BOT_NAME": {"name": "Bot name", "description": "What to call the bot", "value": "Ada", "required": True},
            "WEBHOOK": {"name": "Webhook", "value": WORLD_SECRET, "secret": True, "required": True},
            "LANGUAGE": {"name": "Language", "value": None, "required": True},
        },
        "ownership": {"ownerId": ALICE},
    }


async def test_settings_mask_secrets_in_group_rooms(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_world(rt, _world_settings())
    await add_room(rt)
    result = await run(rt, "SETTINGS", message())
    assert "- Bot name (BOT_NAME): Ada — What to call the bot" in result.text
    assert "- Webhook (WEBHOOK): ****************" in result.text
    assert "- Language (LANGUAGE): not set (required)" in result.text
    assert WORLD_SECRET not in repr(result)


async def test_settings_in_a_dm_help_the_owner_finish_set_up(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_world(rt, _world_settings())
    await add_room(rt, DM_ROOM, ChannelType.DM, world_id=None)
    await add_people(rt, DM_ROOM)
    result = await run(rt, "SETTINGS", message(room=DM_ROOM))
    assert "Alice owns this server and 1 required setting still needs a value" in result.text
    assert "- Webhook (WEBHOOK): ****************" in result.text
    assert result.data["onboarding"] is True
    stranger = await run(rt, "SETTINGS", message(room=DM_ROOM, entity=BOB))
    assert "No server settings" in stranger.text


async def test_settings_of_an_unconfigured_server(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_world(rt)
    await add_room(rt)
    assert "not been configured" in (await run(rt, "SETTINGS", message())).text


# -- FACTS and RELATIONSHIPS ----------------------------------------------------------------


def _embed(text: str) -> list[float]:
    """A bag-of-words vector: texts sharing words are similar."""
    vector = [0.0] * 384
    for word in text.lower().split():
        vector[int(hashlib.sha256(word.strip(".,?!").encode()).hexdigest(), 16) % 384] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


async def _store_fact(rt: AgentRuntime, text: str, *, entity: str, room: str) -> str:
    return await rt.store.create_memory(
        Memory(entity_id=entity, room_id=room, content=Content(text=text), embedding=_embed(text), created_at=NOW),
        "facts",
        unique=True,
    )


async def test_facts_search_by_embedding_in_the_room_and_about_the_sender(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_room(rt, OTHER_ROOM)
    await add_people(rt)
    await rt.store.add_participants([ALICE, BOB], OTHER_ROOM)
    asked: list[Any] = []

    async def embedding(runtime: Any, params: Any) -> list[float]:
        asked.append(params)
        return _embed(params["text"] if params else "probe")

    rt.register_model(ModelType.TEXT_EMBEDDING, embedding, "fake")
    await _store_fact(rt, "Alice drinks green tea every morning", entity=ALICE, room=ROOM)
    await _store_fact(rt, "Alice lives in Lisbon", entity=ALICE, room=OTHER_ROOM)
    await _store_fact(rt, "Bob collects stamps", entity=BOB, room=OTHER_ROOM)
    await post(rt, "Do you remember what tea I like?")

    result = await run(rt, "FACTS", message("Do you remember what tea I like?"))
    assert asked and asked[0] == {"text": "Do you remember what tea I like?"}
    texts = [f.content.text for f in result.data["facts"]]
    assert texts[0] == "Alice drinks green tea every morning"
    assert sorted(texts) == ["Alice drinks green tea every morning", "Alice lives in Lisbon"]  # deduplicated
    assert result.text.startswith("# What Ada Knows\n- Alice drinks green tea every morning")
    assert result.values["facts"].splitlines()[0] == "Alice drinks green tea every morning"


async def test_facts_fall_back_to_keywords_without_an_embedding_model(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_people(rt)
    await _store_fact(rt, "Alice drinks green tea every morning", entity=ALICE, room=ROOM)
    await _store_fact(rt, "Bob collects stamps", entity=BOB, room=ROOM)
    result = await run(rt, "FACTS", message("any tea recommendations?"))
    assert [f.content.text for f in result.data["facts"]] == ["Alice drinks green tea every morning"]


async def test_facts_when_nothing_is_known(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    result = await run(rt, "FACTS", message("tea?"))
    assert result.text == "# What Ada Knows\nNo facts available."
    assert result.values["facts"] == ""


async def test_facts_rank_relevance_first_then_recency_and_fade_a_stale_status(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_people(rt)
    day = 86_400_000

    same = [1.0] + [0.0] * 383  # every fact exactly as relevant as the next: recency decides

    async def embedding(runtime: Any, params: Any) -> list[float]:
        return same

    rt.register_model(ModelType.TEXT_EMBEDDING, embedding, "fake")

    async def fact(text: str, age_days: float, kind: str = "fact", unique: bool = True) -> None:
        await rt.store.create_memory(
            Memory(
                entity_id=ALICE,
                room_id=ROOM,
                content=Content(text=text, type=kind),
                embedding=same,
                created_at=NOW - int(age_days * day),
            ),
            "facts",
            unique=unique,
        )

    await fact("Alice is ill with the flu", 60, "status")
    await fact("Alice has the flu again", 1, "status")
    await fact("Alice once had the flu in Lisbon", 200)
    await fact("Alice keeps the flu jab record", 2, unique=False)
    result = await run(rt, "FACTS", message("flu"))
    # A fresh status first; a stale status fades below an older lasting fact; a near-repeat last.
    assert [f.content.text for f in result.data["facts"]] == [
        "Alice has the flu again",
        "Alice once had the flu in Lisbon",
        "Alice is ill with the flu",
        "Alice keeps the flu jab record",
    ]


async def test_facts_show_summaries_of_this_room_only(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_room(rt, OTHER_ROOM, ChannelType.DM)
    await add_people(rt)
    for room, text in (
        (ROOM, "The group planned a picnic by the lake"),
        (OTHER_ROOM, "Alice told a private picnic secret"),
    ):
        await rt.store.create_memory(
            Memory(
                entity_id=rt.agent_id,
                room_id=room,
                content=Content(text=text),
                created_at=NOW - 40 * 86_400_000,
                metadata=MemoryMetadata(start=NOW - 41 * 86_400_000, end=NOW - 40 * 86_400_000),
            ),
            "summaries",
        )
    result = await run(rt, "FACTS", message("what about the picnic?"))
    assert result.text == (
        "# What Ada Knows\nNo facts available.\n\n# Earlier Conversation Here\n"
        "- (2023-10-04 to 2023-10-05) The group planned a picnic by the lake"
    )
    assert [s.room_id for s in result.data["summaries"]] == [ROOM]


async def test_relationships_put_the_people_the_message_names_first(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_people(rt, people={ALICE: ["Alice"], BOB: ["Bob"], CAROL: ["Carol"]})
    week = 7 * 86_400_000
    await rt.store.create_relationship(
        ALICE, BOB, metadata=RelationshipMetadata.from_json({"interactions": 10, "lastInteractionAt": NOW - 52 * week})
    )
    await rt.store.create_relationship(
        ALICE, CAROL, metadata=RelationshipMetadata.from_json({"interactions": 4, "lastInteractionAt": NOW - week})
    )
    result = await run(rt, "RELATIONSHIPS", message("how is Carol?"))
    assert [r["name"] for r in result.data["relationships"]] == ["Carol", "Bob"]
    result = await run(rt, "RELATIONSHIPS", message("hi"))
    assert [r["name"] for r in result.data["relationships"]] == ["Carol", "Bob"]  # Bob's were a year ago
    await rt.store.create_relationship(ALICE, rt.agent_id, metadata=RelationshipMetadata.from_json({"interactions": 9}))
    result = await run(rt, "RELATIONSHIPS", message("tell Bob hi"))
    assert [r["name"] for r in result.data["relationships"]] == ["Bob", "Ada", "Carol"]


async def test_relationships_are_ranked_by_interactions_with_names(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_people(rt, people={ALICE: ["Alice"], BOB: ["Bob, Jr."], CAROL: ["Carol"]})
    await rt.store.create_relationship(
        ALICE, BOB, tags=["friend", "colleague"], metadata=RelationshipMetadata.from_json({"interactions": 3})
    )
    await rt.store.create_relationship(
        CAROL, ALICE, tags=["acquaintance"], metadata=RelationshipMetadata.from_json({"interactions": 12})
    )
    result = await run(rt, "RELATIONSHIPS", message())
    assert result.text == (
        '# Alice\'s Connections (2)\nname,interactions,tags\nCarol,12,acquaintance\n"Bob, Jr.",3,friend;colleague'
    )
    assert [r["entityId"] for r in result.data["relationships"]] == [CAROL, BOB]


async def test_relationships_keep_the_top_30(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    others = {f"00000000-0000-0000-0000-0000000001{i:02d}": [f"P{i}"] for i in range(35)}
    await add_people(rt, people={ALICE: ["Alice"], **others})
    for i, other in enumerate(others):
        await rt.store.create_relationship(ALICE, other, metadata=RelationshipMetadata.from_json({"interactions": i}))
    result = await run(rt, "RELATIONSHIPS", message())
    rows = result.data["relationships"]
    assert len(rows) == 30
    assert rows[0]["name"] == "P34" and rows[-1]["name"] == "P5"


# -- ATTACHMENTS ----------------------------------------------------------------------------


async def test_attachments_of_the_message_and_the_recent_conversation(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    await add_people(rt)
    await post(
        rt,
        "old scan",
        at=NOW - 3 * 60 * MINUTE,
        attachments=(
            Attachment(id="a1", url="https://x.test/a.pdf", title="Notes", content_type="document", text="G-note"),
        ),
    )
    await post(rt, "plain text")
    current = message(
        "look",
        attachments=(
            Attachment(
                id="a2",
                url="data:image/png;base64," + "A" * 4096,
                title="Sketch",
                content_type="image",
                description="A drawing of an engine",
                text="engine",
            ),
        ),
    )
    result = await run(rt, "ATTACHMENTS", current)
    items = {i["id"]: i for i in result.data["attachments"]}
    assert set(items) == {"a1", "a2"}
    assert items["a1"]["text"] == "[Hidden]"  # older than an hour before the newest
    assert items["a2"]["url"] == "[Embedded image/png ~3KB]"
    assert "base64" not in result.text
    assert "ID: a2\nName: Sketch\nURL: [Embedded image/png ~3KB]\nType: image" in result.text
    assert result.values["attachments"] == result.text


async def test_attachments_when_there_are_none(provider_runtime) -> None:
    rt = await provider_runtime()
    await add_room(rt)
    result = await run(rt, "ATTACHMENTS", message())
    assert "No attachments" in result.text
    assert result.data["attachments"] == []


# -- secrets --------------------------------------------------------------------------------


async def test_no_provider_ever_shows_a_secret(provider_runtime) -> None:
    rt = await provider_runtime(
        secrets={"OPENAI_API_KEY": CHARACTER_SECRET},
        settings={"secrets": {"DISCORD_API_TOKEN": SETTINGS_SECRET}, "conversationLength": 10},
    )
    assert rt.get_setting("OPENAI_API_KEY") == CHARACTER_SECRET  # the secrets did load
    metadata = _world_settings()
    metadata["settings"]["API_TOKEN"] = {"name": "Token", "value": SETTINGS_SECRET}  # not marked secret
    metadata["roles"] = {ALICE: "OWNER"}
    await add_world(rt, metadata)
    await add_room(rt)
    await add_room(rt, DM_ROOM, ChannelType.DM, world_id=None)
    await add_people(rt)
    await rt.store.add_participants([ALICE], DM_ROOM)
    rt.register_action(_action("ALWAYS"))
    for room in (ROOM, DM_ROOM):
        await post(rt, "hello there", room=room)
        for name in sorted(rt.providers):
            result = await run(rt, name, message("what is the token?", room=room))
            shown = result.text + json.dumps(result.values, default=str)
            for secret in (CHARACTER_SECRET, SETTINGS_SECRET, WORLD_SECRET):
                assert secret not in shown, f"{name} showed a secret in room {room}"
        state = await rt.compose_state(message("all of it", room=room), DYNAMIC, skip_cache=True)
        assert not any(
            s in state.text + json.dumps(state.values, default=str)
            for s in (CHARACTER_SECRET, SETTINGS_SECRET, WORLD_SECRET)
        )
