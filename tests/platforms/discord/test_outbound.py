"""Sending: chunks, safe mentions, uploads, retries — against a stand-in channel."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import aiohttp
import discord
import pytest

from bot.kernel.errors import PartlySent
from bot.kernel.outgoing import files_in
from platforms.discord import _outbound
from platforms.discord._outbound import SAFE_MENTIONS, SendGaveUp, embeds_of, send_chunks, uploads_of


class Channel:
    """Records what discord.py's ``channel.send`` was called with; fails as scripted (``None``:
    that call works)."""

    id = 200

    def __init__(self, failures: Iterable[BaseException | None] = ()) -> None:
        self.calls: list[dict[str, Any]] = []
        self.failures = list(failures)

    async def send(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            raise failure
        return f"sent {len(self.calls)}"


class Reference:
    def to_reference(self, fail_if_not_exists: bool = True) -> str:
        assert fail_if_not_exists is False  # a deleted original must not lose the reply
        return "ref"


def http_error(status: int, retry_after: float | None = None) -> discord.HTTPException:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    response = type("R", (), {"status": status, "reason": "x", "headers": headers})()
    return discord.HTTPException(response, {"message": "boom", "code": 0})


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_outbound, "_BACKOFF_S", 0.001)
    monkeypatch.setattr(_outbound, "_BACKOFF_CAP_S", 0.002)


async def test_long_reply_is_chunked_first_chunk_replies_files_ride_on_the_last() -> None:
    channel = Channel()
    files, _ = await uploads_of(files_in({"files": [{"data": b"hello", "name": "a.txt"}]}), 1024)
    reference = Reference()  # a stand-in for the discord.Message replied to
    sent = await send_chunks(channel, "x " * 1500, files=files, reference=reference)  # type: ignore[arg-type]
    assert sent == ["sent 1", "sent 2"]
    first, last = channel.calls
    assert first["reference"] == "ref" and first["mention_author"] is False and "files" not in first
    assert "reference" not in last and [f.filename for f in last["files"]] == ["a.txt"]
    assert all(c["allowed_mentions"] is SAFE_MENTIONS for c in channel.calls)


def test_replies_never_ping_everyone_here_or_roles() -> None:
    # What Discord receives: only user mentions parse; replied_user absent means no ping.
    assert dict(SAFE_MENTIONS.to_dict()) == {"parse": ["users"]}


async def test_a_file_alone_is_one_message_and_nothing_sends_nothing() -> None:
    channel = Channel()
    files, _ = await uploads_of(files_in({"files": [{"data": b"x", "name": "x.bin"}]}), 1024)
    await send_chunks(channel, "", files=files)
    assert len(channel.calls) == 1 and channel.calls[0]["content"] is None
    assert await send_chunks(Channel(), "   ") == []


async def test_transient_failures_are_retried_and_others_are_not() -> None:
    flaky = Channel([http_error(503), aiohttp.ClientConnectionError()])
    assert await send_chunks(flaky, "hi") == ["sent 3"]
    forbidden = Channel(
        [discord.Forbidden(type("R", (), {"status": 403, "reason": "x"})(), {"message": "no", "code": 50013})]
    )
    with pytest.raises(discord.Forbidden):
        await send_chunks(forbidden, "hi")
    assert len(forbidden.calls) == 1
    down = Channel([http_error(502)] * 5)
    with pytest.raises(
        SendGaveUp,
        match=r"sending failed 3 time\(s\) within the 60 s send deadline "
        r"\(last: HTTP 502\)",
    ):
        await send_chunks(down, "hi")
    assert len(down.calls) == 3


async def test_a_send_that_hangs_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_outbound, "_SEND_TIMEOUT_S", 0.05)

    class Stuck(Channel):
        async def send(self, **kwargs: Any) -> Any:
            self.calls.append(kwargs)
            await asyncio.sleep(10)

    stuck = Stuck()
    with pytest.raises(
        SendGaveUp,
        match=r"sending failed 3 time\(s\) within the 60 s send deadline "
        r"\(last: TimeoutError\)",
    ):
        await send_chunks(stuck, "hi")
    assert len(stuck.calls) == 3


async def test_rate_limits_that_outlast_discord_py_are_waited_out_as_discord_says_within_the_deadline() -> None:
    limited = Channel([http_error(429, retry_after=0.01)] * 6)  # discord.py gave up six times over
    assert await send_chunks(limited, "hi", deadline_s=5) == ["sent 7"]
    with pytest.raises(
        SendGaveUp,
        match=r"Discord's rate limit asked to wait 30 s, past the 5 s send deadline "
        r"\(DISCORD_SEND_DEADLINE_S\)",
    ):
        await send_chunks(Channel([http_error(429, retry_after=30)]), "hi", deadline_s=5)


async def test_a_send_held_past_the_deadline_inside_discord_py_gives_up() -> None:
    class Held(Channel):  # discord.py sleeping out a long rate limit inside channel.send
        async def send(self, **kwargs: Any) -> Any:
            self.calls.append(kwargs)
            await asyncio.sleep(10)

    held = Held()
    with pytest.raises(SendGaveUp, match=r"no answer from Discord within the 0\.2 s send deadline"):
        await send_chunks(held, "hi", deadline_s=0.2)
    assert len(held.calls) == 1


async def test_every_piece_carries_a_nonce_that_stays_the_same_when_it_is_retried() -> None:
    flaky = Channel([http_error(503)])
    await send_chunks(flaky, "x " * 1500)
    first, retried, second = (call["nonce"] for call in flaky.calls)
    assert first == retried and first != second and len(first) <= 25  # Discord drops a repeated nonce


async def test_text_no_encoder_takes_is_repaired() -> None:
    channel = Channel()
    await send_chunks(channel, "odd \ud800 text")
    assert channel.calls[0]["content"] == "odd \ufffd text"


async def test_uploads_read_paths_and_bytes_and_name_what_cannot_go(tmp_path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# notes")
    files, note = await uploads_of(
        files_in(
            {
                "files": [
                    str(path),
                    {"path": str(path), "name": "renamed.md", "description": "my notes"},
                    {"data": b"1", "name": "one"},
                    str(tmp_path / "missing.txt"),
                    {"data": b"x" * 2048, "name": "big.bin"},
                    {"nothing": True},
                ]
            }
        ),
        1024,
    )
    assert [f.filename for f in files] == ["notes.md", "renamed.md", "one"]
    assert files[1].description == "my notes"
    assert note == (
        "(I couldn't send missing.txt: it cannot be read.)\n"
        "(I couldn't send big.bin: it is 2 KB, more than the 1 KB Discord takes.)"
    )


async def test_more_than_ten_files_send_the_first_ten_and_say_so() -> None:
    files, note = await uploads_of(files_in({"files": [{"data": b"x", "name": f"{n}.txt"} for n in range(12)]}), 1024)
    assert len(files) == 10
    assert note.splitlines() == [
        "(I couldn't send 10.txt: Discord takes at most 10 files in one message.)",
        "(I couldn't send 11.txt: Discord takes at most 10 files in one message.)",
    ]


async def test_embeds_ride_on_the_last_message() -> None:
    channel = Channel()
    embeds = embeds_of([{"title": "A cat", "image": {"url": "attachment://cat.png"}}, "nonsense"])
    await send_chunks(channel, "x " * 1500, embeds=embeds)
    first, last = channel.calls
    assert "embeds" not in first and [e.title for e in last["embeds"]] == ["A cat"]


async def test_a_message_stopped_part_way_says_which_pieces_went_out() -> None:
    forbidden = discord.Forbidden(type("R", (), {"status": 403, "reason": "x"})(), {"message": "no", "code": 50013})
    channel = Channel([None, forbidden])
    with pytest.raises(PartlySent, match=r"only 1 of 2 parts went out: 403 no$") as caught:
        await send_chunks(channel, "x " * 1500)
    assert caught.value.sent == ["sent 1"] and caught.value.__cause__ is forbidden
