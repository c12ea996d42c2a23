"""The console's "Why" page over real loopback HTTP: the traces of every character, searched by
message (id, link), room, person, character and outcome, a page at a time; one message's page
with the same words as ``troupe why``."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

import aiohttp
import pytest

from bot.daemon.console import ConsoleServer
from bot.kernel.content import Content, MemoryMetadata, MemoryType
from bot.kernel.messages import Status
from bot.kernel.trace_text import trace_lines
from bot.kernel.traces import ActionRun, MessageTrace, ModelCall
from bot.kernel.types import AgentRecord, ChannelType, Entity, Memory, Room
from bot.store import Database, Store
from platforms.telegram._mapping import message_id as telegram_message_id

from .test_console import TOKEN, FakeDaemon, http, log_in, settings

__all__ = ["http"]  # the fixture, imported to be used here

ADA = "00000000-0000-0000-0000-00000000000a"
BEA = "00000000-0000-0000-0000-00000000000b"
SAM = "00000000-0000-0000-0000-0000000000a1"
UMA = "00000000-0000-0000-0000-0000000000a2"
BSAM = "00000000-0000-0000-0000-0000000000b1"  # Sam as Bea knows him: ids are each character's own
GENERAL = "00000000-0000-0000-0000-00000000c001"
WRITERS = "00000000-0000-0000-0000-00000000c002"
CHAT = -1001234567890
T0 = 1_704_164_640_000  # 2024-01-02 03:04 UTC
TG_42 = telegram_message_id(BEA, CHAT, 42)


async def _said(store: Store, message_id: str, who: str, room: str, text: str, at: int) -> None:
    meta = MemoryMetadata(type=MemoryType.MESSAGE)
    content = Content(text=text, source="telegram")
    memory = Memory(id=message_id, entity_id=who, room_id=room, content=content, metadata=meta, created_at=at)
    await store.create_memory(memory, "messages")


async def _seed(db: Database) -> tuple[Store, Store]:
    ada, bea = db.for_agent(ADA), db.for_agent(BEA)
    for store, agent, name, sam, room, title in (
        (ada, ADA, "Ada", SAM, GENERAL, "general"),
        (bea, BEA, "Bea", BSAM, WRITERS, "Writers"),
    ):
        await store.create_agent(AgentRecord(id=agent, name=name))
        people = [Entity(agent, agent, names=[name]), Entity(sam, agent, names=["Sam"])]
        await store.create_entities([*people, *([Entity(UMA, agent, names=["Uma"])] if agent == ADA else [])])
        await store.create_rooms(
            [Room(room, source="telegram", type=ChannelType.GROUP, name=title, server_id=str(CHAT))]
        )
    await _said(ada, "m-1", SAM, GENERAL, "Ada, what is the capital of France? I keep forgetting it, sorry.", T0)
    await _said(ada, "r-1", ADA, GENERAL, "Paris, of course.", T0 + 1_000)
    await _said(ada, "m-2", UMA, GENERAL, "anyone seen my umbrella", T0 + 60_000)
    await _said(bea, TG_42, BSAM, WRITERS, "the ending needs work", T0 + 120_000)
    await ada.record_trace(
        MessageTrace(
            "m-1", ADA, GENERAL, SAM, Status.REPLIED, "named", agent_name="Ada", entity_name="Sam", platform="telegram",
            said_at=T0, ended_at=T0 + 1_234, duration_ms=1_234, rule="named",
            model_calls=(ModelCall("TEXT_LARGE", "openai", 1180.4, model="gpt-4o", prompt_tokens=812, completion_tokens=23),),
            actions=(ActionRun("REPLY", True),), reply_ids=("r-1",),
        )
    )  # fmt: skip
    await ada.record_trace(
        MessageTrace(
            "m-2", ADA, GENERAL, UMA, Status.IGNORED, "small model: IGNORE", agent_name="Ada", entity_name="Uma",
            platform="telegram", said_at=T0 + 60_000, ended_at=T0 + 60_400, rule="undecided", decision="small model",
            model_calls=(ModelCall("TEXT_SMALL", "openai", 398.0, model="gpt-4o-mini"),),
        )
    )  # fmt: skip
    await bea.record_trace(
        MessageTrace(
            TG_42, BEA, WRITERS, BSAM, Status.MUTED, "muted", agent_name="Bea", entity_name="Sam", platform="telegram",
            said_at=T0 + 120_000, ended_at=T0 + 120_010, rule="muted",
        )
    )  # fmt: skip
    return ada, bea


class WhyDaemon(FakeDaemon):
    """The fake daemon, with two characters running on a real store."""

    def __init__(self, stores: dict[str, tuple[str, Store]]) -> None:
        super().__init__()
        self.agents = {
            agent: SimpleNamespace(name=name, runtime=SimpleNamespace(agent_id=agent, store=store))
            for agent, (name, store) in stores.items()
        }


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[ConsoleServer]:
    async with Database(tmp_path / "data" / "troupe.db") as db:
        ada, bea = await _seed(db)
        server = ConsoleServer(
            WhyDaemon({ADA: ("Ada", ada), BEA: ("Bea", bea)}), settings(tmp_path, console_token=TOKEN)
        )
        await server.start()
        yield server
        await server.close()


async def _get(http: aiohttp.ClientSession, url: str, status: int = 200) -> str:
    async with http.get(url) as response:
        text = await response.text()
        assert response.status == status, text
        return text


def _rows(page: str) -> list[tuple[str, str]]:
    """Each listed trace as (message id, character)."""
    return re.findall(r'<tr class="trace" data-message="([^"]+)" data-agent="([^"]+)"', page)


async def test_the_why_page_lists_every_character_s_traces_newest_first(
    console: ConsoleServer, http: aiohttp.ClientSession
) -> None:
    async with http.get(f"{console.url}why", allow_redirects=False) as response:
        assert response.status == 303 and response.headers["Location"] == "/login"
    await log_in(http, console)
    page = await _get(http, f"{console.url}why")
    assert '<a href="/why" aria-current="page">Why</a>' in page
    assert _rows(page) == [(TG_42, "Bea"), ("m-2", "Ada"), ("m-1", "Ada")]
    row = re.search(r'data-message="m-2".*?</tr>', page, re.S)
    assert row is not None
    for shown in ("2024-01-02 03:05:00", "Ada", "Uma", "general · telegram", "anyone seen my umbrella", "ignored"):
        assert shown in row.group(0), shown
    assert "small model: IGNORE" in row.group(0) and 'href="/why/m-2"' in row.group(0)
    first = re.search(r'data-message="m-1".*?</tr>', page, re.S)
    assert first is not None and "Ada, what is the capital of France? I keep forgetting it, sorry." in first.group(0)
    assert TOKEN not in page


async def test_search_by_room_person_character_outcome_and_link(
    console: ConsoleServer, http: aiohttp.ClientSession
) -> None:
    await log_in(http, console)
    searches = {
        "room=Gener": [("m-2", "Ada"), ("m-1", "Ada")],
        f"room={WRITERS}": [(TG_42, "Bea")],
        "person=sam": [(TG_42, "Bea"), ("m-1", "Ada")],
        "character=bea": [(TG_42, "Bea")],
        "outcome=replied": [("m-1", "Ada")],
        "person=Sam&character=Ada&outcome=replied": [("m-1", "Ada")],
        "person=nobody": [],
        "room=nowhere": [],
        # A message as its platform names it, as troupe why takes it.
        f"q={quote('https://t.me/c/1234567890/42')}": [(TG_42, "Bea")],
        "q=42": [(TG_42, "Bea")],
        "q=m-1": [("m-1", "Ada")],
        f"q={GENERAL}": [("m-2", "Ada"), ("m-1", "Ada")],
    }
    for query, expected in searches.items():
        assert _rows(await _get(http, f"{console.url}why?{query}")) == expected, query
    none = await _get(http, f"{console.url}why?q={quote('https://discord.com/channels/1/2/3')}")
    assert 'role="alert">No trace of Discord message 3.' in none
    # A wrong field is named, the rest of the search still runs.
    wrong = await _get(http, f"{console.url}why?outcome=lost&character=Ada&limit=0&before=x")
    assert "outcome: &#39;lost&#39; is none of replied, acted, send_failed, ignored," in wrong
    assert "limit: &#39;0&#39; is not a number from 1 to 200" in wrong
    assert "before: not where a page ends: follow the page&#39;s own links" in wrong
    assert _rows(wrong) == [("m-2", "Ada"), ("m-1", "Ada")]


async def test_pages_follow_each_other_without_overlap(console: ConsoleServer, http: aiohttp.ClientSession) -> None:
    await log_in(http, console)
    first = await _get(http, f"{console.url}why?limit=2")
    assert _rows(first) == [(TG_42, "Bea"), ("m-2", "Ada")]
    older = re.search(r'<a href="([^"]+)" rel="next">Older</a>', first)
    assert older is not None
    second = await _get(http, console.url + html.unescape(older.group(1)).lstrip("/"))
    assert _rows(second) == [("m-1", "Ada")]
    assert 'rel="next"' not in second and ">Newest</a>" in second


async def test_a_message_s_page_tells_its_trace_in_troupe_why_s_words(
    console: ConsoleServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    await log_in(http, console)
    page = await _get(http, f"{console.url}why/m-1")
    assert "<h1>message m-1, heard by Ada</h1>" in page
    async with Database(tmp_path / "data" / "troupe.db") as db:
        trace = await db.for_agent(ADA).get_trace("m-1")
    assert trace is not None
    for line in trace_lines(trace, room_name="general"):  # the formatter troupe why prints with
        assert re.search(
            rf"<th scope=\"row\">{line.label}</th>\s*<td>(<span[^>]*>)?{re.escape(html.escape(line.text))}", page
        )
    assert "TEXT_LARGE via openai (gpt-4o), 1180 ms, tokens 812 in, 23 out" in page
    assert f"r-1 (in room general ({GENERAL}))" in page
    assert '<th scope="row">it said</th><td>Paris, of course.</td>' in page
    assert "capital of France" in page and "troupe why m-1" in page

    # A link reaches the same page; a room's id goes to its list; nothing matching says what was looked for.
    linked = await _get(http, f"{console.url}why/{quote('https://t.me/c/1234567890/42', safe='')}")
    assert f"<h1>message {TG_42}, heard by Bea</h1>" in linked and "outcome-muted" in linked
    async with http.get(f"{console.url}why/{GENERAL}", allow_redirects=False) as response:
        assert response.status == 303 and response.headers["Location"] == f"/why?q={GENERAL}"
    missing = await _get(http, f"{console.url}why/no-such-message", status=404)
    assert "No trace of message or room &#39;no-such-message&#39;" in missing
    assert TOKEN not in page + linked + missing
