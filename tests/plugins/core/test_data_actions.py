"""SEND_MESSAGE, UPDATE_CONTACT and CHOOSE_OPTION through the pipeline, with scripted models."""

from __future__ import annotations

import io
import uuid
from dataclasses import replace
from typing import Any

from bot.kernel.errors import SendError
from bot.kernel.outgoing import Reply
from bot.kernel.record_metadata import TaskMetadata
from bot.kernel.types import ChannelType, Entity, Memory, Role, Room, Task, World
from bot.runtime.components import Messenger, TaskWorker
from platforms.console import ConsoleAdapter
from plugins.core.actions.send_message import find_room_named
from plugins.core.actions.update_contact import clean_details, clean_kind

from .harness import HUMAN, Harness, plan

CLEO = "00000000-0000-0000-0000-0000000000c1"


class FakeMessenger:
    """Records what SEND_MESSAGE asks the platform to deliver."""

    def __init__(self, fail: str | None = None) -> None:
        self.sent: list[tuple[str, str, dict[str, Any]]] = []
        self.fail = fail

    async def send_to_room(self, room: Room, reply: Reply) -> list[Memory]:
        if self.fail:
            raise SendError(self.fail)
        self.sent.append(("room", room.id, reply.to_json()))
        return []

    async def send_to_entity(self, entity: Entity, reply: Reply) -> list[Memory]:
        if self.fail:
            raise SendError(self.fail)
        self.sent.append(("user", entity.id, reply.to_json()))
        return []


async def with_people(h: Harness) -> None:
    await h.rt.store.create_entities([Entity(CLEO, h.rt.agent_id, names=["Cleo", "cleo_c"])])
    await h.rt.store.add_participant(CLEO, h.room)


# -- SEND_MESSAGE ----------------------------------------------------------------------------


def target(kind: str, name: str, message: str, source: str = "discord") -> str:
    return (
        f"<response><targetType>{kind}</targetType><target>{name}</target><source>{source}</source>"
        f"<message>{message}</message></response>"
    )


async def channels(h: Harness) -> tuple[str, str]:
    """An #announcements room in this server and a #secret room in another server."""
    rt = h.rt
    news, secret = rt.unique_id("discord:news"), rt.unique_id("discord:secret")
    other = rt.unique_id("discord:guild-2")
    await rt.store.create_world(World(other, rt.agent_id, name="Other"))
    await rt.store.create_rooms(
        [
            Room(news, source="discord", type=ChannelType.GROUP, name="announcements", world_id=h.world),
            Room(secret, source="discord", type=ChannelType.GROUP, name="secret", world_id=other),
        ]
    )
    return news, secret


async def test_send_message_posts_the_extracted_text_to_a_channel_of_this_server(harness) -> None:
    h = await harness()
    messenger = FakeMessenger()
    h.rt.register_service("discord", messenger)
    news, _ = await channels(h)
    h.large.append(plan("On it.", "REPLY,SEND_MESSAGE"))
    h.small.append(target("room", "#Announcements", "The meeting moved to 3pm."))
    await h.say("Ada, tell #announcements that the meeting moved to 3pm")
    sent = {"text": "The meeting moved to 3pm.", "source": "discord", "actions": ["SEND_MESSAGE"]}
    assert messenger.sent == [("room", news, sent)]
    assert [s["text"] for s in h.sent] == ["On it.", "Message sent to #announcements on discord."]
    assert "announcements (discord)" in h.prompts[-1] and "secret" not in h.prompts[-1]


async def test_send_message_never_reaches_a_channel_of_another_server(harness) -> None:
    h = await harness()
    messenger = FakeMessenger()
    h.rt.register_service("discord", messenger)
    await channels(h)
    h.large.append(plan("", "SEND_MESSAGE"))
    h.small.append(target("room", "secret", "hello"))
    await h.say("Ada, post hello in #secret")
    assert messenger.sent == []
    assert h.sent[-1] == {
        "text": "I couldn't find a channel called secret here.",
        "actions": ["SEND_MESSAGE_ERROR"],
        "inReplyTo": h.sent[-1]["inReplyTo"],
        "source": "discord",
    }


async def test_send_message_to_a_person_by_name_or_handle(harness) -> None:
    h = await harness()
    await with_people(h)
    messenger = FakeMessenger()
    h.rt.register_service("discord", messenger)
    h.large += [plan("", "SEND_MESSAGE"), plan("", "SEND_MESSAGE")]
    h.small += [target("user", "@cleo_c", "Sam says hi!"), target("user", "Zed", "hi")]
    await h.say("Ada, DM cleo that Sam says hi")
    assert messenger.sent[0][:2] == ("user", CLEO) and messenger.sent[0][2]["text"] == "Sam says hi!"
    assert h.sent[-1]["text"] == "Message sent to Cleo on discord."
    await h.say("Ada, DM Zed: hi")
    assert h.sent[-1]["text"] == "I don't know anyone called Zed." and len(messenger.sent) == 1


async def test_send_message_failures_are_told_not_raised(harness) -> None:
    h = await harness()
    await with_people(h)
    h.rt.register_service("discord", FakeMessenger(fail="Cleo does not accept direct messages"))
    h.large += [plan("", "SEND_MESSAGE"), plan("", "SEND_MESSAGE"), plan("", "SEND_MESSAGE")]
    h.small += [target("user", "Cleo", "hi"), target("user", "Cleo", "hi", source="telegram"), "gibberish"]
    await h.say("Ada, DM Cleo hi")
    assert h.sent[-1]["text"] == "I couldn't send it: Cleo does not accept direct messages"
    await h.say("Ada, telegram Cleo hi")
    assert h.sent[-1]["text"] == "I can't send messages on telegram."
    await h.say("Ada, send it")
    assert h.sent[-1]["text"] == "I couldn't tell where to send that. Name the person or the channel."


async def test_send_message_is_offered_only_with_a_messenger(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(plan("hi"))
    await h.say("hello")
    assert "SEND_MESSAGE" not in h.prompts[-1]
    h.rt.register_service("discord", FakeMessenger())
    h.large.append(plan("hi"))
    await h.say("hello again")
    assert "SEND_MESSAGE" in h.prompts[-1]


def test_room_names_match_without_case_or_hash() -> None:
    rooms = [
        Room("1", "discord", ChannelType.GROUP, name="General"),
        Room("2", "discord", ChannelType.GROUP, name="#news"),
    ]
    general, news = find_room_named(rooms, " #general "), find_room_named(rooms, "NEWS")
    assert general is not None and news is not None
    assert general.id == "1" and news.id == "2"
    assert find_room_named(rooms, "") is None and find_room_named(rooms, "gen") is None


async def test_console_adapter_is_a_messenger_for_its_one_conversation(harness) -> None:
    h = await harness()
    out = io.StringIO()
    console = ConsoleAdapter(h.rt, user="sam", output=out)
    await console.connect()
    assert isinstance(h.rt.get_service("console"), Messenger)
    room = await h.rt.store.get_room(console.room_id)
    sent = await console.send_to_room(room, Reply(text="psst"))
    assert out.getvalue() == "Ada: psst\n" and sent[0].room_id == console.room_id
    other = await h.rt.store.get_room(h.room)
    try:
        await console.send_to_room(other, Reply(text="x"))
    except SendError as exc:
        assert "only this conversation" in str(exc)
    else:
        raise AssertionError("expected SendError")


# -- UPDATE_CONTACT --------------------------------------------------------------------------


def contact(entity: str, kind: str, details: str) -> str:
    return f"<response><entity>{entity}</entity><kind>{kind}</kind><details>{details}</details></response>"


async def test_contact_details_are_saved_per_teller_and_merged(harness) -> None:
    h = await harness()
    await with_people(h)
    h.large += [plan("Noted!", "REPLY,UPDATE_CONTACT"), plan("", "UPDATE_CONTACT"), plan("", "UPDATE_CONTACT")]
    h.small += [
        contact(HUMAN, "Email", "<address>sam@example.com</address>"),
        contact("", "email", "<work>sam@work.example</work>"),
        contact("Cleo", "github", "<handle>cleo-c</handle>"),
    ]
    await h.say("Ada, my email is sam@example.com")
    assert h.sent[-1]["text"] == "I've saved the email details for Sam."
    await h.say("Ada, and my work one is sam@work.example")  # no entity named: the writer
    assert h.sent[-1]["text"] == "I've updated the email details for Sam."
    component = await h.rt.store.get_component(HUMAN, "email", h.world, source_entity_id=HUMAN)
    assert component.data == {"address": "sam@example.com", "work": "sam@work.example"}
    await h.say("Ada, Cleo is cleo-c on GitHub", entity=HUMAN)
    cleo = await h.rt.store.get_component(CLEO, "github", h.world, source_entity_id=HUMAN)
    assert cleo.data == {"handle": "cleo-c"}
    # What Sam said about Cleo is Sam's account of it; Cleo's own record is separate.
    assert await h.rt.store.get_component(CLEO, "github", h.world, source_entity_id=CLEO) is None


async def test_contact_without_details_or_person_explains(harness) -> None:
    h = await harness()
    h.large += [plan("", "UPDATE_CONTACT"), plan("", "UPDATE_CONTACT")]
    h.small += [contact("Nobody Known", "email", "<a>x</a>"), contact(HUMAN, "email", "")]
    await h.say("Ada, Nobody Known's email is x")
    assert h.sent[-1]["text"].startswith("I'm not sure whose details those are.")
    await h.say("Ada, save my email")
    assert h.sent[-1]["text"].startswith("I couldn't tell which details to save.")
    assert await h.rt.store.get_components(HUMAN) == []


def test_contact_details_are_cleaned() -> None:
    assert clean_kind(" Twitter / X ") == "twitter_x" and clean_kind(None) == ""
    assert clean_details('{"handle": "@a", "n": 3, "empty": ""}') == {"handle": "@a", "n": "3"}
    assert clean_details("just text") == {"value": "just text"}
    assert len(clean_details({f"k{i}": "v" for i in range(50)})) == 20
    assert clean_details({"x": "y" * 900})["x"] == "y" * 500
    assert clean_details(["not", "a", "mapping"]) == {}


# -- CHOOSE_OPTION ---------------------------------------------------------------------------


async def pending_choice(h: Harness, entity: str = HUMAN) -> tuple[Task, list[dict]]:
    ran: list[dict] = []

    async def execute(runtime: Any, options: dict, task: Task) -> None:
        if options["option"] == "explode":
            raise RuntimeError("boom")
        ran.append(options)

    h.rt.register_task_worker(TaskWorker("PICK_COLOUR", execute))
    task = Task(
        name="PICK_COLOUR",
        id=str(uuid.uuid4()),
        description="colour of the banner",
        room_id=h.room,
        entity_id=entity,
        tags=["AWAITING_CHOICE"],
        metadata=TaskMetadata.from_json({"options": ["red", {"name": "blue", "description": "calm"}, "explode", 7]}),
    )
    await h.rt.store.create_task(task)
    return task, ran


def choice(task: Task, option: str) -> str:
    return f"<response><taskId>{str(task.id)[:8]}</taskId><selectedOption>{option}</selectedOption></response>"


async def test_choosing_an_option_runs_the_worker_and_completes_the_task(harness) -> None:
    h = await harness()
    task, ran = await pending_choice(h)
    h.large.append(plan("", "CHOOSE_OPTION"))
    h.small.append(choice(task, "Blue"))
    await h.say("Ada, blue please")
    assert ran == [{"option": "blue"}]
    assert h.sent[-1]["text"] == 'Chose blue for "PICK_COLOUR".'
    assert await h.rt.store.get_task(task.id) is None
    listing = h.prompts[-1]
    assert task.id is not None
    assert f'task {task.id[:8]} "PICK_COLOUR": colour of the banner' in listing and "  - blue: calm" in listing
    assert "  - ABORT: cancel this task" in listing and "  - 7" not in listing


async def test_abort_cancels_and_an_invalid_option_keeps_the_task(harness) -> None:
    h = await harness()
    task, ran = await pending_choice(h)
    h.large += [plan("", "CHOOSE_OPTION"), plan("", "CHOOSE_OPTION")]
    h.small += [choice(task, "green"), choice(task, "abort")]
    await h.say("Ada, green")
    assert h.sent[-1]["text"].startswith('"green" is not one of the options.')
    assert h.sent[-1]["actions"] == ["SELECT_OPTION_INVALID"] and await h.rt.store.get_task(task.id) is not None
    await h.say("Ada, never mind")
    assert h.sent[-1]["text"] == 'Cancelled "PICK_COLOUR".' and ran == []
    assert await h.rt.store.get_task(task.id) is None


async def test_a_failing_worker_keeps_the_task_and_says_so(harness) -> None:
    h = await harness()
    task, _ = await pending_choice(h)
    h.large.append(plan("", "CHOOSE_OPTION"))
    h.small.append(choice(task, "explode"))
    await h.say("Ada, explode")
    assert h.sent[-1]["text"] == 'Choosing explode for "PICK_COLOUR" failed; nothing was changed.'
    assert await h.rt.store.get_task(task.id) is not None


async def test_only_the_asked_person_or_an_admin_may_choose(harness) -> None:
    h = await harness()
    await with_people(h)
    task, ran = await pending_choice(h, entity=HUMAN)
    h.large.append(plan("", "CHOOSE_OPTION"))
    await h.say("Ada, red!", entity=CLEO)
    assert h.sent[-1]["text"] == "There is nothing waiting for a choice from you here." and ran == []
    world = await h.rt.store.get_world(h.world)
    world.metadata = replace(world.metadata, roles={CLEO: Role.ADMIN})
    await h.rt.store.update_world(world)
    h.large.append(plan("", "CHOOSE_OPTION"))
    h.small.append(choice(task, "red"))
    await h.say("Ada, red!", entity=CLEO)
    assert ran == [{"option": "red"}]


async def test_no_task_is_looked_for_when_only_memory_retention_could_carry_one_out(harness, monkeypatch) -> None:
    h = await harness()
    assert set(h.rt.task_workers) == {"MEMORY_RETENTION"}  # the core plugin's own, which never asks
    store_class = type(h.rt.store)
    get_tasks = store_class.get_tasks
    looked: list[dict] = []

    async def counted(self, **kwargs):
        looked.append(kwargs)
        return await get_tasks(self, **kwargs)

    monkeypatch.setattr(store_class, "get_tasks", counted)
    h.large.append(plan("sure"))
    await h.say("Ada, hello")
    assert looked == []
    task, ran = await pending_choice(h)
    h.large.append(plan("", "CHOOSE_OPTION"))
    h.small.append(choice(task, "red"))
    await h.say("Ada, red")
    assert ran == [{"option": "red"}] and looked  # with a worker that may wait for a choice, it is
