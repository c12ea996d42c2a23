"""End to end on Discord: "save that picture" keeps a file shared in an earlier message (fetched
from its URL on the CDN, here the fake's) in Ada's folder of the daemon's data directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from platforms.discord._mapping import on_cdn

from .scene import plan

PICTURE = b"\x89PNG\r\n\x1a\n" + b"a cat on a keyboard " * 100


async def test_a_file_shared_earlier_is_saved_from_discord_s_cdn(scene, data_dir: Path) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("A cat!"), plan("", "DOWNLOAD_MEDIA")]
    await s.fake.user_says(s.sam, s.general, "Ada, look", attachments=[("cat.png", PICTURE, "image/png")])
    await s.fake.wait_for_sent(s.ada, 1)
    await s.fake.user_says(s.sam, s.general, "Ada, save that picture please")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    name = f"cat-{hashlib.sha256(PICTURE).hexdigest()[:12]}.png"
    assert sent[1].content == f"Saved cat.png as media/ada/{name} (2 KB)."
    assert (data_dir / "media" / "ada" / name).read_bytes() == PICTURE


@pytest.mark.parametrize(
    ("url", "downloaded"),
    [
        ("https://cdn.discordapp.com/attachments/1/22/cat.png?ex=1&hm=2", True),
        ("https://media.discordapp.net/attachments/1/22/cat.png", True),
        ("http://127.0.0.1:9/attachments/1/22/cat.png", True),  # DISCORD_API_BASE's host
        ("https://cdn.discordapp.com/attachments/1/23/cat.png", False),  # another attachment
        ("https://evil.example/attachments/1/22/cat.png", False),
        ("file:///etc/passwd", False),
    ],
)
def test_only_discord_s_own_address_of_the_attachment_is_downloaded(url: str, downloaded: bool) -> None:
    assert on_cdn(url, "22", "http://127.0.0.1:9/api/v10") is downloaded
