"""The console's Memory and Knowledge pages over real loopback HTTP, against a real agent runtime
on a real database: a person's facts, relationships and messages, a search, forgetting with a
confirmation; knowledge sources, an upload (refused when too large or unreadable), a resync and
a trial search; each change audited, without secrets or message text."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.config.character import load_character
from bot.daemon.console import ConsoleServer
from bot.daemon.hosted import HostedAgent
from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.lifecycle import AgentState
from bot.kernel.record_metadata import RelationshipMetadata
from bot.kernel.types import ChannelType, Entity, Memory, Room
from bot.runtime.agent import AgentRuntime
from bot.store import Database

from .test_console import TOKEN, FakeDaemon, audit, log_in, settings

SAM = "00000000-0000-0000-0000-0000000000a1"
TOM = "00000000-0000-0000-0000-0000000000a3"
GENERAL = "00000000-0000-0000-0000-00000000c001"
DM = "00000000-0000-0000-0000-00000000c002"
T0 = 1_704_164_640_000  # 2024-01-02 03:04 UTC
SECRET = "sk-character-secret-0123456789"


class Daemon(FakeDaemon):
    """The fake daemon, with real agents and a checkpoint that counts."""

    def __init__(self, agents: dict[str, HostedAgent]) -> None:
        super().__init__()
        self.agents: dict[str, Any] = dict(agents)
        self.checkpoints = 0

    async def checkpoint(self) -> bool:
        self.checkpoints += 1
        return True


@dataclass
class Site:
    console: ConsoleServer
    daemon: Daemon
    ada: AgentRuntime
    folder: Path

    def url(self, path: str) -> str:
        return f"{self.console.url}{path.lstrip('/')}"


async def _seed(rt: AgentRuntime) -> None:
    store, me = rt.store, rt.agent_id
    await store.create_entities([Entity(SAM, me, names=["Sam", "samwise"]), Entity(TOM, me, names=["Tom"])])
    await store.create_rooms(
        [
            Room(GENERAL, source="telegram", type=ChannelType.GROUP, name="general"),
            Room(DM, source="telegram", type=ChannelType.DM, name="Sam"),
        ]
    )
    await store.add_participants([me, SAM, TOM], GENERAL)
    await store.add_participants([me, SAM], DM)
    said = [(SAM, GENERAL, "I grow potatoes"), (TOM, GENERAL, "I fish on Sundays"), (SAM, DM, "my potatoes are secret")]
    for i, (who, room, text) in enumerate(said):
        await store.create_memory(Memory(who, room, Content(text=text), created_at=T0 + i * 60_000), "messages", False)
    await store.create_memory(
        Memory(
            SAM,
            GENERAL,
            Content(text="Sam grows potatoes", type="fact"),
            created_at=T0 + 600_000,
            metadata=MemoryMetadata(entity_ids=(SAM,), source_entity_id=SAM),
        ),
        "facts",
    )
    await store.create_relationship(SAM, TOM, tags=["neighbours"], metadata=RelationshipMetadata(interactions=2))


@pytest.fixture
async def pages() -> AsyncIterator[str]:
    """Web pages on loopback for Ada's knowledge: ``/hours`` reads, ``/gone`` answers 404."""

    async def hours(request: web.Request) -> web.Response:
        body = "<html><head><title>Opening hours</title></head><body><p>The mill shop opens at nine.</p></body></html>"
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/hours", hours)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


@pytest.fixture
async def site(tmp_path: Path, pages: str) -> AsyncIterator[Site]:
    folder = tmp_path / "characters" / "ada-knowledge"
    folder.mkdir(parents=True)
    (folder / "bees.md").write_text("# Bees\n\nAda's hives stand on the roof of the old mill.\n")
    path = tmp_path / "characters" / "ada.json"
    path.write_text(
        json.dumps(
            {
                "name": "Ada",
                "bio": "Ada is a test character.",
                "knowledge": [
                    "Ada keeps bees.",
                    {"directory": "ada-knowledge"},
                    {"url": f"{pages}/hours"},
                    {"url": f"{pages}/gone"},
                ],
                "settings": {
                    "KNOWLEDGE_MAX_FILE_MB": "0.01",
                    "TROUPE_FETCH_ALLOW_PRIVATE": "true",
                    "secrets": {"SOME_API_KEY": SECRET},
                },
            }
        )
    )
    (tmp_path / "characters" / "brann.json").write_text(json.dumps({"name": "Brann", "bio": "Brann is stopped."}))
    async with Database(tmp_path / "troupe.db") as db:
        result = load_character(path, environ={})
        character = result.raise_for_problems()
        ada = AgentRuntime(character, db.for_agent(character.agent_id), environ={})
        await ada.start()
        knowledge = ada.get_service("knowledge")
        assert knowledge is not None
        await knowledge.wait()
        await _seed(ada)
        brann_result = load_character(tmp_path / "characters" / "brann.json", environ={})
        brann = brann_result.raise_for_problems()
        daemon = Daemon(
            {
                character.agent_id: HostedAgent(result, "ada", ada, AgentState.RUNNING),
                brann.agent_id: HostedAgent(brann_result, "brann", None, AgentState.FAILED, error="it broke"),
            }
        )
        server = ConsoleServer(daemon, settings(tmp_path, console_token=TOKEN))
        await server.start()
        try:
            yield Site(server, daemon, ada, folder)
        finally:
            await server.close()
            await ada.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        yield session


def text_of(page: str) -> str:
    """The page's words, without tags, as a reader sees them."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", page)).split())


async def get(http: aiohttp.ClientSession, url: str, status: int = 200) -> str:
    async with http.get(url) as response:
        page = await response.text()
        assert response.status == status, page
        return page


# -- Memory ----------------------------------------------------------------------------------------


async def test_memory_shows_the_people_a_person_and_a_search(site: Site, http: aiohttp.ClientSession) -> None:
    await log_in(http, site.console)
    ada = site.ada.agent_id
    page = await get(http, site.url("/memory"))  # two characters: a choice
    assert 'href="/memory"' in page and f'href="/memory/{ada}"' in page and "Brann" in text_of(page)

    page = await get(http, site.url(f"/memory/{ada}"))
    words = text_of(page)
    assert "People Ada knows" in words and "Sam samwise" not in words
    assert f'href="/memory/{ada}/people/{SAM}">Sam</a>' in page and "Sam, samwise" in words and "Tom" in words

    page = await get(http, site.url(f"/memory/{ada}/people/{SAM}"))
    words = text_of(page)
    assert "What Ada remembers of Sam" in words
    assert re.search(r"Facts .*fact Sam grows potatoes .*Relationships", words)
    assert re.search(r"Relationships .*Sam Tom neighbours 2", words)
    assert re.search(r"Recent messages .*Sam my potatoes are secret .*general I grow potatoes", words)
    assert "I fish on Sundays" not in words  # Tom's message
    assert f'href="/memory/{ada}/people/{SAM}/forget"' in page

    # A person may be named by name too; an unknown one gets a page that says so.
    assert "What Ada remembers of Tom" in text_of(await get(http, site.url(f"/memory/{ada}/people/tom")))
    page = await get(http, site.url(f"/memory/{ada}/people/Nobody"), status=404)
    assert "Ada knows no one called 'Nobody'" in text_of(page) and 'role="alert"' in page

    page = await get(http, site.url(f"/memory/{ada}?q=potatoes"))
    found = text_of(page.split('class="memories found"')[1].split("</table>")[0])
    assert "I grow potatoes" in found and "my potatoes are secret" in found and "Sundays" not in found
    assert "No memory of Ada holds “beetroot”" in text_of(await get(http, site.url(f"/memory/{ada}?q=beetroot")))
    # Words are words: quotes and search operators find nothing special, and break nothing.
    assert "I grow potatoes" in text_of(await get(http, site.url(f"/memory/{ada}?q=%22grow%22+AND+*+NEAR(")))
    page = await get(http, site.url(f"/memory/{ada}?q={'x' * 501}"), status=400)
    assert "search with at most 500" in text_of(page)


async def test_a_long_list_of_people_is_cut_saying_how_to_reach_the_rest(
    site: Site, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.daemon.console.pages import memory

    monkeypatch.setattr(memory, "_PEOPLE_SHOWN", 1)
    await log_in(http, site.console)
    page = await get(http, site.url(f"/memory/{site.ada.agent_id}"))
    assert page.count("data-person=") == 1 and "… and 1 more: troupe memory show lists everyone" in text_of(page)


async def test_a_character_that_is_not_running_or_unknown_gets_a_page_saying_so(
    site: Site, http: aiohttp.ClientSession
) -> None:
    await log_in(http, site.console)
    brann = next(i for i, h in site.daemon.agents.items() if h.name == "Brann")
    for page_path, title in (("memory", "memory"), ("knowledge", "knowledge")):
        page = await get(http, site.url(f"/{page_path}/{brann}"), status=409)
        assert f"Brann is not running (failed): its {title} can be shown once it runs" in text_of(page)
        page = await get(http, site.url(f"/{page_path}/not-an-agent"), status=404)
        assert "No character of this daemon has that id" in text_of(page) and "Ada" in text_of(page)


async def test_forgetting_a_person_asks_first_says_what_goes_and_is_audited(
    site: Site, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    csrf = await log_in(http, site.console)
    ada = site.ada.agent_id
    forget = site.url(f"/memory/{ada}/people/{SAM}/forget")
    page = await get(http, forget)
    words = text_of(page)
    assert f"Forget Sam, samwise ({SAM})?" in words
    assert "memories: facts 1, messages 2" in words and "This cannot be undone" in words
    assert await site.ada.store.get_entity(SAM) is not None  # asking deleted nothing

    # A forged form deletes nothing.
    async with http.post(forget, data={"csrf": "forged"}) as response:
        assert response.status == 403
    assert await site.ada.store.get_entity(SAM) is not None

    async with http.post(forget, data={"csrf": csrf}) as response:
        assert response.status == 200
        words = text_of(await response.text())
    assert f"Ada forgot Sam, samwise ({SAM})" in words and "memories: facts 1, messages 2" in words
    assert site.daemon.checkpoints == 1

    # Gone from the store and from the pages; Tom and his message stay.
    store = site.ada.store
    assert await store.get_entity(SAM) is None and await store.get_room(DM) is None
    assert [m.content.text for m in await store.list_memories(tables=["messages", "facts"])] == ["I fish on Sundays"]
    words = text_of(await get(http, site.url(f"/memory/{ada}")))
    assert "Sam" not in words and "Tom" in words
    await get(http, site.url(f"/memory/{ada}/people/{SAM}"), status=404)

    (entry,) = [e for e in audit(tmp_path) if e["what"] == "memory forgotten"]
    assert entry["detail"] == f"Ada: Sam, samwise ({SAM})"
    assert "potatoes" not in json.dumps(audit(tmp_path))


# -- Knowledge -------------------------------------------------------------------------------------


async def test_knowledge_lists_its_sources_and_tries_a_search(
    site: Site, http: aiohttp.ClientSession, pages: str
) -> None:
    await log_in(http, site.console)
    ada = site.ada.agent_id
    page = await get(http, site.url(f"/knowledge/{ada}"))
    words = text_of(page)
    assert re.search(
        r"Last sync: \d{4}-\d\d-\d\d \d\d:\d\d UTC: 1 file, 1 fact and 2 web pages, 3 fragments "
        r"\(3 new, 0 changed, 0 removed, 1 skipped \(listed below\)\)",
        words,
    )
    problems = re.search(r'<ul class="problems".*?</ul>', page, re.S)
    assert problems is not None
    assert text_of(problems.group(0)) == (
        f"{pages}/gone skipped: not read: the site answered 404 Not Found; nothing is stored from it yet"
    )
    row = re.search(r'data-source="Opening hours".*?</tr>', page, re.S)
    assert row is not None
    assert re.search(rf"Opening hours {re.escape(pages)}/hours web page 1 \d+ B", text_of(row.group(0)))
    row = re.search(r'data-source="ada-knowledge/bees.md".*?</tr>', page, re.S)
    assert row is not None and str(site.folder / "bees.md") in row.group(0)
    assert re.search(r"ada-knowledge/bees.md .* file 1 \d+ B", text_of(row.group(0)))
    assert 'data-source="Ada keeps bees."' in page
    assert f"saved in {site.folder}" in words and "at most 10.2 KB" in words

    page = await get(http, site.url(f"/knowledge/{ada}?q=Where+are+the+hives%3F"))
    found = text_of(page.split('class="found"')[1].split("</table>")[0])
    assert re.search(
        r"Score Fragment Similarity Keyword Vector 0\.\d{4} ada-knowledge/bees.md # Bees .*old mill\. — #1 —", found
    )
    words = text_of(await get(http, site.url(f"/knowledge/{ada}?q=submarines")))
    assert "Nothing in Ada's knowledge matches “submarines”: it would say it does not know" in words


async def test_an_uploaded_file_is_saved_synced_searchable_and_audited(
    site: Site, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    csrf = await log_in(http, site.console)
    ada = site.ada.agent_id
    form = aiohttp.FormData()
    form.add_field("csrf", csrf)
    form.add_field("file", b"The ferry to Tarrow leaves at 7:40 from pier nine.", filename="ferry.md")
    # As htmx sends it: the token in the header, so the body is read once, by the page, in chunks.
    async with http.post(
        site.url(f"/knowledge/{ada}/upload"), data=form, headers={"X-CSRF-Token": csrf, "HX-Request": "true"}
    ) as response:
        page = await response.text()
        assert response.status == 200, page
    words = text_of(page)
    assert f"ferry.md saved in {site.folder} and synced:" in words and "1 new" in words
    assert (site.folder / "ferry.md").read_text().startswith("The ferry to Tarrow")
    assert sorted(p.name for p in site.folder.iterdir()) == ["bees.md", "ferry.md"]
    assert 'data-source="ada-knowledge/ferry.md"' in page

    found = text_of(await get(http, site.url(f"/knowledge/{ada}?q=When+does+the+ferry+to+Tarrow+leave")))
    assert "ada-knowledge/ferry.md The ferry to Tarrow leaves at 7:40 from pier nine." in found

    async with http.post(site.url(f"/knowledge/{ada}/resync"), data={"csrf": csrf}) as response:
        assert response.status == 200
        assert "Synced:" in text_of(await response.text()) and "0 new" in text_of(await response.text())
    entries = [(e["what"], e.get("detail")) for e in audit(tmp_path)]
    assert ("knowledge uploaded", "Ada: ferry.md") in entries and ("knowledge resynced", "Ada") in entries


async def test_an_upload_too_large_or_unreadable_is_refused_with_a_message_and_nothing_saved(
    site: Site, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    csrf = await log_in(http, site.console)
    ada = site.ada.agent_id
    refusals = [
        (
            "big.txt",
            b"x" * 20_000,
            413,
            "big.txt is larger than 10.2 KB, the most Ada's knowledge reads (KNOWLEDGE_MAX_FILE_MB)",
        ),
        (
            "notes.docx",
            b"PK\x03\x04 not text",
            400,
            "Not uploaded: notes.docx cannot be used as knowledge: not a Word document (.docx files are zip archives, this is not one).",
        ),
        (
            "notes.odt",
            b"PK\x03\x04 not text",
            400,
            "notes.odt cannot be used as knowledge: a word-processor document: save it as .docx, PDF or text; troupe reads text, Markdown, JSON, PDF and Word (.docx).",
        ),
        ("raw.txt", b"\x00\x01\x02", 400, "a binary file, not text"),
    ]
    for name, data, status, says in refusals:
        form = aiohttp.FormData()
        form.add_field("file", data, filename=name)
        async with http.post(
            site.url(f"/knowledge/{ada}/upload"), data=form, headers={"X-CSRF-Token": csrf}
        ) as response:
            page = await response.text()
            assert response.status == status, page
        assert says in text_of(page) and 'role="alert"' in page
    # Well over the console's 1 MiB body limit: still the page's own answer, read in chunks.
    form = aiohttp.FormData()
    form.add_field("file", b"y" * (3 * 1024 * 1024), filename="huge.txt")
    async with http.post(site.url(f"/knowledge/{ada}/upload"), data=form, headers={"X-CSRF-Token": csrf}) as response:
        assert response.status == 413 and "huge.txt is larger than 10.2 KB" in text_of(await response.text())
    # A forged form is refused before anything is read.
    form = aiohttp.FormData()
    form.add_field("csrf", "forged")
    form.add_field("file", b"text", filename="forged.md")
    async with http.post(site.url(f"/knowledge/{ada}/upload"), data=form) as response:
        assert response.status == 403
    assert sorted(p.name for p in site.folder.iterdir()) == ["bees.md"]
    assert not [e for e in audit(tmp_path) if e["what"] == "knowledge uploaded"]


async def test_no_secret_in_the_memory_and_knowledge_pages(site: Site, http: aiohttp.ClientSession) -> None:
    await log_in(http, site.console)
    ada = site.ada.agent_id
    for path in (
        "/memory",
        f"/memory/{ada}",
        f"/memory/{ada}/people/{SAM}",
        f"/memory/{ada}/people/{SAM}/forget",
        "/knowledge",
        f"/knowledge/{ada}?q=bees",
    ):
        page = await get(http, site.url(path))
        assert SECRET not in page and TOKEN not in page, path
