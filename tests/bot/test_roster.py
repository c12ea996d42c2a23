"""The whole troupe in ``troupe status``: daemons, who serves what, files that differ between daemons."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main
from bot.cluster.roster import Difference, Publisher, public_fingerprint, read_troupe, troupe_status
from bot.config.character import load_character
from bot.daemon.control import format_status, format_troupe
from bot.kernel.errors import StoreError
from bot.store import CharacterFile, DaemonEntry, application_name, backend_for
from bot.store.postgres import PostgresDatabase

TTL = 30.0
ADA = "ada-id"
BRANN = "brann-id"
CLEO = "cleo-id"


def write(path: Path, bio: str, token: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"name": "Ada", "bio": [bio], "settings": {"secrets": {"DISCORD_API_TOKEN": token}}}))
    return path


def test_a_difference_says_which_daemons_share_a_copy() -> None:
    plain = Difference("a", "Ada", "ada.json", (("d1",), ("d2",), ("d3",)))
    assert plain.message().startswith("ada.json differs between daemons d1, d2 and d3: ")
    grouped = Difference("a", "Ada", "ada.json", (("d1", "d3"), ("d2",)))
    assert grouped.message() == (
        "ada.json differs between daemons d1, d3 (one copy) and d2 (another): "
        "reload or deploy the same file on every machine"
    )


def test_the_published_fingerprint_follows_the_file_but_not_its_secrets(tmp_path: Path) -> None:
    one = load_character(write(tmp_path / "a" / "ada.json", "Ada counts.", "token-one"))
    rotated = load_character(write(tmp_path / "b" / "ada.json", "Ada counts.", "token-two"))
    edited = load_character(write(tmp_path / "c" / "ada.json", "Ada counts twice.", "token-one"))
    assert public_fingerprint(one) == public_fingerprint(rotated)
    assert public_fingerprint(one) != public_fingerprint(edited)


def daemon(daemon_id: str, **files: CharacterFile) -> DaemonEntry:
    return DaemonEntry(daemon_id, f"host-{daemon_id}", 100, "1.0", 1_764_000_000_000, files)


def ada(fingerprint: str, state: str = "") -> CharacterFile:
    return CharacterFile("Ada", "characters/ada.json", fingerprint, state)


async def test_a_file_that_differs_is_logged_once_naming_it_and_the_daemons(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with PostgresDatabase(postgres_url) as a1b2, PostgresDatabase(postgres_url) as c3d4:
        for db, daemon_id in ((a1b2, "a1b2"), (c3d4, "c3d4")):
            await db.leases.acquire(f"daemon:{daemon_id}", daemon_id, TTL)  # both alive
        first = Publisher(a1b2, lambda: daemon("a1b2", **{ADA: ada("1" * 64, "running")}), 1.0)
        entry = daemon("c3d4", **{ADA: ada("2" * 64)})
        second = Publisher(c3d4, lambda: entry, 1.0)
        with caplog.at_level(logging.WARNING, logger="bot.cluster.roster"):
            assert await first.compare() == []  # alone so far: nothing to compare with
            (found,) = await second.compare()
            await second.compare()  # a reload that changes nothing: not said again
        assert found.daemons == ["c3d4", "a1b2"]
        assert [r.getMessage() for r in caplog.records] == [
            "characters/ada.json differs between daemons c3d4 and a1b2: reload or deploy the same file on every machine"
        ]
        entry = daemon("c3d4", **{ADA: ada("1" * 64)})  # the same file deployed on both
        assert await second.compare() == []


async def test_differences_only_count_the_daemons_alive(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as db:
        await db.roster.publish(daemon("gone", **{ADA: ada("1" * 64)}))  # killed: its presence lease is over
        await db.leases.acquire("daemon:here", "here", TTL)
        assert await Publisher(db, lambda: daemon("here", **{ADA: ada("2" * 64)}), 1.0).compare() == []


async def test_status_shows_every_daemon_who_serves_what_and_what_waits(postgres_url: str) -> None:
    first = PostgresDatabase(postgres_url, application_name=application_name("d1"))
    second = PostgresDatabase(postgres_url, application_name=application_name("d2"))
    async with first, second:
        await first.roster.publish(
            daemon("d1", **{ADA: ada("1" * 64, "running"), CLEO: CharacterFile("Cleo", "c.json", "3" * 64)})
        )
        await second.roster.publish(
            daemon("d2", **{ADA: ada("2" * 64), BRANN: CharacterFile("Brann", "b.json", "4" * 64, "failed")})
        )
        await first.roster.publish(daemon("d0"))  # killed an hour ago, not pruned yet
        await first.execute("UPDATE daemons SET seen_at = seen_at - 3000000 WHERE id = 'd0'")
        await first.leases.acquire("daemon:d1", "d1", TTL)
        await second.leases.acquire("daemon:d2", "d2", TTL)
        ada_lease = await first.leases.acquire(f"agent:{ADA}", "d1", TTL)
        await second.leases.acquire(f"agent:{BRANN}", "d2", TTL)
        await second.leases.acquire(f"shard:{BRANN}:1", "d2", TTL)  # Brann's Discord bot in 3 shards
        await first.leases.acquire(f"shard:{BRANN}:2", "d1", TTL)
        assert ada_lease is not None
        status = await troupe_status(first, this="d1")

    assert [(d["id"], d["alive"], d["this"], d["serves"]) for d in status["daemons"]] == [
        ("d0", False, False, 0),
        ("d1", True, True, 1),
        ("d2", True, False, 1),
    ]
    d0, d1, d2 = status["daemons"]
    assert d0["heartbeat_s"] is not None and d0["heartbeat_s"] >= 3000
    assert d1["host"] == "host-d1" and d1["pid"] == 100 and d1["heartbeat_s"] is not None and d1["heartbeat_s"] < 5
    assert d1["connections"] == 1 and d2["connections"] == 1  # each pool's one, by its name
    by_name = {c["name"]: c for c in status["characters"]}
    assert [c["name"] for c in status["characters"]] == ["Ada", "Brann", "Cleo"]
    assert (by_name["Ada"]["daemon"], by_name["Ada"]["epoch"], by_name["Ada"]["state"]) == ("d1", 1, "running")
    assert by_name["Ada"]["expires_s"] is not None and 25 < by_name["Ada"]["expires_s"] <= TTL
    assert by_name["Ada"]["differs"] == ["d1", "d2"]
    assert (by_name["Brann"]["daemon"], by_name["Brann"]["state"]) == ("d2", "failed")
    assert by_name["Brann"]["shards"] == {"1": "d2", "2": "d1"} and by_name["Ada"]["shards"] == {}
    assert [d["shards"] for d in status["daemons"]] == [0, 1, 1]
    assert (by_name["Cleo"]["daemon"], by_name["Cleo"]["state"], by_name["Cleo"]["epoch"]) == (None, "waiting", None)
    assert status["warnings"] == [
        "characters/ada.json differs between daemons d1 and d2: reload or deploy the same file on every machine"
    ]

    text = format_troupe(dict(status))
    lines = text.splitlines()
    assert lines[0] == "the troupe: 2 daemons alive, 3 characters (1 running, 1 failed, 1 waiting for a daemon)"
    assert lines[1].split() == ["daemon", "host", "pid", "started", "heartbeat", "connections", "serves"]
    assert lines[2].split()[-4:] == ["ago,", "gone", "-", "0"]
    assert lines[3].startswith("  d1 (this one)  host-d1") and "2025-11-24 16:00 UTC" in lines[3]
    assert lines[6].split()[:3] == ["Ada", "d1", "1"] and lines[6].endswith("running; its file differs between daemons")
    assert lines[8].split() == ["Cleo", "-", "-", "-", "-", "waiting", "for", "a", "daemon"]
    assert lines[-1] == "  warning: " + status["warnings"][0]
    daemon_status = {"state": "running", "pid": 100, "uptime_s": 5, "agents": [], "troupe": status}
    assert format_status(daemon_status).splitlines()[1:] == lines


def test_troupe_status_reads_the_database_when_no_daemon_runs_here(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def seed() -> None:
        async with PostgresDatabase(postgres_url) as db:
            await db.roster.publish(daemon("elsewhere", **{ADA: ada("1" * 64, "running")}))
            await db.leases.acquire("daemon:elsewhere", "elsewhere", TTL)
            await db.leases.acquire(f"agent:{ADA}", "elsewhere", TTL)

    asyncio.run(seed())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TROUPE_CONTROL_SOCKET", str(tmp_path / "control.sock"))  # nobody listens
    monkeypatch.setenv("TROUPE_DATABASE_URL", postgres_url)
    assert main(["status"]) == 0
    out, err = capsys.readouterr()
    assert "no troupe daemon is running" in err and "the troupe as postgresql://" in err
    assert out.splitlines()[0] == "the troupe: 1 daemon alive, 1 character (1 running)"
    assert "elsewhere" in out.splitlines()[2] and out.splitlines()[4].split()[:3] == ["Ada", "elsewhere", "1"]
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["troupe"]["characters"][0]["daemon"] == "elsewhere"


def test_troupe_status_without_a_daemon_or_a_shared_database_still_says_there_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TROUPE_CONTROL_SOCKET", str(tmp_path / "control.sock"))
    monkeypatch.delenv("TROUPE_DATABASE_URL", raising=False)
    assert main(["status"]) == 69
    assert "no troupe daemon is running" in capsys.readouterr().err


async def test_a_database_that_cannot_be_read_leaves_the_daemons_own_status_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def unreachable(prefix: str = "") -> list[Any]:
        raise StoreError("database read failed: connection refused")

    async with backend_for(str(tmp_path / "troupe.db")) as db:
        monkeypatch.setattr(db.leases, "records", unreachable)
        troupe = await read_troupe(db, this="d1")
    assert dict(troupe) == {
        "daemons": [],
        "characters": [],
        "warnings": [],
        "error": "database read failed: connection refused",
    }
    assert format_troupe(dict(troupe)) == (
        "the troupe: cannot read the shared database: database read failed: connection refused"
    )


def test_troupe_status_says_the_daemon_is_down_before_the_database_fails_too_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TROUPE_CONTROL_SOCKET", str(tmp_path / "control.sock"))
    monkeypatch.setenv("TROUPE_DATABASE_URL", "postgresql://troupe:s3cret-pw@127.0.0.1:1/troupe")  # nothing listens
    assert main(["status"]) == 78
    err = capsys.readouterr().err
    first, second = err.splitlines()[:2]
    assert "no troupe daemon is running" in first and "postgresql://troupe:***@127.0.0.1:1/troupe" in first
    assert second.startswith("troupe: cannot open PostgreSQL database") and "s3cret-pw" not in err
