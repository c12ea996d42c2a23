"""End to end on Telegram: "save that picture" keeps a photo shared earlier in the chat in Ada's
folder of the daemon's data directory, downloaded through the real python-telegram-bot from the fake."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from .scene import plan

PHOTO = b"\xff\xd8\xff" + b"a cat on a keyboard " * 100


async def test_a_photo_shared_earlier_is_saved_where_the_reply_says(
    scene, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("A cat!"), plan("", "DOWNLOAD_MEDIA")]
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_says(s.sam, chat, "look", photo=("cat.jpg", PHOTO, "image/jpeg"))
    await s.fake.wait_for_sent(s.ada, 1)
    with caplog.at_level(logging.DEBUG):
        await s.fake.user_says(s.sam, chat, "save that picture please")
        sent = await s.fake.wait_for_sent(s.ada, 2)
    name = f"photo-{hashlib.sha256(PHOTO).hexdigest()[:12]}.jpg"
    assert sent[1]["text"] == f"Saved photo.jpg as media/ada/{name} (2 KB)."
    assert (data_dir / "media" / "ada" / name).read_bytes() == PHOTO
    assert "token-ada" not in caplog.text  # the file's URL carries the bot token


async def test_a_file_over_what_telegram_lets_bots_download_is_said_so(scene, data_dir: Path) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("", "DOWNLOAD_MEDIA"))
    chat = s.fake.private(s.sam, s.ada)
    film = ("film.mp4", b"\x00\x00\x00\x18ftypmp42", "video/mp4")
    await s.fake.user_says(s.sam, chat, "save this video", document=film, file_size=21 * 1024 * 1024)
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert sent[0]["text"] == (
        "I can't download film.mp4: it is larger than the 20 MB the Telegram Bot API lets bots download."
    )
    assert not (data_dir / "media").exists() or not any((data_dir / "media").rglob("*.mp4"))
