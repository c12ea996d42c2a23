"""``troupe memory``: list, show, search, export and forget, as an operator runs them."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main
from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.errors import EXIT_CONFIG
from bot.kernel.record_metadata import RelationshipMetadata, WorldMetadata
from bot.kernel.types import AgentRecord, ChannelType, Component, Entity, Memory, Room, World
from bot.store import Database

ADA = "00000000-0000-0000-0000-00000000000a"
BEA = "00000000-0000-0000-0000-00000000000b"
SAM = "00000000-0000-0000-0000-0000000000a1"
SAM2 = "00000000-0000-0000-0000-0000000000a2"
TOM = "00000000-0000-0000-0000-0000000000a3"
GENERAL = "00000000-0000-0000-0000-00000000c001"
DM = "00000000-0000-0000-0000-00000000c002"
GUILD = "00000000-0000-0000-0000-00000000d001"
T0 = 1_704_164_640_000  # 2024-01-02 03:04 UTC
MINUTE = 60_000


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _seed(path: Path) -> None:
    async with Database(path) as db:
        ada = db.for_agent(ADA)
        await ada.create_agent(AgentRecord(id=ADA, name="Ada"))
        await ada.create_entities(
            [
                Entity(ADA, ADA, names=["Ada"]),
                Entity(SAM, ADA, names=["Sam", "samwise"]),
                Entity(TOM, ADA, names=["Tom"]),
            ]
        )
        await ada.create_world(
            World(
                GUILD,
                ADA,
                name="Shire",
                server_id="g1",
                metadata=WorldMetadata.from_json(
                    {
                        "settings": {
                            "WEBHOOK_TOKEN": {"value": "hook-secret-123", "secret": False},
                            "GREETING": {"value": "hello", "secret": False},
                        }
                    }
                ),
            )
        )
        await ada.create_rooms(
            [
                Room(GENERAL, source="discord", type=ChannelType.GROUP, name="general", world_id=GUILD),
                Room(DM, source="discord", type=ChannelType.DM, name="Sam"),
            ]
        )
        await ada.add_participants([ADA, SAM, TOM], GENERAL)
        await ada.add_participants([ADA, SAM], DM)
        messages = [
            (SAM, GENERAL, "I grow potatoes"),
            (TOM, GENERAL, "I fish on Sundays"),
            (ADA, GENERAL, "Lovely hobbies"),
            (SAM, DM, "my potatoes are secret"),
        ]
        for i, (who, room, text) in enumerate(messages):
            await ada.create_memory(
                Memory(who, room, Content(text=text), created_at=T0 + i * MINUTE, embedding=[1.0] + [0.0] * 383),
                "messages",
                unique=False,
            )
        await ada.create_memory(
            Memory(
                SAM,
                GENERAL,
                Content(text="Sam grows potatoes"),
                created_at=T0 + 10 * MINUTE,
                metadata=MemoryMetadata(entity_ids=(SAM,), source_entity_id=SAM),
            ),
            "facts",
        )
        await ada.create_component(Component("c1", SAM, ADA, GENERAL, "contact", {"phone": "555-0100"}))
        await ada.create_relationship(SAM, TOM, tags=["neighbours"], metadata=RelationshipMetadata(interactions=2))
        bea = db.for_agent(BEA)
        await bea.create_agent(AgentRecord(id=BEA, name="Bea"))


@pytest.fixture
def db_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "data" / "troupe.db"
    run(_seed(path))
    monkeypatch.setenv("TROUPE_DB_PATH", str(path))
    return path


async def _texts(path: Path, agent: str = ADA) -> list[str]:
    async with Database(path) as db:
        return [m.content.text or "" for m in await db.for_agent(agent).list_memories()]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# -- reading ---------------------------------------------------------------------------------------


def test_list_without_an_agent_lists_the_agents(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "list"]) == 0
    assert capsys.readouterr().out == (f"Ada ({ADA}): facts 1, messages 4\nBea ({BEA}): no memories\n")


def test_list_newest_first_with_filters(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "list", "ada", "--limit", "2"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "2024-01-02 03:14  facts      general               Sam: Sam grows potatoes",
        "2024-01-02 03:07  messages   Sam                   Sam: my potatoes are secret",
    ]
    assert main(["memory", "list", ADA, "--room", GENERAL, "--table", "messages"]) == 0
    assert [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines()] == [
        "Lovely hobbies",
        "I fish on Sundays",
        "I grow potatoes",
    ]
    assert main(["memory", "list", "Ada", "--entity", "samwise", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["content"]["text"] for r in records] == [
        "Sam grows potatoes",
        "my potatoes are secret",
        "I grow potatoes",
    ]
    assert set(records[0]) == {
        "id",
        "table",
        "createdAt",
        "roomId",
        "worldId",
        "entityId",
        "unique",
        "content",
        "metadata",
    }


def test_show_gives_the_ids_to_use(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "show", "Ada"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Ada ({ADA})\nmemories: facts 1, messages 4\nrooms:\n  {GENERAL}  GROUP ")
    assert f"  {DM}  DM " in out and f"  {SAM}  Sam, samwise\n" in out and f"  {ADA}" not in out


def test_search_by_keywords(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "search", "Ada", "potatoes", "--table", "messages"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(line.split(": ", 1)[1] for line in lines) == ["I grow potatoes", "my potatoes are secret"]
    assert main(["memory", "search", "Ada", "nothing-like-it"]) == 0
    assert capsys.readouterr().out == "no memories match\n"


def test_export_is_json_without_vectors_or_secrets(
    db_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", "export", "Ada"]) == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert set(data) == {
        "format",
        "version",
        "exportedAt",
        "agent",
        "scope",
        "worlds",
        "rooms",
        "entities",
        "participants",
        "memories",
        "relationships",
    }
    assert data["format"] == "troupe-memory-export" and data["agent"] == {"id": ADA, "name": "Ada"}
    assert len(data["memories"]) == 5 and {m["table"] for m in data["memories"]} == {"messages", "facts"}
    assert "embedding" not in out and "hook-secret-123" not in out
    assert data["worlds"][0]["metadata"]["settings"]["WEBHOOK_TOKEN"]["value"] == "****************"
    assert data["worlds"][0]["metadata"]["settings"]["GREETING"]["value"] == "hello"
    sam = next(e for e in data["entities"] if e["id"] == SAM)
    assert sam["components"][0]["data"] == {"phone": "555-0100"}

    target = tmp_path / "sam.json"
    assert main(["memory", "export", "Ada", "--entity", "Sam", "--out", str(target)]) == 0
    assert "exported 3 memories, 1 people and 2 rooms" in capsys.readouterr().err
    mine = json.loads(target.read_text())
    assert mine["scope"] == {"roomId": None, "entityId": SAM}
    assert [m["content"]["text"] for m in mine["memories"]] == [
        "I grow potatoes",
        "my potatoes are secret",
        "Sam grows potatoes",
    ]
    assert [r["tags"] for r in mine["relationships"]] == [["neighbours"]]


# -- forgetting ------------------------------------------------------------------------------------


def test_forget_a_person_with_yes(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "forget", "Ada", "--entity", "Sam", "--yes"]) == 0
    out = capsys.readouterr().out
    assert f"Forgot Sam, samwise ({SAM}):" in out
    assert "  memories: facts 1, messages 2\n" in out
    assert "components 1" in out and "entities 1" in out and "relationships 1" in out and "rooms 1" in out
    assert run(_texts(db_file)) == ["Lovely hobbies", "I fish on Sundays"]
    assert b"potatoes" not in db_file.read_bytes()
    assert main(["memory", "forget", "Ada", "--entity", SAM, "--yes"]) == 1
    assert "no one called" in capsys.readouterr().err


def test_forget_asks_first_on_a_terminal(
    db_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    assert main(["memory", "forget", "Ada", "--room", DM]) == 1
    out = capsys.readouterr().out
    assert f"Forgetting room {DM} deletes from Ada's memory in {db_file}:\n  memories: messages 1\n" in out
    assert out.endswith("This cannot be undone. Delete? [y/N] nothing was deleted\n")
    assert len(run(_texts(db_file))) == 5
    monkeypatch.setattr("sys.stdin", _Terminal("yes\n"))
    assert main(["memory", "forget", "Ada", "--room", DM]) == 0
    assert "my potatoes are secret" not in run(_texts(db_file))


def test_forget_off_a_terminal_needs_yes(
    db_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["memory", "forget", "Ada", "--all"]) == EXIT_CONFIG
    assert "not deleting without confirmation: run it on a terminal, or add --yes" in capsys.readouterr().err
    assert len(run(_texts(db_file))) == 5


def test_forget_dry_run_and_everything(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "forget", "Ada", "--all", "--dry-run"]) == 0
    assert capsys.readouterr().out.endswith("dry run: nothing was deleted\n")
    assert len(run(_texts(db_file))) == 5
    assert main(["memory", "forget", "Ada", "--all", "--yes"]) == 0
    assert "memories: facts 1, messages 4" in capsys.readouterr().out
    assert run(_texts(db_file)) == []
    assert main(["memory", "forget", "Ada", "--all", "--yes"]) == 1
    assert capsys.readouterr().out.startswith("nothing to forget")


async def _seed_knowledge(path: Path) -> None:
    from bot.store import KnowledgeDocument, KnowledgeSourceRecord

    async with Database(path) as db:
        for agent, doc, text, shared in (
            (ADA, "ada-doc", "Ada keeps bees on the hill.", False),
            (ADA, "ada-shared", "Quiet hours start at ten.", True),
            (BEA, "bea-shared", "The gate closes at dusk.", True),
        ):
            await db.for_agent(agent).put_knowledge_document(
                KnowledgeDocument(doc, doc, [text]), KnowledgeSourceRecord(f"file:/{doc}.md", doc, "h"), shared=shared
            )


async def _knowledge(path: Path, agent: str = ADA) -> list[str]:
    async with Database(path) as db:
        return sorted(h.content.text or "" for h in await db.for_agent(agent).list_memories(tables=["knowledge"]))


def test_forget_all_removes_the_agents_knowledge_and_its_claims_on_shared_knowledge(
    db_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.store import SHARED_KNOWLEDGE_ID

    run(_seed_knowledge(db_file))
    assert main(["memory", "forget", "Ada", "--all", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "memories: documents 2, facts 1, knowledge 2, messages 4" in out
    assert "read again from its character's files at its next start" in out
    assert run(_knowledge(db_file)) == []
    assert run(_knowledge(db_file, SHARED_KNOWLEDGE_ID)) == ["The gate closes at dusk."]  # Bea still lists it


def test_forget_knowledge_keeps_the_conversations(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(_seed_knowledge(db_file))
    assert main(["memory", "forget", "Ada", "--knowledge", "--yes"]) == 0
    assert "memories: documents 2, knowledge 2" in capsys.readouterr().out
    assert run(_knowledge(db_file)) == []
    assert len(run(_texts(db_file))) == 5
    assert main(["memory", "forget", "Ada", "--knowledge", "--yes"]) == 1
    assert capsys.readouterr().out.startswith("nothing to forget")


def test_shared_knowledge_can_be_listed_and_forgotten(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bot.store import SHARED_KNOWLEDGE_ID

    run(_seed_knowledge(db_file))
    assert main(["memory", "list"]) == 0
    assert (
        f"Shared knowledge ({SHARED_KNOWLEDGE_ID}): documents 2, knowledge 2 (knowledge marked shared in "
        "character files; `troupe memory list shared`)"
    ) in capsys.readouterr().out.splitlines()
    assert main(["memory", "list", "shared", "--table", "knowledge"]) == 0
    assert [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines()] == [
        "The gate closes at dusk.",
        "Quiet hours start at ten.",
    ]
    assert main(["memory", "forget", "shared", "--all", "--yes"]) == 0
    assert "memories: documents 2, knowledge 2" in capsys.readouterr().out
    assert run(_knowledge(db_file, SHARED_KNOWLEDGE_ID)) == []
    assert run(_knowledge(db_file)) == ["Ada keeps bees on the hill."]  # an agent's own knowledge stays


# -- errors ----------------------------------------------------------------------------------------


def test_an_ambiguous_name_lists_the_candidates(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def twin() -> None:
        async with Database(db_file) as db:
            await db.for_agent(ADA).create_entities([Entity(SAM2, ADA, names=["sam"])])

    run(twin())
    assert main(["memory", "forget", "Ada", "--entity", "Sam", "--yes"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "troupe memory: 2 people are called 'Sam'; give one of their ids:" in err
    assert f"  Sam, samwise ({SAM})" in err and f"  sam ({SAM2})" in err
    assert len(run(_texts(db_file))) == 5


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["list", "Zed"], 1, f"no agent 'Zed' in the database; known agents: Ada ({ADA}), Bea ({BEA})"),
        (["list", "Ada", "--room", "nowhere"], 1, "no room 'nowhere' for this agent; `troupe memory show AGENT`"),
        (
            ["list", "Ada", "--entity", "sa"],
            1,
            f"no one called 'sa' for this agent; did you mean: Sam, samwise ({SAM})",
        ),
        (["forget", "Ada", "--entity", ADA, "--yes"], EXIT_CONFIG, "that is the agent itself"),
        (["forget", "Ada", "--room", ADA, "--yes"], 1, "no room"),
    ],
)
def test_clear_errors(
    db_file: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str
) -> None:
    assert main(["memory", *argv]) == code
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err + captured.out


def test_no_database_is_a_configuration_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.db"
    assert main(["memory", "--db", str(missing), "list"]) == EXIT_CONFIG
    assert f"no database at {missing}" in capsys.readouterr().err
    assert not missing.exists()


def test_forget_needs_exactly_one_target(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["memory", "forget", "Ada"])
    assert exit_.value.code == 2
    assert "one of the arguments --room --entity --knowledge --all is required" in capsys.readouterr().err


def test_memory_list_into_a_closed_pipe_ends_quietly(db_file: Path, tmp_path: Path) -> None:
    from .test_cli import _with_reader_gone

    proc = _with_reader_gone(
        ["memory", "list", "Ada"], cwd=tmp_path, env={**os.environ, "TROUPE_DB_PATH": str(db_file)}
    )
    assert proc.stderr == ""
    assert proc.returncode == 141


async def test_ctrl_c_at_the_forget_question_exits_at_once_and_deletes_nothing(db_file: Path, tmp_path: Path) -> None:
    from .terminal import CTRL_C, Terminal

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm", "TROUPE_DB_PATH": str(db_file)}
    async with Terminal(
        [str(Path(sys.executable).with_name("troupe")), "memory", "forget", "Ada", "--entity", "Sam"],
        env=env,
        cwd=tmp_path,
    ) as term:
        await term.expect("Delete? [y/N] ")
        started = time.monotonic()
        await term.press(CTRL_C)
        status = await term.wait_exit(timeout=60)
        took = time.monotonic() - started
    assert status == 130, term.screen_text()
    assert took < 3, f"Ctrl-C took {took:.1f} s (it waited for Enter)"
    assert "Traceback" not in term.screen_text()
    assert "my potatoes are secret" in await _texts(db_file)


def test_an_export_file_is_readable_by_its_owner_only(db_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "ada.json"
    old = os.umask(0o022)  # the usual login umask, which would make the file 0644
    try:
        assert main(["memory", "export", "Ada", "--out", str(out)]) == 0
    finally:
        os.umask(old)
    assert oct(out.stat().st_mode & 0o777) == oct(0o600)
    assert json.loads(out.read_text())["agent"]["name"] == "Ada"
