"""Button presses in the pipeline: a press a plugin claims is handled without a model, any other
goes through the pipeline like a message; choice buttons (CHOOSE_OPTION) run an option once."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from bot.kernel.buttons import Button, Press
from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.errors import SendError
from bot.kernel.messages import Status
from bot.kernel.outgoing import Reply
from bot.kernel.record_metadata import TaskMetadata
from bot.kernel.types import JSON, ChannelType, Memory, Room, Task
from bot.runtime.choices import Choice, choice_buttons, choices_buttons, offer_options
from bot.runtime.components import ActionResult, PressHandler
from bot.runtime.events import InteractionReceived
from plugins.core.actions.choose_option import CHOOSING
from tests.choices import waiting_choice as stored_choice

from .harness import HUMAN, Harness, plan

CLEO = "00000000-0000-0000-0000-0000000000c1"


async def press(h: Harness, value: str, label: str | None = None, *, entity: str = HUMAN) -> Any:
    """The person presses a button under one of the agent's messages, as a platform delivers it."""
    content = Content(text=Press(value, label).text, button=Press(value, label), source="discord")
    message = Memory(
        id=str(uuid.uuid4()), entity_id=entity, room_id=h.room, content=content, metadata=MemoryMetadata(is_reply=True)
    )
    return await h.deliver(message)


async def stored_texts(h: Harness) -> list[str]:
    return [str(m.content.text) for m in await h.rt.store.get_memories(table="messages", room_id=h.room)]


async def test_a_press_a_plugin_claims_is_handled_without_a_model_and_stored_like_a_message(harness) -> None:
    h = await harness()
    seen: list[tuple[str, str | None]] = []

    async def on_vote(runtime: Any, message: Memory, pressed: Press, callback: Any) -> ActionResult:
        seen.append((pressed.value, pressed.label))
        await callback(Reply(text=f"Counted your vote for {pressed.text}."))
        return ActionResult()

    h.rt.register_press_handler(PressHandler("vote:", on_vote))
    outcome = await press(h, "vote:2", "Two")
    assert outcome.status is Status.REPLIED
    assert seen == [("vote:2", "Two")] and h.sent[-1]["text"] == "Counted your vote for Two."
    assert h.small_calls == 0 and h.large_calls == 0
    assert "Two" in await stored_texts(h)  # the press is part of the room's history


async def test_the_longest_prefix_claims_a_press_and_a_prefix_is_registered_once(harness) -> None:
    h = await harness()

    async def nothing(runtime: Any, message: Memory, pressed: Press, callback: Any) -> ActionResult:
        return ActionResult()

    general, special = PressHandler("vote:", nothing), PressHandler("vote:admin:", nothing)
    h.rt.register_press_handler(general)
    h.rt.register_press_handler(special)
    assert h.rt.press_handler_for("vote:admin:1") is special and h.rt.press_handler_for("vote:1") is general
    assert h.rt.press_handler_for("other") is None
    with pytest.raises(ValueError, match="'vote:' are already handled"):
        h.rt.register_press_handler(PressHandler("vote:", nothing))
    with pytest.raises(ValueError, match="needs a prefix"):
        PressHandler("", nothing)


async def test_a_press_nobody_claims_reaches_the_model_as_a_press_of_its_label(harness) -> None:
    h = await harness()
    h.large.append(plan("Two it is."))
    outcome = await press(h, "pick-2", "Two")  # in a group, unasked: the press addresses the agent
    assert outcome.status is Status.REPLIED and h.sent[-1]["text"] == "Two it is."
    assert h.small_calls == 0 and h.large_calls == 1
    assert 'pressed "Two"' in h.prompts[-1]


# -- choice buttons ----------------------------------------------------------------------------


async def waiting_choice(h: Harness, *, entity: str = HUMAN, hold: asyncio.Event | None = None) -> tuple[Task, list]:
    options = ["red", {"name": "blue", "description": "calm"}]
    return await stored_choice(h.rt, room_id=h.room, entity_id=entity, options=options, hold=hold)


def test_a_task_offers_one_button_per_option_and_cancel_each_small_enough_for_telegram() -> None:
    task = Task(
        name="T", id="0123456789abcdef-" + "f" * 19, metadata=TaskMetadata.from_json({"options": ["x" * 200, "b"]})
    )
    buttons = choice_buttons(task)
    assert [b.label for b in buttons] == ["x" * 80, "b", "Cancel"]
    assert [b.value for b in buttons] == ["choose:01234567:0", "choose:01234567:1", "choose:01234567:abort"]
    assert Choice.parse("choose:01234567:1") == Choice("01234567", 1)
    assert Choice.parse("choose:01234567:abort") == Choice("01234567", None)
    assert Choice.parse("choose:x:y") is None and Choice.parse("vote:1") is None


async def test_pressing_an_option_runs_it_once_without_a_model_and_a_second_press_is_told_it_is_closed(
    harness,
) -> None:
    h = await harness()
    task, ran = await waiting_choice(h)
    blue = choice_buttons(task)[1]
    assert (await press(h, str(blue.value), blue.label)).status is Status.REPLIED
    assert ran == [{"option": "blue"}] and h.sent[-1]["text"] == 'Chose blue for "PICK_COLOUR".'
    assert await h.rt.store.get_task(str(task.id)) is None
    await press(h, str(blue.value), blue.label)
    assert h.sent[-1]["text"] == "That choice is no longer open." and ran == [{"option": "blue"}]
    assert h.small_calls == 0 and h.large_calls == 0


async def red_pressed_and_held(h: Harness) -> tuple[Task, list, asyncio.Event, asyncio.Task]:
    """A waiting choice whose red button was pressed, its worker running until ``hold`` is set."""
    hold = asyncio.Event()
    task, ran = await waiting_choice(h, hold=hold)
    red = choice_buttons(task)[0]
    pressed = asyncio.create_task(press(h, str(red.value), red.label))
    async with asyncio.timeout(60):
        while not ran:
            await asyncio.sleep(0.01)
    return task, ran, hold, pressed


async def test_two_presses_at_once_run_the_option_once(harness) -> None:
    h = await harness()
    task, ran, hold, first = await red_pressed_and_held(h)
    red = choice_buttons(task)[0]
    await press(h, str(red.value), red.label)
    assert h.sent[-1]["text"] == 'The choice for "PICK_COLOUR" is already being made.'
    hold.set()
    await first
    assert ran == [{"option": "red"}] and h.sent[-1]["text"] == 'Chose red for "PICK_COLOUR".'


async def test_a_choice_in_words_while_a_press_is_carried_out_does_not_run_the_worker_again(harness) -> None:
    h = await harness()
    task, ran, hold, pressed = await red_pressed_and_held(h)
    h.large.append(plan("", "CHOOSE_OPTION"))
    h.small.append(f"<response><taskId>{str(task.id)[:8]}</taskId><selectedOption>blue</selectedOption></response>")
    await h.say("Ada, blue please")
    assert h.sent[-1]["text"] == 'The choice for "PICK_COLOUR" is already being made.'
    hold.set()
    await pressed
    assert ran == [{"option": "red"}]


async def test_a_choice_in_words_made_after_a_press_finds_the_task_gone(harness) -> None:
    # The words' handler read the task before the press chose: it must not run the worker again.
    h = await harness()
    task, ran = await waiting_choice(h)
    choosing = h.rt.get_service(CHOOSING)
    assert choosing is not None
    red = choice_buttons(task)[0]
    await press(h, str(red.value), red.label)
    told: list[JSON] = []

    async def reply(content: JSON) -> list[Memory]:
        told.append(content)
        return []

    result = await choosing.choose(
        h.rt, task, "blue", reply, Memory(entity_id=HUMAN, room_id=h.room, content=Content())
    )
    assert not result.success and ran == [{"option": "red"}]


async def test_cancel_removes_the_task_and_someone_else_may_not_choose(harness) -> None:
    h = await harness()
    task, ran = await waiting_choice(h)
    red, cancel = choice_buttons(task)[0], choice_buttons(task)[-1]
    await press(h, str(red.value), red.label, entity=CLEO)
    assert h.sent[-1]["text"] == 'That choice for "PICK_COLOUR" is not yours to make.' and ran == []
    await press(h, str(cancel.value), cancel.label)
    assert h.sent[-1]["text"] == 'Cancelled "PICK_COLOUR".' and ran == []
    assert await h.rt.store.get_task(str(task.id)) is None


async def test_a_press_of_an_option_that_does_not_exist_is_told_the_choice_is_not_open(harness) -> None:
    h = await harness()
    task, ran = await waiting_choice(h)
    await press(h, Choice(str(task.id)[:8], 7).value, "Purple")
    assert h.sent[-1]["text"] == "That choice is no longer open." and ran == []
    await press(h, "choose:deadbeef:0", None)  # a label unknown: the value is what was said
    assert h.sent[-1]["text"] == "That choice is no longer open."


async def test_when_the_answer_is_unclear_the_options_come_back_as_buttons(harness) -> None:
    h = await harness()
    task, ran = await waiting_choice(h)
    h.large.append(plan("", "CHOOSE_OPTION"))
    h.small.append("<response><taskId></taskId><selectedOption></selectedOption></response>")
    await h.say("Ada, hmm, the colour")
    answer = h.sent[-1]
    assert answer["text"].startswith("Which one? Please pick one of these:")
    assert [b.label for b in answer["buttons"]] == ["red", "blue", "Cancel"] and ran == []
    h.large.append(plan("", "CHOOSE_OPTION"))
    h.small.append(f"<response><taskId>{str(task.id)[:8]}</taskId><selectedOption>green</selectedOption></response>")
    await h.say("Ada, green")
    assert h.sent[-1]["text"].startswith('"green" is not one of the options.')
    assert h.sent[-1]["buttons"] == choice_buttons(task) and ran == []


async def test_when_several_tasks_wait_the_buttons_offer_each_named_by_its_task(harness) -> None:
    h = await harness()
    first, _ = await waiting_choice(h)
    second, ran = await stored_choice(h.rt, room_id=h.room, entity_id=HUMAN, name="GO_AHEAD", options=["yes", "no"])
    h.large.append(plan("", "CHOOSE_OPTION"))
    h.small.append("<response><taskId></taskId><selectedOption></selectedOption></response>")
    await h.say("Ada, hmm")
    buttons = h.sent[-1]["buttons"]
    labels = sorted(b.label for b in buttons)
    named = ["PICK_COLOUR: red", "PICK_COLOUR: blue", "Cancel PICK_COLOUR", "GO_AHEAD: yes", "GO_AHEAD: no"]
    assert labels == sorted([*named, "Cancel GO_AHEAD"])
    values = {b.value for b in buttons}
    assert {Choice(str(t.id)[:8], 0).value for t in (first, second)} <= values and ran == []


def test_the_buttons_of_many_waiting_tasks_stop_at_whole_tasks_within_a_message() -> None:
    tasks = [
        Task(name=f"T{n}", id=f"{n:08d}-task", metadata=TaskMetadata.from_json({"options": ["a", "b", "c", "d"]}))
        for n in range(6)
    ]
    buttons = choices_buttons(tasks)
    assert len(buttons) == 25 and buttons[-1].label == "Cancel T4"  # five tasks of five buttons
    assert choices_buttons(tasks[:1]) == choice_buttons(tasks[0])


class RecordingMessenger:
    def __init__(self) -> None:
        self.sent: list[tuple[Room, Reply]] = []
        self.returned: list[Memory] = []

    async def send_to_room(self, room: Room, reply: Reply) -> list[Memory]:
        self.sent.append((room, reply))
        content = Content(text=reply.text, buttons=reply.buttons or None)  # as a platform stores what it sent
        memory = Memory(id=str(uuid.uuid4()), entity_id="agent", room_id=room.id, content=content)
        self.returned.append(memory)
        return [memory]

    async def send_to_entity(self, entity: Any, reply: Reply) -> list[Memory]:
        raise SendError("not in this test")


async def test_a_plugin_offers_a_tasks_options_as_buttons_in_its_room(harness) -> None:
    h = await harness()
    task, _ = await waiting_choice(h)
    messenger = RecordingMessenger()
    h.rt.register_service("discord", messenger)
    (sent,) = await offer_options(h.rt, task)
    ((room, reply),) = messenger.sent
    assert sent is messenger.returned[0]  # what the messenger returned, as it returned it
    assert room.id == h.room and reply.text == "PICK_COLOUR: colour of the banner"
    assert list(reply.buttons) == choice_buttons(task) and all(isinstance(b, Button) for b in reply.buttons)
    with pytest.raises(ValueError, match="needs an id, a room and options"):
        await offer_options(h.rt, Task(name="EMPTY", id="x", room_id=h.room))
    await h.rt.store.create_rooms([Room("r-2", source="telegram", type=ChannelType.GROUP, channel_id="1")])
    with pytest.raises(SendError, match="telegram of task 'PICK_COLOUR' is not connected"):
        await offer_options(
            h.rt, Task(name="PICK_COLOUR", id="y", room_id="r-2", metadata=TaskMetadata.from_json({"options": ["a"]}))
        )


async def test_a_choice_answered_in_words_is_seen_when_planning_and_carried_out_as_choice(harness) -> None:
    h = await harness()
    task, ran = await waiting_choice(h)
    short = str(task.id)[:8]

    def planned(params: dict) -> str:
        # The CHOICE provider showed the open choice to the model planning the turn.
        prompt = params["prompt"]
        assert "# Pending Choices" in prompt
        assert f'- task {short} "PICK_COLOUR": colour of the banner (waiting for Sam)' in prompt
        assert "  - blue: calm" in prompt
        return plan("", "CHOICE")  # elizaOS's documents' name for CHOOSE_OPTION

    h.large.append(planned)
    h.small.append(f"<response><taskId>{short}</taskId><selectedOption>blue</selectedOption></response>")
    outcome = await h.say("Ada, let's go with the calm one")
    assert outcome.status is Status.ACTED and outcome.actions == ("CHOICE",)
    assert ran == [{"option": "blue"}] and h.sent[-1]["text"] == 'Chose blue for "PICK_COLOUR".'
    assert await h.rt.store.get_task(str(task.id)) is None
    # Chosen: the next plan is told of no open choice.
    h.large.append(plan("Done already."))
    await h.say("Ada, did that work?")
    assert "# Pending Choices" not in h.prompts[-1]


async def test_a_press_is_heard_as_interaction_received(harness) -> None:
    """A plugin that follows presses (analytics, a game) without claiming them; copy it."""
    h = await harness()
    heard: list[tuple[str, str | None, str]] = []

    async def on_press(event: InteractionReceived) -> None:
        if event.press is not None:  # a slash command carries ``command`` instead
            heard.append((event.press.value, event.press.label, event.source))

    h.rt.on(InteractionReceived, on_press)
    h.small.append("<response><action>IGNORE</action></response>")
    await press(h, "color:blue", "Blue")
    assert heard == [("color:blue", "Blue", "discord")]
    h.small.append("<response><action>IGNORE</action></response>")
    await h.say("blue")  # typed, not pressed
    assert len(heard) == 1
