"""DOWNLOAD_MEDIA: a file shared in the room kept in the character's folder, once, within bounds."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.kernel.content import Attachment, Content
from bot.kernel.outgoing import Reply
from bot.kernel.types import ChannelType, Memory
from bot.runtime.components import ActionContext, State
from bot.runtime.shared import Shared
from plugins.core._saved_media import MB, MediaLimits, NoRoom, save_media

from .harness import HUMAN, Harness, plan
from .test_events_and_attachments import media_models
from .test_media_actions import request, sent_texts, shared_earlier

PICTURE = b"\x89PNG" + b"cat" * 1000
VIDEO = b"\x00\x00\x00\x18ftypmp42" + b"v" * 300_000


def short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


class Files:
    """A platform's files by attachment id; what was asked for is in ``fetched``."""

    def __init__(self, **files: bytes) -> None:
        self.files: dict[str, bytes] = files
        self.fetched: list[str] = []

    async def __call__(self, item: Mapping[str, Any]) -> bytes:
        self.fetched.append(str(item["id"]))
        if item["id"] not in self.files:
            raise LookupError("no such attachment")
        return self.files[str(item["id"])]


async def keeper(harness: Any, tmp_path: Path, **settings: str) -> tuple[Harness, Path]:
    """A character run by a daemon whose data directory is ``tmp_path / "data"``."""
    shared = Shared()
    shared.data_dir = tmp_path / "data"
    h = await harness(ChannelType.DM, shared=shared, settings=settings)
    media_models(h)  # the picture is looked at when it arrives, as any is
    return h, shared.data_dir


def kept(data_dir: Path) -> list[str]:
    folder = data_dir / "media" / "ada"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


async def test_the_picture_of_the_message_is_saved_under_a_safe_content_addressed_name(harness, tmp_path) -> None:
    h, data_dir = await keeper(harness, tmp_path)
    files = Files(p1=PICTURE)
    h.large.append(plan("On it.", "REPLY,DOWNLOAD_MEDIA"))
    picture = Attachment(id="p1", url="tg://p1", title="../../My Cat!!.PNG", content_type="image/png", private=True)
    await h.say("save this picture", attachments=[picture], fetch=files)
    name = f"my-cat-{short_hash(PICTURE)}.png"
    assert kept(data_dir) == [name]
    assert (data_dir / "media" / "ada" / name).read_bytes() == PICTURE
    assert sent_texts(h) == ["On it.", f"Saved ../../My Cat!!.PNG as media/ada/{name} (3 KB)."]
    assert h.sent[1]["actions"] == ["DOWNLOAD_MEDIA_RESPONSE"]


async def test_a_video_shared_earlier_is_saved_and_asking_again_saves_nothing_new(harness, tmp_path) -> None:
    h, data_dir = await keeper(harness, tmp_path)
    await shared_earlier(h, Attachment(id="v1", url="tg://v1", title="holiday.mp4", content_type="video/mp4"))
    files = Files(v1=VIDEO)

    async def fetch(item: Mapping[str, Any]) -> bytes:
        return await files(item)

    h.large.append(plan("", "DOWNLOAD_MEDIA"))
    await h.say("download that video please", fetch=fetch)
    name = f"holiday-{short_hash(VIDEO)}.mp4"
    assert sent_texts(h) == [f"Saved holiday.mp4 as media/ada/{name} (0.3 MB)."]
    h.large.append(plan("", "DOWNLOAD_MEDIA"))
    await h.say("keep holiday.mp4", fetch=fetch)
    assert sent_texts(h)[-1] == f"holiday.mp4 was already saved as media/ada/{name} (0.3 MB)."
    assert kept(data_dir) == [name]


async def test_a_message_delivered_again_saves_and_answers_once(harness, tmp_path) -> None:
    h, data_dir = await keeper(harness, tmp_path)
    files = Files(p1=PICTURE)
    picture = Attachment(id="p1", url="tg://p1", title="cat.png", content_type="image/png", private=True)
    h.large.append(plan("", "DOWNLOAD_MEDIA"))
    await h.say("save this", id="m-1", attachments=[picture], fetch=files)
    await h.say("save this", id="m-1", attachments=[picture], fetch=files)
    assert len(kept(data_dir)) == 1
    assert len([t for t in sent_texts(h) if t.startswith("Saved cat.png")]) == 1


async def test_too_large_no_room_and_a_failed_download_are_said_plainly(harness, tmp_path, caplog) -> None:
    h, data_dir = await keeper(harness, tmp_path, MEDIA_MAX_FILE_MB="1", MEDIA_MAX_FILES="1")
    big = Attachment(id="big", url="tg://big", title="poster.png", content_type="image/png", size=12 * 1024 * 1024)
    files = Files(a=PICTURE, b=VIDEO)
    h.large.append(plan("", "DOWNLOAD_MEDIA"))
    await h.say("save this poster", attachments=[big], fetch=files)
    assert sent_texts(h)[-1] == "I didn't keep poster.png: it is 12.0 MB, more than the 1 MB I keep of one file."
    assert "big" not in files.fetched  # the size it said was enough to know (too large to look at, too)

    first = Attachment(id="a", url="tg://a", title="a.png", content_type="image/png")
    second = Attachment(id="b", url="tg://b", title="b.mp4", content_type="video/mp4")
    h.large.append(plan("", "DOWNLOAD_MEDIA"))
    await h.say("save these", attachments=[first, second], fetch=files)
    assert sent_texts(h)[-1] == (
        f"Saved a.png as media/ada/a-{short_hash(PICTURE)}.png (3 KB).\n"
        "I didn't keep b.mp4: I already keep 1 file, my limit; my operator can clear some from media/ada/."
    )

    gone = Attachment(id="gone", url="tg://gone", title="old.jpg", content_type="image/jpeg")
    h.large.append(plan("", "DOWNLOAD_MEDIA"))
    outcome = await h.say("save old.jpg", attachments=[gone], fetch=files)
    assert sent_texts(h)[-1] == "I can no longer download old.jpg: send it again with your request."
    assert outcome.actions == ("DOWNLOAD_MEDIA",)

    async def broken(item: Mapping[str, Any]) -> bytes:
        raise RuntimeError("https://api.telegram.org/file/bot123:SECRET/photos/x.jpg refused")

    h.large.append(plan("", "DOWNLOAD_MEDIA"))
    await h.say("save this", attachments=[gone], fetch=broken)
    assert sent_texts(h)[-1] == "The platform would not give me old.jpg just now; try again in a moment."
    assert "SECRET" not in caplog.text and "could not download gone: RuntimeError" in caplog.text
    assert kept(data_dir) == [f"a-{short_hash(PICTURE)}.png"]


async def test_it_is_offered_only_when_asked_with_a_file_shared_and_a_data_directory(harness, tmp_path) -> None:
    h, _ = await keeper(harness, tmp_path)
    offered = h.rt.actions["DOWNLOAD_MEDIA"].validate
    assert offered is not None
    state = State()
    assert not await offered(h.rt, request(h, "save this picture"), state)  # nothing shared
    await shared_earlier(h, Attachment(id="l", url="https://example.com", title="a page", content_type="link"))
    assert not await offered(h.rt, request(h, "save this link"), state)  # a page is no file
    await shared_earlier(h, Attachment(id="p", url="tg://p", title="cat.png", content_type="image/png"))
    assert await offered(h.rt, request(h, "save this picture"), state)
    assert not await offered(h.rt, request(h, "what a nice picture"), state)
    h.rt.shared.data_dir = None  # no daemon runs it (a test's runtime): nowhere to keep it
    assert not await offered(h.rt, request(h, "save this picture"), state)


def test_the_total_bound_refuses_and_nothing_half_written_is_left(tmp_path) -> None:
    limits = MediaLimits(file_bytes=2 * MB, files=10, total_bytes=MB)
    folder = Path("media") / "ada"
    kept_one = save_media(
        tmp_path, folder, b"a" * 700_000, title="", content_type="video/mp4", kind="video", limits=limits
    )
    assert kept_one.path == f"media/ada/video-{short_hash(b'a' * 700_000)}.mp4" and not kept_one.already
    with pytest.raises(NoRoom, match="would pass my limit of 1 MB"):
        save_media(tmp_path, folder, b"b" * 700_000, title="b.mp4", content_type="", kind="video", limits=limits)
    weird = save_media(
        tmp_path, folder, b"c", title="x.<script>", content_type="text/weird", kind="file", limits=limits
    )
    assert weird.path == f"media/ada/x-{short_hash(b'c')}.bin"
    assert sorted(p.name for p in (tmp_path / folder).iterdir()) == sorted(
        [Path(kept_one.path).name, Path(weird.path).name]
    )  # no temporary file left beside them


async def test_two_saves_at_once_keep_within_the_bound(harness, tmp_path) -> None:
    h, data_dir = await keeper(harness, tmp_path, MEDIA_MAX_FILES="1")
    files = Files(a=PICTURE, b=VIDEO)
    said: list[str] = []

    async def reply(answer: Reply) -> list[Memory]:
        said.append(answer.text)
        return [request(h, answer.text)]

    def asking(attachment: Attachment) -> ActionContext:
        message = Memory(entity_id=HUMAN, room_id=h.room, content=Content(text="save this", attachments=(attachment,)))
        return ActionContext(h.rt, message, State(), {}, reply, fetch=files)

    a = Attachment(id="a", url="tg://a", title="a.png", content_type="image/png")
    b = Attachment(id="b", url="tg://b", title="b.mp4", content_type="video/mp4")
    handler = h.rt.actions["DOWNLOAD_MEDIA"].handler
    results = await asyncio.gather(handler(asking(a)), handler(asking(b)))
    assert len(kept(data_dir)) == 1
    assert sorted(r is not None and r.success for r in results) == [False, True]
    assert sum("my limit" in text for text in said) == 1
