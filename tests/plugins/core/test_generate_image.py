"""GENERATE_IMAGE through the pipeline: one image call, the picture sent as a file with a caption,
and a clear answer (never an error) when nothing can be drawn."""

from __future__ import annotations

from typing import Any

from bot.kernel.errors import ModelUnavailable
from bot.kernel.messages import Status
from bot.kernel.models import ModelType
from bot.kernel.outgoing import OutgoingFile
from bot.kernel.types import ChannelType
from tests.fakes.openai_server import make_png

from .harness import Harness, plan

PICTURE = make_png(2, 2)


def drawing(prompt: str, text: str = "Here's your cat!", actions: str = "GENERATE_IMAGE") -> str:
    return (
        f"<response><thought>draw</thought><actions>{actions}</actions><text>{text}</text>"
        f"<imagePrompt>{prompt}</imagePrompt></response>"
    )


def painter(h: Harness, answer: Any = None) -> list[dict[str, Any]]:
    """An IMAGE model on ``h``'s runtime: what it was asked, in order."""
    asked: list[dict[str, Any]] = []

    async def image(runtime: Any, params: dict[str, Any]) -> list[OutgoingFile]:
        asked.append(params)
        if isinstance(answer, BaseException):
            raise answer
        return [OutgoingFile.of_bytes(PICTURE, "image-1.png", description=params["prompt"])]

    h.rt.register_model(ModelType.IMAGE, image, "script")
    return asked


async def test_a_drawing_is_sent_once_as_a_picture_with_the_plans_text_as_caption(harness) -> None:
    h = await harness(ChannelType.DM)
    asked = painter(h)
    h.large.append(drawing("a ginger cat asleep on a keyboard"))
    outcome = await h.say("draw me a cat")
    assert outcome.status is Status.ACTED and outcome.actions == ("GENERATE_IMAGE",)
    assert asked == [{"prompt": "a ginger cat asleep on a keyboard"}]  # one image call
    assert h.large_calls == 1  # and no second large-model call for the prompt
    (sent,) = h.sent
    assert sent["text"] == "Here's your cat!" and sent["actions"] == ["GENERATE_IMAGE"]
    (picture,) = sent["files"]
    assert picture.data == PICTURE and picture.content_type == "image/png"


async def test_after_reply_the_picture_carries_the_prompt_as_a_short_caption(harness) -> None:
    h = await harness(ChannelType.DM)
    painter(h)
    h.large.append(drawing("a cat " * 100, text="Sure, drawing it now.", actions="REPLY,GENERATE_IMAGE"))
    outcome = await h.say("draw me a cat")
    assert outcome.status is Status.REPLIED
    reply, picture = h.sent
    assert reply["text"] == "Sure, drawing it now." and "files" not in reply
    assert len(picture["text"]) <= 200 and picture["text"].startswith("a cat a cat") and picture["files"]


async def test_without_a_prompt_the_persons_own_words_are_drawn(harness) -> None:
    h = await harness(ChannelType.DM)
    asked = painter(h)
    h.large.append(plan("On it.", "GENERATE_IMAGE"))
    await h.say("a lighthouse in a storm")
    assert asked == [{"prompt": "a lighthouse in a storm"}]


async def test_without_an_image_model_the_person_is_told_and_nothing_fails(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(drawing("a cat"))
    outcome = await h.say("draw me a cat")
    assert outcome.status is Status.ACTED
    assert [s["text"] for s in h.sent] == ["I can't draw pictures here: no image model is set up for me."]
    assert "files" not in h.sent[0]


async def test_a_character_that_turned_drawing_off_says_so_without_asking_the_model(harness) -> None:
    h = await harness(ChannelType.DM, settings={"IMAGE_GENERATION": "false"})
    asked = painter(h)
    h.large.append(drawing("a cat"))
    await h.say("draw me a cat")
    assert asked == [] and [s["text"] for s in h.sent] == ["I don't draw pictures here."]


async def test_a_failing_image_model_is_told_to_the_person(harness, caplog) -> None:
    h = await harness(ChannelType.DM)
    painter(h, ModelUnavailable("IMAGE via openai (dall-e-3): server error HTTP 503", agent="Ada"))
    h.large.append(drawing("a cat"))
    outcome = await h.say("draw me a cat")
    assert outcome.status is Status.ACTED
    assert [s["text"] for s in h.sent] == ["I tried to draw that, but the image model failed. Try again later?"]
    line = "action GENERATE_IMAGE did not succeed: the image model failed: IMAGE via openai (dall-e-3): server error"
    assert line in caplog.text


async def test_a_picture_the_platform_takes_none_of_is_a_failed_send(harness) -> None:
    h = await harness(ChannelType.DM)
    painter(h)
    h.platform_down = True
    h.large.append(drawing("a cat"))
    outcome = await h.say("draw me a cat")
    assert outcome.status is Status.SEND_FAILED


async def test_reply_passes_on_files_an_earlier_step_attached(harness) -> None:
    h = await harness(ChannelType.DM)
    attached = OutgoingFile.of_bytes(b"a,b\n1,2", "table.csv")

    from bot.runtime.components import Action, ActionContext

    async def attach(context: ActionContext) -> None:
        context.attached.append(attached)  # shared by the actions of the chain

    h.rt.register_action(Action(name="ATTACH_TABLE", handler=attach, description="attach the table"))
    h.large.append(plan("", "ATTACH_TABLE,REPLY"))
    outcome = await h.say("send me the table")
    assert outcome.status is Status.REPLIED
    (sent,) = h.sent
    assert sent["files"] == [attached] and sent["text"] == ""
