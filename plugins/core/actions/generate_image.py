"""GENERATE_IMAGE: draw a picture with the IMAGE model and send it as an image attachment.

The plan asks for it and says what to draw (``content.image_prompt``; the person's own words when it
says nothing), so a picture costs one image call and no second large-model call (upstream asks
TEXT_LARGE for the prompt first). The picture goes through the reply channel with a short
caption: the plan's text when REPLY does not send it already. Without an IMAGE model, or with
``IMAGE_GENERATION=false``, the person is told that drawing is not possible here; a model that
fails is said to have failed. Neither is an error.
"""

from __future__ import annotations

from dataclasses import replace

from bot.sdk import Action, ActionContext, ActionResult, Content, ModelError, ModelType, OutgoingFile, Reply

from .._delivery import bound_text

__all__ = ["NAME", "action"]

NAME = "GENERATE_IMAGE"
_CAPTION_CHARS = 200  # a caption that says what the picture is, not a second reply
_NO_IMAGES = "I can't draw pictures here: no image model is set up for me."
_TURNED_OFF = "I don't draw pictures here."


def _caption(content: Content, prompt: str) -> str:
    """The plan's text, unless REPLY sends it; then the prompt, short."""
    actions = [a.upper() for a in content.actions or ()]
    text = (content.text or "").strip()
    if text and "REPLY" not in actions:
        return text
    return bound_text(prompt, _CAPTION_CHARS)


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message, responses = context.runtime, context.message, context.responses
    content = responses[0].content if responses else Content()
    answer = Reply(actions=(NAME,), in_reply_to=content.in_reply_to or message.id)
    if not runtime.get_bool("IMAGE_GENERATION", True):
        await context.reply(replace(answer, text=_TURNED_OFF))
        return ActionResult(success=False, error="drawing is turned off (IMAGE_GENERATION=false)")
    if not runtime.has_model(ModelType.IMAGE):
        await context.reply(replace(answer, text=_NO_IMAGES))
        return ActionResult(success=False, error="no IMAGE model is registered")
    prompt = (content.image_prompt or "").strip() or (message.content.text or "").strip()
    if not prompt:
        await context.reply(replace(answer, text="What should I draw?"))
        return ActionResult(success=False, error="nothing to draw: no prompt and no message text")
    try:
        pictures: list[OutgoingFile] = await runtime.use_model(ModelType.IMAGE, {"prompt": prompt})
    except ModelError as exc:  # logged with the action's result, which says why
        await context.reply(replace(answer, text="I tried to draw that, but the image model failed. Try again later?"))
        return ActionResult(success=False, error=f"the image model failed: {exc.reason_for(runtime.character.name)}")
    sent = await context.reply(
        replace(
            answer,
            text=_caption(content, prompt),
            thought=f'Drew a picture of "{bound_text(prompt, _CAPTION_CHARS)}"',
            files=tuple(pictures[:1]),
        )
    )
    if not sent:
        return ActionResult(success=False, error="send failed: the platform took none of the picture")
    return ActionResult(
        text=f"Drew a picture: {prompt}",
        values={"imageGenerated": True},
        data={"actionName": NAME, "prompt": prompt},
    )


action = Action(
    name=NAME,
    handler=_handler,
    description="Draw a picture and send it. Say what it shows in imagePrompt; your text goes with it as its "
    "caption (use it instead of REPLY, or after REPLY).",
    similes=("DRAW", "CREATE_IMAGE", "RENDER_IMAGE", "VISUALIZE", "IMAGE_GENERATION"),
)
