"""A message as its platform names it: which links and ids are references, and which are not."""

from __future__ import annotations

import pytest

from bot.kernel.ids import unique_uuid
from bot.kernel.message_refs import Platform, PlatformRef, parse_platform_ref


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://discord.com/channels/1/2/3", PlatformRef(Platform.DISCORD, "3")),
        ("discord.com/channels/@me/2/3#x", PlatformRef(Platform.DISCORD, "3")),
        ("https://ptb.discordapp.com/channels/1/2/3", PlatformRef(Platform.DISCORD, "3")),
        (" https://t.me/c/123/45 ", PlatformRef(Platform.TELEGRAM, "45", chat="-100123")),
        ("https://telegram.me/c/123/9/45?single", PlatformRef(Platform.TELEGRAM, "45", chat="-100123")),
        ("https://t.me/writers_room/45", PlatformRef(Platform.TELEGRAM, "45", chat_name="writers_room")),
        ("45", PlatformRef(Platform.ANY, "45")),
    ],
)
def test_links_and_bare_ids_are_platform_references(text: str, expected: PlatformRef) -> None:
    assert parse_platform_ref(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "m-1",
        "7d3c0e4a-5f0b-4a57-9a55-1c2f6f0b8e11",
        "https://example.com/channels/1/2/3",
        "https://discord.com/channels/1/2",
        "https://t.me/c/abc/45",
        "https://t.me/joinchat/45x",
        "-45",
        "1" * 21,
    ],
)
def test_troupe_ids_and_other_text_are_not(text: str) -> None:
    assert parse_platform_ref(text) is None


def test_the_ids_a_reference_stands_for() -> None:
    agent = "00000000-0000-0000-0000-00000000000a"
    assert PlatformRef(Platform.DISCORD, "3").message_ids(agent, ["-1001"]) == [unique_uuid(agent, "discord:3")]
    assert PlatformRef(Platform.TELEGRAM, "4", chat="-1002").message_ids(agent, ["-1001"]) == [
        unique_uuid(agent, "telegram:message:-1002:4")
    ]
    assert PlatformRef(Platform.ANY, "5").message_ids(agent, ["-1001", "-1001", "7"]) == [
        unique_uuid(agent, "discord:5"),
        unique_uuid(agent, "telegram:message:-1001:5"),
        unique_uuid(agent, "telegram:message:7:5"),
    ]
