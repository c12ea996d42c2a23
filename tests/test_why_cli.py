"""``troupe why``: how a message ended and why, or a room's last messages, as an operator asks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.kernel.errors import EXIT_CONFIG
from bot.kernel.messages import Status
from bot.kernel.traces import ActionRun, MessageTrace, ModelCall
from bot.kernel.types import AgentRecord, ChannelType, Entity, Room
from bot.store import Database

ADA = "00000000-0000-0000-0000-00000000000a"
BEA = "00000000-0000-0000-0000-00000000000b"
SAM = "00000000-0000-0000-0000-0000000000a1"
BSAM = "00000000-0000-0000-0000-0000000000b1"
GENERAL = "00000000-0000-0000-0000-00000000c001"
BGENERAL = "00000000-0000-0000-0000-00000000c002"
T0 = 1_704_164_640_000  # 2024-01-02 03:04 UTC


async def _seed(path: Path) -> None:
    async with Database(path) as db:
        for agent, person, room in ((ADA, SAM, GENERAL), (BEA, BSAM, BGENERAL)):
            store = db.for_agent(agent)
            await store.create_agent(AgentRecord(id=agent, name="Ada" if agent == ADA else "Bea"))
            await store.create_entities([Entity(agent, agent, names=["x"]), Entity(person, agent, names=["Sam"])])
            await store.create_rooms([Room(room, source="telegram", type=ChannelType.GROUP, name="general")])
        ada, bea = db.for_agent(ADA), db.for_agent(BEA)
        common = {"entity_name": "Sam", "platform": "telegram", "duration_ms": 1234}
        await ada.record_trace(
            MessageTrace(
                "m-1", ADA, GENERAL, SAM, Status.REPLIED, "named", agent_name="Ada", said_at=T0, ended_at=T0 + 1234,
                rule="named", model_calls=(ModelCall("TEXT_LARGE", "openai", 1180.4, model="gpt-4o", prompt_tokens=812, completion_tokens=23),),
                actions=(ActionRun("REPLY", True),), reply_ids=("r-1",), **common,  # type: ignore[arg-type]
            )
        )  # fmt: skip
        await ada.record_trace(
            MessageTrace(
                "m-2", ADA, GENERAL, SAM, Status.IGNORED, "troupe: Bea answers", agent_name="Ada",
                said_at=T0 + 60_000, ended_at=T0 + 61_000, rule="undecided",
                decision="troupe: ignore (Bea answers)",
                model_calls=(ModelCall("TEXT_SMALL", "openai", 300.0, False, "ModelUnavailable"),),
                **common,  # type: ignore[arg-type]
            )
        )  # fmt: skip
        await bea.record_trace(
            MessageTrace(
                "m-2", BEA, BGENERAL, BSAM, Status.REPLIED, "troupe: Bea answers", agent_name="Bea",
                said_at=T0 + 60_000, ended_at=T0 + 62_000, **common,  # type: ignore[arg-type]
            )
        )  # fmt: skip


def seeded_database(
    seed: Callable[[Path], Coroutine[object, object, None]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A database made by ``seed``, as the daemon's (``TROUPE_DB_PATH``)."""
    path = tmp_path / "data" / "troupe.db"
    asyncio.run(seed(path))
    monkeypatch.setenv("TROUPE_DB_PATH", str(path))
    return path


@pytest.fixture
def db_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return seeded_database(_seed, tmp_path, monkeypatch)


def test_a_message_prints_its_whole_trace(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why", "m-1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "message m-1, heard by Ada",
        f"  from      Sam ({SAM}) on telegram, room {GENERAL}",
        "  when      said 2024-01-02 03:04:00 UTC, handled in 1234 ms",
        "  outcome   replied: named",
        "  gate      named",
        "  model     TEXT_LARGE via openai (gpt-4o), 1180 ms, tokens 812 in, 23 out",
        "  actions   REPLY ok",
        f"  reply     r-1 (in room {GENERAL})",
    ]


def test_a_message_heard_by_two_characters_prints_both(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why", "m-2"]) == 0
    out = capsys.readouterr().out
    assert "heard by Ada" in out and "heard by Bea" in out
    assert "  gate      undecided; decided by troupe: ignore (Bea answers)" in out
    assert "  model     TEXT_SMALL via openai, 300 ms, failed (ModelUnavailable)" in out


def test_a_room_prints_its_last_messages_one_line_each(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why", GENERAL]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "2024-01-02 03:05:00  Sam -> Ada  ignored: troupe: Bea answers  [m-2]",
        "2024-01-02 03:04:00  Sam -> Ada  replied: named  [m-1]",
    ]
    assert main(["why", GENERAL, "--limit", "1", "--json"]) == 0
    (only,) = json.loads(capsys.readouterr().out)
    assert (only["messageId"], only["status"], only["entityName"]) == ("m-2", "ignored", "Sam")


def test_json_of_a_message(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why", "m-1", "--json"]) == 0
    (trace,) = json.loads(capsys.readouterr().out)
    assert trace["modelCalls"] == [
        {
            "type": "TEXT_LARGE",
            "provider": "openai",
            "ms": 1180.4,
            "model": "gpt-4o",
            "promptTokens": 812,
            "completionTokens": 23,
        }
    ]
    assert (trace["status"], trace["roomId"], trace["replyIds"]) == ("replied", GENERAL, ["r-1"])


def test_an_unknown_message_says_so_and_exits_1(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why", "no-such-message"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "troupe why: no message or room 'no-such-message' has a trace" in captured.err


def test_a_bad_limit_and_a_missing_database_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TROUPE_DB_PATH", str(tmp_path / "none.db"))
    assert main(["why", "m-1"]) == EXIT_CONFIG
    assert "no database at" in capsys.readouterr().err
    assert main(["why", "m-1", "--limit", "0"]) == EXIT_CONFIG
    assert "--limit must be at least 1, not 0" in capsys.readouterr().err
