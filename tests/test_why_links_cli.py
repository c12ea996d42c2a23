"""``troupe why`` by a platform's own name for a message: a Discord or Telegram link, or a bare id.

The ids are made here by the platforms' own mappings, so a change to how a platform names its
messages that ``bot.kernel.message_refs`` does not follow fails these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.main import main
from bot.kernel.messages import Status
from bot.kernel.traces import MessageTrace
from bot.kernel.types import AgentRecord, ChannelType, Entity, Room
from bot.store import Database
from platforms.discord._mapping import discord_id
from platforms.telegram._mapping import message_id as telegram_message_id
from platforms.telegram._mapping import room_id as telegram_room_id

from .test_why_cli import seeded_database

ADA = "00000000-0000-0000-0000-00000000000a"
BEA = "00000000-0000-0000-0000-00000000000b"
SAM = "00000000-0000-0000-0000-0000000000a1"
CHAT = -1001234567890  # a supergroup: its private link says t.me/c/1234567890/…
OTHER_CHAT = -1009876543210
SNOWFLAKE = 1180000000000000042
T0 = 1_704_164_640_000  # 2024-01-02 03:04 UTC


async def _seed(path: Path) -> None:
    async with Database(path) as db:
        for agent, name in ((ADA, "Ada"), (BEA, "Bea")):
            store = db.for_agent(agent)
            await store.create_agent(AgentRecord(id=agent, name=name))
            await store.create_entities([Entity(agent, agent, names=[name]), Entity(SAM, agent, names=["Sam"])])
            rooms = [
                Room(telegram_room_id(agent, chat), source="telegram", type=ChannelType.GROUP, name=title, server_id=str(chat))
                for chat, title in ((CHAT, "Writers"), (OTHER_CHAT, "Readers"))
            ]  # fmt: skip
            await store.create_rooms([*rooms, Room(discord_id(agent, 77), source="discord", type=ChannelType.GROUP)])
        ada, bea = db.for_agent(ADA), db.for_agent(BEA)
        common = {"entity_name": "Sam", "said_at": T0, "duration_ms": 5}
        # Message 42 of the Writers chat, heard by both; message 42 of Readers, by Ada alone.
        for store, agent, name, status in ((ada, ADA, "Ada", Status.IGNORED), (bea, BEA, "Bea", Status.REPLIED)):
            await store.record_trace(
                MessageTrace(
                    telegram_message_id(agent, CHAT, 42), agent, telegram_room_id(agent, CHAT), SAM, status,
                    "small model: IGNORE" if status is Status.IGNORED else "named", agent_name=name,
                    platform="telegram", ended_at=T0 + 10, **common,  # type: ignore[arg-type]
                )
            )  # fmt: skip
        await ada.record_trace(
            MessageTrace(
                telegram_message_id(ADA, OTHER_CHAT, 42), ADA, telegram_room_id(ADA, OTHER_CHAT), SAM, Status.MUTED,
                "muted", agent_name="Ada", platform="telegram", ended_at=T0 + 20, **common,  # type: ignore[arg-type]
            )
        )  # fmt: skip
        await ada.record_trace(
            MessageTrace(
                discord_id(ADA, SNOWFLAKE), ADA, discord_id(ADA, 77), SAM, Status.STOPPED, "asked to stay out",
                agent_name="Ada", platform="discord", ended_at=T0 + 30, **common,  # type: ignore[arg-type]
            )
        )  # fmt: skip


@pytest.fixture
def db_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return seeded_database(_seed, tmp_path, monkeypatch)


def _heard(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("message ")]


def test_a_discord_message_link_finds_its_trace(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for link in (
        f"https://discord.com/channels/900/77/{SNOWFLAKE}",
        f"https://canary.discordapp.com/channels/@me/77/{SNOWFLAKE}/",
    ):
        assert main(["why", link]) == 0
        out = capsys.readouterr().out
        assert _heard(out) == [f"message {discord_id(ADA, SNOWFLAKE)}, heard by Ada"]
        assert "  outcome   stopped: asked to stay out" in out


def test_a_telegram_link_to_a_private_chat_finds_that_chat_s_message(
    db_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for link in ("https://t.me/c/1234567890/42", "t.me/c/1234567890/7/42?single"):  # the second in topic 7
        assert main(["why", link]) == 0
        out = capsys.readouterr().out
        assert set(_heard(out)) == {
            f"message {telegram_message_id(ADA, CHAT, 42)}, heard by Ada",
            f"message {telegram_message_id(BEA, CHAT, 42)}, heard by Bea",
        }
        assert "outcome   ignored: small model: IGNORE" in out and "outcome   replied: named" in out
        assert "muted" not in out  # message 42 of the other chat is another message


def test_a_public_link_or_a_bare_id_finds_the_message_in_every_chat_it_may_be(
    db_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["why", "https://t.me/writers_room/42"]) == 0
    public = _heard(capsys.readouterr().out)
    assert main(["why", "42"]) == 0
    bare = _heard(capsys.readouterr().out)
    expected = {
        f"message {telegram_message_id(ADA, CHAT, 42)}, heard by Ada",
        f"message {telegram_message_id(BEA, CHAT, 42)}, heard by Bea",
        f"message {telegram_message_id(ADA, OTHER_CHAT, 42)}, heard by Ada",
    }
    assert set(public) == set(bare) == expected and len(bare) == 3
    assert main(["why", str(SNOWFLAKE), "--json"]) == 0  # a bare Discord id
    assert '"status": "stopped"' in capsys.readouterr().out


def test_nothing_matching_says_what_was_looked_for(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {
        "https://discord.com/channels/900/77/555": "no Discord message 555 has a trace",
        "https://t.me/c/1234567890/43": "no Telegram message 43 of chat -1001234567890 has a trace",
        "https://t.me/writers_room/43": "no Telegram message 43 of @writers_room (looked for in every Telegram chat",
        "43": "no message 43 (a Discord id, or a Telegram id in any of the characters' chats) or room '43' has a trace",
    }
    for target, said in cases.items():
        assert main(["why", target]) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and said in captured.err, captured.err
        assert "the message's link" in captured.err
