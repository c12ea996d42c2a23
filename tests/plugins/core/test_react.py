"""REACT through the pipeline: an emoji on the message being answered, alone or with a reply,
at most once however often the message comes, offered where the platform can react, and a
refusal that never costs the rest of the answer."""

from __future__ import annotations

import asyncio
import uuid

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.messages import IncomingMessage, QuietChannel, Reacted, Status
from bot.kernel.types import ChannelType, Handling, Memory
from plugins.core._parse import parse_response
from plugins.core._plan import Plan
from plugins.core._templates import DEFAULT_TEMPLATES
from plugins.core.actions.react import action as react_action
from plugins.core.actions.react import emoji_of

from .harness import HUMAN, plan


def reacting(emoji: str, text: str = "", actions: str = "REACT") -> str:
    return (
        f"<response><thought>a reaction says it</thought><actions>{actions}</actions><text>{text}</text>"
        f"<emoji>{emoji}</emoji></response>"
    )


async def test_a_thank_you_gets_a_thumbs_up_and_no_message(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(reacting("👍"))
    outcome = await h.say("thanks!")
    assert outcome.status is Status.ACTED and outcome.actions == ("REACT",)
    assert h.reactions == ["👍"] and h.sent == []


async def test_the_reaction_is_kept_in_the_conversation(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(reacting("👍"))
    message_id = str(uuid.uuid4())
    await h.say("thanks!", id=message_id)
    kept = await h.rt.store.get_memories(table="messages", room_id=h.room)
    reactions = [m for m in kept if m.entity_id == h.rt.agent_id]
    assert [(m.content.text, m.content.in_reply_to, m.metadata.emoji) for m in reactions] == [
        ("*reacted 👍*", message_id, "👍")
    ]
    h.large.append(plan("Anything else?"))
    await h.say("one more thing")
    planning = [p for p in h.prompts if "Write the next turn of Ada" in p][-1]
    assert "*reacted 👍*" in planning  # the next turn knows the thank-you was answered


async def test_a_reaction_and_a_reply_both_go(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(reacting("🎉", text="Congratulations!", actions="REPLY,REACT"))
    outcome = await h.say("I passed my exam")
    assert outcome.status is Status.REPLIED
    assert h.reactions == ["🎉"] and [s["text"] for s in h.sent] == ["Congratulations!"]


async def test_a_message_delivered_again_gets_no_second_reaction(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(reacting("👍"))
    message_id = str(uuid.uuid4())
    assert (await h.say("thanks!", id=message_id)).status is Status.ACTED
    assert (await h.say("thanks!", id=message_id)).status is Status.DUPLICATE
    assert h.reactions == ["👍"] and h.large_calls == 1
    handling = await h.rt.store.get_message_handling(message_id)
    assert handling is not None and (handling.status, handling.outcome) == (Handling.DONE, "acted")


async def test_a_crash_after_the_reaction_never_reacts_again(harness) -> None:
    first = await harness(ChannelType.DM)
    message_id = str(uuid.uuid4())
    reacted = asyncio.Event()

    class Stuck(QuietChannel):  # the platform took the reaction, then the process died
        async def react(self, emoji: str) -> Reacted:
            reacted.set()
            await asyncio.Event().wait()
            return Reacted.DONE

    first.large.append(reacting("👍"))
    message = Memory(id=message_id, entity_id=HUMAN, room_id=first.room, content=Content(text="thanks", source="x"))
    task = asyncio.create_task(first.rt.receive(IncomingMessage(message, Stuck())))
    await asyncio.wait_for(reacted.wait(), 30)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await first.rt.close()
    second = await harness(ChannelType.DM)  # restarted on the same database
    assert (await second.say("thanks", id=message_id)).status is Status.SENT_BEFORE_CRASH
    assert second.reactions == [] and second.large_calls == 0


async def test_a_refused_reaction_is_an_outcome_and_the_reply_still_goes(harness, caplog) -> None:
    h = await harness(ChannelType.DM)
    h.reactions_refused = True
    h.large.append(reacting("👍", text="Glad it worked!", actions="REACT,REPLY"))
    outcome = await h.say("it worked, thanks")
    assert outcome.status is Status.REPLIED
    assert [s["text"] for s in h.sent] == ["Glad it worked!"] and h.reactions == []
    assert "action REACT did not succeed: no reaction 👍: the platform refused the reaction" in caplog.text


async def test_a_refused_reaction_planned_alone_is_said_instead(harness) -> None:
    h = await harness(ChannelType.DM)
    h.reactions_refused = True
    h.large.append(reacting("👍"))
    outcome = await h.say("thanks!")
    assert outcome.status is Status.ACTED
    assert [(s["text"], s["actions"]) for s in h.sent] == [("👍", ["REACT"])]


async def test_without_an_emoji_a_lone_emoji_text_or_a_thumbs_up_is_used(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(plan("❤️", "REACT"))  # a weak model writes the emoji as the text
    h.large.append(plan("", "REACT"))
    await h.say("you're the best")
    await h.say("ok thanks")
    assert h.reactions == ["❤️", "👍"] and h.sent == []
    assert emoji_of(Content(text="Sure thing")) == "👍"
    assert emoji_of(Content(emoji=" <:troupe:123456789012345678> ")) == "<:troupe:123456789012345678>"


async def test_the_plan_reads_the_emoji_a_custom_one_too(harness) -> None:
    parsed = parse_response(reacting("<:troupe:123456789012345678>"))
    read = Plan.of(parsed)
    assert read is not None and read.actions == ["REACT"] and read.emoji == "<:troupe:123456789012345678>"
    assert "emoji: only with REACT" in DEFAULT_TEMPLATES["messageHandlerTemplate"]


async def test_react_is_offered_only_where_the_platform_can_react(harness) -> None:
    h = await harness(ChannelType.DM)
    message = Memory(entity_id=HUMAN, room_id=h.room, content=Content(text="thanks", source="discord"))
    assert react_action.validate is not None
    assert not await react_action.validate(h.rt, message, None)  # type: ignore[arg-type]

    class Reacting:
        reacts = True

    h.rt.register_service("discord", Reacting())
    assert await react_action.validate(h.rt, message, None)  # type: ignore[arg-type]
    elsewhere = Memory(entity_id=HUMAN, room_id=h.room, content=Content(text="thanks", source="console"))
    assert not await react_action.validate(h.rt, elsewhere, None)  # type: ignore[arg-type]
    spoken = Content(text="thanks", source="discord", channel_type=ChannelType.VOICE_GROUP)
    said = Memory(entity_id=HUMAN, room_id=h.room, content=spoken)  # in a voice channel: nothing to react on
    assert not await react_action.validate(h.rt, said, None)  # type: ignore[arg-type]
    assert {"ADD_REACTION", "EMOJI_REACTION"} <= set(react_action.similes)


async def test_a_reaction_in_a_group_is_still_once(harness) -> None:
    h = await harness(ChannelType.GROUP)
    h.large.append(reacting("👍"))
    message_id = str(uuid.uuid4())
    meta = MemoryMetadata(is_mention=True)
    assert (await h.say("@Ada thanks", id=message_id, metadata=meta)).status is Status.ACTED
    assert (await h.say("@Ada thanks", id=message_id, metadata=meta)).status is Status.DUPLICATE
    assert h.reactions == ["👍"]
