"""troupe's own abilities as tools, called as the tool loop calls them (the ``TOOLBOX`` service):
search_knowledge, process_knowledge ("learn this": text, a link, an attached file) and the links
reader's read_link — what each gives, and what each says when it cannot."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from aiohttp import web

from bot.kernel.content import Attachment, Content
from bot.kernel.tools import ToolCall, ToolContext, ToolResult
from bot.kernel.types import Memory
from bot.runtime.agent import AgentRuntime
from bot.runtime.components import TOOLBOX

from .conftest import Agents

ALL = {"TROUPE_TOOLS": "all", "TROUPE_FETCH_ALLOW_PRIVATE": "true"}
PAGE = """<html><head><title>Hive notes</title></head><body><nav>menu</nav>
<p>The bees of the north meadow swarm in June, led by the queen Clementine.</p></body></html>"""


@pytest.fixture
async def site() -> AsyncIterator[str]:
    """A web page on loopback (read because the tests allow private addresses)."""

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def video(request: web.Request) -> web.Response:
        return web.Response(body=b"\0" * 100, content_type="video/mp4")

    app = web.Application()
    app.router.add_get("/hives", page)
    app.router.add_get("/clip", video)
    runner = web.AppRunner(app)
    await runner.setup()
    server = web.TCPSite(runner, "127.0.0.1", 0)
    await server.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def use(rt: AgentRuntime, name: str, context: ToolContext | None = None, **arguments: Any) -> ToolResult:
    box = rt.get_service(TOOLBOX)
    assert box is not None
    return await box.call(ToolCall("c1", name, arguments), timeout=30, context=context)


def asked(rt: AgentRuntime, *attachments: Attachment) -> ToolContext:
    message = Memory(
        entity_id="admin", room_id=rt.agent_id, content=Content(text="learn this", attachments=attachments)
    )

    async def fetch(attachment: Mapping[str, object]) -> bytes:
        if attachment.get("id") == "a1":
            return b"# Swarms\n\nA swarm leaves the hive with the old queen, usually in late spring."
        raise LookupError("no such file")

    return ToolContext(message, fetch)


async def test_the_own_tools_are_offered_as_troupe_tools_says(agents: Agents) -> None:
    rt = await agents.start(settings=ALL)
    box = rt.get_service(TOOLBOX)
    assert box is not None and {t.name for t in box.tools()} == {"read_link", "search_knowledge", "process_knowledge"}
    plain = await agents.start("Bob")
    assert plain.get_service(TOOLBOX) is None  # no TROUPE_TOOLS, no MCP plugin: no tools


async def test_search_knowledge_gives_the_best_passages_with_their_titles(agents: Agents) -> None:
    rt = await agents.start(knowledge=["Ada's bees live in twelve hives.", "Ada sells honey on Fridays."], settings=ALL)
    found = await use(rt, "search_knowledge", query="where do the bees live")
    assert found.ok and "passages of Ada's knowledge for 'where do the bees live'" in found.text
    assert "[1] Ada's bees live in twelve hives.:" in found.text
    nothing = await use(rt, "search_knowledge", query="submarines")
    assert nothing.ok and nothing.text == "Nothing in Ada's knowledge matches 'submarines'."
    blank = await use(rt, "search_knowledge", query="   ")
    assert not blank.ok and "give the words" in blank.text


async def test_learning_a_text_saves_it_in_the_knowledge_folder_and_it_is_found_at_once(agents: Agents) -> None:
    (agents.dir / "knowledge").mkdir()
    rt = await agents.start(knowledge=[{"directory": "knowledge"}], settings=ALL)
    text = "The hive on the hill is called Beacon and has a blue roof."
    learned = await use(rt, "process_knowledge", asked(rt), text=text, title="Beacon hive")
    assert learned.ok and "can be searched now" in learned.text
    [saved] = (agents.dir / "knowledge").iterdir()
    assert saved.name.startswith("beacon-hive-") and saved.read_text() == f"# Beacon hive\n\n{text}\n"
    found = await use(rt, "search_knowledge", query="blue roof")
    assert found.ok and "Beacon" in found.text
    again = await use(rt, "process_knowledge", asked(rt), text=text, title="Beacon hive")
    assert again.ok and len(list((agents.dir / "knowledge").iterdir())) == 1  # the same text replaces itself


async def test_learning_a_link_and_an_attached_file(agents: Agents, site: str) -> None:
    (agents.dir / "knowledge").mkdir()
    rt = await agents.start(knowledge=[{"directory": "knowledge"}], settings=ALL)
    page = await use(rt, "process_knowledge", asked(rt), url=f"{site}/hives")
    assert page.ok, page.text
    assert "Clementine" in (await use(rt, "search_knowledge", query="Clementine queen")).text
    file = Attachment(id="a1", title="swarms.md", url="https://cdn.example/swarms.md", content_type="text/markdown")
    attached = await use(rt, "process_knowledge", asked(rt, file), attachment="swarms.md")
    assert attached.ok, attached.text
    assert (agents.dir / "knowledge" / "swarms.md").read_text().startswith("# Swarms")  # the file itself
    gone = Attachment(id="a2", title="notes.txt", text="Smoke calms the bees before an inspection.")
    read = await use(rt, "process_knowledge", asked(rt, gone), attachment="notes.txt")
    assert read.ok  # the platform cannot fetch it again: the text troupe read in it is learned
    assert "Smoke calms" in (await use(rt, "search_knowledge", query="smoke inspection")).text
    assert len(list((agents.dir / "knowledge").iterdir())) == 3


async def test_what_cannot_be_learned_says_why(agents: Agents, site: str) -> None:
    rt = await agents.start(settings=ALL)  # no knowledge folder
    cases: list[tuple[dict[str, Any], ToolContext | None, str]] = [
        ({"text": "A long enough text about the bees of the meadow."}, asked(rt), "has no knowledge folder"),
        ({}, asked(rt), "give exactly one of text"),
        ({"text": "x" * 30, "url": f"{site}/hives"}, asked(rt), "give exactly one of text"),
        ({"text": "too short"}, asked(rt), "too short to learn"),
        ({"url": f"{site}/clip"}, asked(rt), "the link was not read: it is a video/mp4 file"),
        ({"url": "file:///etc/passwd"}, asked(rt), "it is not a web link"),
        ({"attachment": "swarms.md"}, asked(rt), "the message has no file attached"),
        ({"attachment": "swarms.md"}, None, "the message has no file attached"),
        (
            {"attachment": "x.md"},
            asked(rt, Attachment(id="a1", title="a.md"), Attachment(title="b.md")),
            "the files are: a.md, b.md",
        ),
        ({"text": "x" * 30, "when": "now"}, asked(rt), "the arguments do not fit process_knowledge"),
    ]
    for arguments, context, reason in cases:
        result = await use(rt, "process_knowledge", context, **arguments)
        assert not result.ok and reason in result.text, (arguments, result.text)


async def test_read_link_reads_a_page_and_refuses_private_addresses_unless_allowed(agents: Agents, site: str) -> None:
    rt = await agents.start(settings=ALL)
    page = await use(rt, "read_link", url=f"{site}/hives")
    assert page.ok and page.text.startswith(f"# Hive notes\n{site}/hives\n\n") and "Clementine" in page.text
    guarded = await agents.start("Bob", settings={"TROUPE_TOOLS": "read_link"})
    refused = await use(guarded, "read_link", url=f"{site}/hives")
    assert not refused.ok and refused.text.startswith("the link was not read:") and "address" in refused.text
