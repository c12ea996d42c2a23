"""One decision per troupe: the characters of one daemon that hear the same message in a room
decide together who answers it (plugins/core/_troupe.py)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from bot.kernel.content import MemoryMetadata
from bot.kernel.messages import NativeRef, Outcome
from bot.kernel.types import RoomState
from bot.runtime.shared import Shared
from plugins.core._troupe import parse_decision

from .harness import Harness, plan

PERSON = "person-1"
DECIDING = "Which of these characters should answer"


def decision(answer: str, stop: str = "") -> str:
    return f"<response><reasoning>why</reasoning><answer>{answer}</answer><stop>{stop}</stop></response>"


def small_model(answer: str, *, alone: str = "IGNORE", stop: str = "") -> Any:
    """A small model that answers the troupe's question with ``answer`` and a lone character's
    with ``alone``."""

    def reply(params: dict) -> str:
        if DECIDING in params["prompt"]:
            return decision(answer, stop)
        return f"<response><action>{alone}</action></response>"

    return reply


async def troupe(harness: Any, *names: str) -> dict[str, Harness]:
    shared = Shared()  # one daemon
    members = {}
    for name in names:
        members[name] = await harness(shared=shared, name=name, bio=f"{name} knows about {name.lower()}s.")
    return members


async def hear(
    members: dict[str, Harness], text: str, *, author: str = PERSON, message: str = ""
) -> dict[str, Outcome]:
    """Every character (but the author) hears one platform message, at the same time, as each
    of their bots would: each its own copy, in its own room."""
    message = message or str(uuid.uuid4())
    is_bot = author.startswith("bot-")

    async def one(name: str, h: Harness) -> Outcome:
        native = NativeRef("discord", "room-1", message, author, f"bot-{name}")
        return await h.say(text, native=native, metadata=MemoryMetadata(author_is_bot=is_bot))

    listeners = {n: h for n, h in members.items() if f"bot-{n}" != author}
    outcomes = await asyncio.gather(*(one(n, h) for n, h in listeners.items()))
    return dict(zip(listeners, outcomes, strict=True))


def relay(members: dict[str, Harness], spoken: list[str]) -> None:
    """What a character sends reaches the others, as Discord (or troupe's Telegram relay) does."""
    for name, h in members.items():

        async def sent(text: str, name: str = name) -> None:
            spoken.append(f"{name}: {text}")
            await hear(members, text, author=f"bot-{name}")

        h.on_sent = sent


def script(members: dict[str, Harness], small: Any, *, plans: int = 3) -> None:
    for name, h in members.items():
        h.small.extend([small] * 6)
        h.large.extend([plan(f"{name} here.")] * plans)


def small_calls(members: dict[str, Harness]) -> int:
    return sum(h.small_calls for h in members.values())


async def test_a_message_naming_one_character_is_answered_by_it_with_no_other_model_call(harness) -> None:
    members = await troupe(harness, "Ada", "Brann", "Cleo")
    script(members, small_model("Brann"))
    outcomes = await hear(members, "Ada, what do you think?")
    assert {n: o.status for n, o in outcomes.items()} == {"Ada": "replied", "Brann": "ignored", "Cleo": "ignored"}
    assert "meant for Ada" in outcomes["Brann"].reason
    assert small_calls(members) == 0 and [h.large_calls for h in members.values()] == [1, 0, 0]


async def test_a_message_naming_none_costs_one_decision_for_the_whole_troupe(harness) -> None:
    members = await troupe(harness, "Ada", "Brann", "Cleo")
    script(members, small_model("Brann"))
    outcomes = await hear(members, "anyone know a good book about bees?")
    assert {n: o.status for n, o in outcomes.items()} == {"Ada": "ignored", "Brann": "replied", "Cleo": "ignored"}
    assert small_calls(members) == 1
    (prompt,) = [p for h in members.values() for p in h.prompts if DECIDING in p]
    for name in ("Ada", "Brann", "Cleo"):
        assert f"- {name}: {name} knows about {name.lower()}s." in prompt
    assert "anyone know a good book about bees?" in prompt


async def test_those_chosen_answer_in_the_chosen_order_each_hearing_the_one_before(harness) -> None:
    members = await troupe(harness, "Ada", "Brann", "Cleo")
    spoken: list[str] = []
    relay(members, spoken)
    script(members, small_model("Cleo, Ada"))
    outcomes = await hear(members, "what should I plant this spring?")
    assert {n: o.status for n, o in outcomes.items()} == {"Ada": "replied", "Brann": "ignored", "Cleo": "replied"}
    async with asyncio.timeout(60):  # the relay of Ada's reply to the others
        while len(spoken) < 2:
            await asyncio.sleep(0.01)
    assert spoken[:2] == ["Cleo: Cleo here.", "Ada: Ada here."]
    ada_plan = [p for p in members["Ada"].prompts if DECIDING not in p and "Write the next turn" in p]
    assert ada_plan and "Cleo here." in ada_plan[-1]  # Ada planned after hearing Cleo


async def test_the_answer_is_read_strictly(harness) -> None:
    members = await troupe(harness, "Ada", "Brann", "Cleo")
    script(members, small_model("Zed, brann, Brann, Ada's friend"))
    outcomes = await hear(members, "hello all")
    assert {n: o.status for n, o in outcomes.items()} == {"Ada": "ignored", "Brann": "replied", "Cleo": "ignored"}
    assert parse_decision("no xml at all", ["Ada"]) == ([], [])
    assert parse_decision(decision("Ada, Ada", stop="Ada, Cleo"), ["Ada", "Cleo"]) == (["Ada"], ["Cleo"])


async def test_stop_and_muted_and_followed_are_respected_per_character(harness) -> None:
    members = await troupe(harness, "Ada", "Brann", "Cleo", "Dov")
    await members["Dov"].rt.store.set_participant_state(
        members["Dov"].room, members["Dov"].rt.agent_id, RoomState.MUTED
    )
    await members["Cleo"].rt.store.set_participant_state(
        members["Cleo"].room, members["Cleo"].rt.agent_id, RoomState.FOLLOWED
    )
    script(members, small_model("Ada", stop="Brann"))
    outcomes = await hear(members, "Brann, you talk too much. Please stay out of this.")
    # Naming Brann addresses him: the others are not asked.
    assert outcomes["Brann"].status == "replied" and outcomes["Dov"].status == "muted"
    assert outcomes["Cleo"].status == "replied"  # following the room
    outcomes = await hear(members, "so, what now?")
    assert {n: o.status for n, o in outcomes.items()} == {
        "Ada": "replied",
        "Brann": "stopped",
        "Cleo": "replied",
        "Dov": "muted",
    }
    (prompt,) = [p for h in members.values() for p in h.prompts if DECIDING in p]
    assert "- Ada:" in prompt and "- Brann:" in prompt and "- Cleo:" not in prompt and "- Dov:" not in prompt
    # Asked to stay out, Brann stays out: not asked again, until he is named.
    assert await members["Brann"].room_state() is RoomState.STOPPED
    outcomes = await hear(members, "and then?")
    assert outcomes["Brann"].status == "stopped" and members["Brann"].small_calls == 0
    assert len([p for h in members.values() for p in h.prompts if DECIDING in p]) == 1  # Ada decides alone
    outcomes = await hear(members, "Brann, your turn")
    assert outcomes["Brann"].status == "replied" and await members["Brann"].room_state() is None


async def test_a_single_undecided_character_decides_alone_as_before(harness) -> None:
    members = await troupe(harness, "Ada", "Brann")
    await members["Brann"].rt.store.set_participant_state(
        members["Brann"].room, members["Brann"].rt.agent_id, RoomState.MUTED
    )
    script(members, small_model("Brann", alone="RESPOND"))
    outcomes = await hear(members, "nice weather")
    assert outcomes == {"Ada": outcomes["Ada"], "Brann": outcomes["Brann"]}
    assert outcomes["Ada"].status == "replied" and outcomes["Brann"].status == "muted"
    assert [p for h in members.values() for p in h.prompts if DECIDING in p] == []
    assert members["Ada"].small_calls == 1  # its own should-respond question


async def test_a_decision_that_gets_no_answer_leaves_everyone_silent_and_says_why(harness) -> None:
    from bot.kernel.errors import ModelUnavailable

    members = await troupe(harness, "Ada", "Brann")
    for h in members.values():
        h.small.append(ModelUnavailable("down", provider="script", model_type="TEXT_SMALL"))
    outcomes = await hear(members, "hello?")
    assert {o.status for o in outcomes.values()} == {"model_unreachable"}


async def test_a_character_that_stops_hearing_the_room_is_not_waited_for(harness) -> None:
    members = await troupe(harness, "Ada", "Brann", "Cleo")
    script(members, small_model(""))
    await hear(members, "first")  # everyone is in the room
    await members["Cleo"].rt.close()  # Cleo's bot left; the others go on
    quick = {n: h for n, h in members.items() if n != "Cleo"}
    started = asyncio.get_running_loop().time()
    await hear(quick, "second")  # waits for Cleo once
    await hear(quick, "third")
    third = asyncio.get_running_loop().time()
    await hear(quick, "fourth")
    assert asyncio.get_running_loop().time() - third < 0.4 < third - started
