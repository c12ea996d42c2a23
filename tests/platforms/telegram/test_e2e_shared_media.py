"""End to end on Telegram: a PDF, a video and a link shared with a character reach its prompt,
through the real python-telegram-bot and openai clients against the fakes."""

from __future__ import annotations

from tests.fakes.web_site import FakeWebSite, page
from tests.media_files import make_pdf, make_video

from .scene import plan


async def test_a_pdf_a_video_and_a_link_are_read_before_the_character_answers(scene) -> None:
    s = scene
    await s.start({"TROUPE_FETCH_ALLOW_PRIVATE": "true"}, with_brann=False)
    s.brain.plans["Ada"] += [plan("Good report."), plan("Nice clip."), plan("Otters!")]
    chat = s.fake.private(s.sam, s.ada)
    report = ("report.pdf", make_pdf("Sales rose by 12 percent"), "application/pdf")
    await s.fake.user_says(s.sam, chat, "read this", document=report)
    await s.fake.wait_for_sent(s.ada, 1)
    await s.fake.user_says(s.sam, chat, "and this", document=("clip.mp4", make_video(1.0), "video/mp4"))
    await s.fake.wait_for_sent(s.ada, 2)
    async with FakeWebSite({"/otters": page("<title>Otters</title><p>Otters hold hands.</p>")}) as site:
        await s.fake.user_says(s.sam, chat, f"and {site.url('/otters')}")
        await s.fake.wait_for_sent(s.ada, 3)

    planning = [p for p in s.brain.prompts if "Write the next turn of Ada" in p]
    assert "Sales rose by 12 percent" in planning[0]
    assert "A frame from its middle: A ginger cat asleep on a keyboard." in planning[1]
    assert "Transcript of its sound: transcript of video-sound.wav (" in planning[1]
    assert "Otters hold hands." in planning[2]
    assert s.openai is not None
    assert [r.fields["file"].filename for r in s.openai.requests_for("transcriptions") if r.fields] == [
        "video-sound.wav"
    ]
    assert "token-ada" not in "".join(s.brain.prompts)
