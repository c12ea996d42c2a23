"""The console's Chat page over real loopback HTTP, against a daemon in this process whose one
character has a model key (the fake OpenAI) and no platform token: it runs on the web platform.
The event stream, a message and its streamed reply, an upload too large, two people with a
conversation each, presses that do not belong, and the guards. Also: which platforms a character
runs on with the console on and off."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.config.character import load_characters
from bot.config.settings import DaemonSettings
from bot.daemon.console.pages.chat import MAX_UPLOAD_BYTES
from bot.daemon.daemon import Daemon
from bot.daemon.platform_plans import CONSOLE_OFF, plans_for, preflight, refusal
from bot.kernel.buttons import Button, Menu, Press
from bot.kernel.errors import SendError
from bot.kernel.lifecycle import DaemonState
from bot.kernel.outgoing import Reply
from bot.kernel.types import Memory
from bot.runtime.agent import AgentRuntime
from platforms.web import web_adapter

from ..fakes.openai_server import FakeOpenAIServer
from ..platforms.discord.scene import plan

KEY = "sk-chat-test-0123456789"
TOKEN = "console-token-for-chat-tests-0123456789"


def _prompt(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body.get("messages", []))


def _answer(body: dict[str, Any]) -> str:
    """Ada answers with what she was told last, in three words: "you said X"."""
    prompt = _prompt(body)
    if "Write the next turn of Ada" in prompt:
        said = re.findall(r"(?:Sam|Kim): (\S+)", prompt)
        return plan(f"you said {said[-1] if said else 'nothing'}")
    return "<response><thought>fine</thought><facts></facts><relationships></relationships></response>"


@dataclass
class Site:
    url: str
    agent: str
    daemon: Daemon
    openai: FakeOpenAIServer

    @property
    def runtime(self) -> AgentRuntime:
        runtime = self.daemon.agents[self.agent].runtime
        assert runtime is not None
        return runtime


def _ada(tmp_path: Path) -> Path:
    path = tmp_path / "ada.json"
    path.write_text(json.dumps({"name": "Ada", "bio": ["Ada is a test character."], "plugins": []}))
    return path


@pytest.fixture
async def site(tmp_path: Path, unused_tcp_port: int) -> AsyncIterator[Site]:
    async with FakeOpenAIServer() as openai:
        openai.script_chat(_answer)
        environ = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": openai.url}
        settings = DaemonSettings(
            _env_file=None,
            data_dir=tmp_path / "data",
            console_port=unused_tcp_port,
            console_token=TOKEN,
            control_socket=tmp_path / "control.sock",
        )
        daemon = Daemon(settings, load_characters([_ada(tmp_path)], environ=environ), environ)
        running = asyncio.create_task(daemon.run())
        async with asyncio.timeout(30):
            while daemon.state is not DaemonState.RUNNING:
                await asyncio.sleep(0.02)
        yield Site(f"http://127.0.0.1:{unused_tcp_port}/", next(iter(daemon.agents)), daemon, openai)
        daemon.stop()
        assert await asyncio.wait_for(running, 60) == 0


async def _logged_in(site: Site, person: str | None = "Sam") -> tuple[aiohttp.ClientSession, str]:
    """A logged-in client (who gave ``person`` as their name) and its CSRF token."""
    http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    async with http.post(f"{site.url}login", data={"token": TOKEN}) as response:
        page = await response.text()
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, page
    csrf = found.group(1)
    if person is not None:
        async with http.post(f"{site.url}chat/name", data={"csrf": csrf, "name": person}) as response:
            assert response.status == 200 and response.url.path == f"/chat/{site.agent}", await response.text()
    return http, csrf


def _message(text: str, *files: tuple[str, bytes, str]) -> aiohttp.FormData:
    form = aiohttp.FormData(default_to_multipart=True)
    form.add_field("text", text)
    for name, data, kind in files:
        form.add_field("file", data, filename=name, content_type=kind)
    return form


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The server-sent events of a stream: (name, data)."""
    name = ""
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            yield name, json.loads(line[len("data: ") :] or "{}")
        elif line == "" and name == "typing":
            yield name, {}
            name = ""


async def _until_said(stream: AsyncIterator[tuple[str, dict[str, Any]]], text: str) -> list[tuple[str, dict[str, Any]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    async with asyncio.timeout(30):
        async for name, data in stream:
            seen.append((name, data))
            if name == "message" and text in data["html"] and "from-character" in data["html"]:
                return seen
    raise AssertionError(f"the stream ended before {text!r}: {seen}")


async def _stored(runtime: AgentRuntime, room_id: str) -> list[Memory]:
    return await runtime.store.get_memories(table="messages", room_id=room_id)


async def test_a_message_is_answered_on_the_event_stream_as_it_is_written(site: Site) -> None:
    http, csrf = await _logged_in(site)
    async with http:
        async with http.get(f"{site.url}chat/{site.agent}/events") as stream:
            assert stream.status == 200 and stream.headers["Content-Type"] == "text/event-stream"
            assert await stream.content.readline() == b": listening\n"
            async with http.post(
                f"{site.url}chat/{site.agent}/send", data=_message("hello"), headers={"X-CSRF-Token": csrf}
            ) as sent:
                assert sent.status == 200
                fragment = await sent.text()
            assert 'class="line from-person"' in fragment and "hello" in fragment
            seen = await _until_said(_events(stream), "you said hello")
        names = [name for name, _ in seen]
        assert names[0] == "message" and "hello" in seen[0][1]["html"]  # the person's own, for every tab
        partials = [data["text"] for name, data in seen if name == "partial"]
        assert partials and partials[-1] == "you said hello"  # streamed: the text so far, growing
        assert all(b.startswith(a) for a, b in itertools.pairwise(partials))
        assert names.index("partial") < len(names) - 1
        # The page shows the conversation from the store.
        async with http.get(f"{site.url}chat/{site.agent}") as page:
            body = await page.text()
        assert body.index("hello") < body.index("you said hello") and "You are Sam." in body
        assert KEY not in body and TOKEN not in body


async def test_the_event_stream_ends_when_the_character_stops_running_on_the_web(site: Site) -> None:
    http, _ = await _logged_in(site)
    async with http, http.get(f"{site.url}chat/{site.agent}/events") as stream:
        assert await stream.content.readline() == b": listening\n"
        adapter = web_adapter(site.runtime)
        assert adapter is not None
        await adapter.close()  # as when the daemon stops or the character reloads
        async with asyncio.timeout(30):
            # The blank line after the comment, then the end: the browser connects again to what runs next.
            assert await stream.content.read() == b"\n"


async def test_a_message_to_a_character_that_is_stopping_says_so(site: Site) -> None:
    adapter = web_adapter(site.runtime)
    assert adapter is not None
    conversation = await adapter.open("Sam")
    await site.runtime.close()
    with pytest.raises(SendError, match="^Ada is stopping here; try again in a moment$"):
        await adapter.hear(conversation, "hello")


async def test_an_upload_too_large_is_refused_with_a_clear_413_and_nothing_is_heard(site: Site) -> None:
    http, csrf = await _logged_in(site)
    async with http:
        big = ("big.bin", b"x" * (MAX_UPLOAD_BYTES + 1), "application/octet-stream")
        async with http.post(
            f"{site.url}chat/{site.agent}/send", data=_message("take this", big), headers={"X-CSRF-Token": csrf}
        ) as response:
            assert response.status == 413
            assert await response.text() == "The files are larger than 20 MiB together; send smaller ones."
        adapter = web_adapter(site.runtime)
        assert adapter is not None
        assert await _stored(site.runtime, (await adapter.open("Sam")).room_id) == []
        # A file within the limit is kept, and served back to the page as a download.
        small = ("notes.txt", b"remember the milk", "text/plain")
        async with http.post(
            f"{site.url}chat/{site.agent}/send", data=_message("", small), headers={"X-CSRF-Token": csrf}
        ) as response:
            fragment = await response.text()
        link = re.search(r'href="(/chat/[^"]+/files/[^"]+)" download="notes.txt"', fragment)
        assert link is not None, fragment
        async with http.get(f"{site.url}{link.group(1)[1:]}") as response:
            assert await response.read() == b"remember the milk"
            assert response.headers["Content-Disposition"].startswith("attachment;")
        async with http.get(f"{site.url}chat/{site.agent}/files/not-a-file") as response:
            assert response.status == 404 and "gone" in await response.text()


async def test_two_people_each_have_their_own_conversation(site: Site) -> None:
    sam, sam_csrf = await _logged_in(site, "Sam")
    kim, kim_csrf = await _logged_in(site, "Kim")
    async with sam, kim:
        async with sam.get(f"{site.url}chat/{site.agent}/events") as sam_stream:
            await sam_stream.content.readline()
            async with kim.get(f"{site.url}chat/{site.agent}/events") as kim_stream:
                await kim_stream.content.readline()
                for http, csrf, text in ((kim, kim_csrf, "apples"), (sam, sam_csrf, "pears")):
                    async with http.post(
                        f"{site.url}chat/{site.agent}/send", data=_message(text), headers={"X-CSRF-Token": csrf}
                    ) as response:
                        assert response.status == 200
                kim_seen = await _until_said(_events(kim_stream), "you said apples")
            sam_seen = await _until_said(_events(sam_stream), "you said pears")
        assert not any("apples" in json.dumps(data) for _, data in sam_seen)
        assert not any("pears" in json.dumps(data) for _, data in kim_seen)
        adapter = web_adapter(site.runtime)
        assert adapter is not None
        sam_room, kim_room = (await adapter.open("Sam")).room_id, (await adapter.open("Kim")).room_id
        assert sam_room != kim_room
        assert {m.content.text for m in await _stored(site.runtime, sam_room)} == {"pears", "you said pears"}
        assert {m.content.text for m in await _stored(site.runtime, kim_room)} == {"apples", "you said apples"}


async def test_the_chat_routes_are_guarded_and_bad_requests_say_what_is_wrong(site: Site) -> None:
    async with (
        aiohttp.ClientSession() as anonymous,
        anonymous.get(f"{site.url}chat/{site.agent}/events", allow_redirects=False) as response,
    ):
        assert response.status == 303 and response.headers["Location"] == "/login"
    nameless, csrf = await _logged_in(site, person=None)
    async with nameless:
        async with nameless.get(f"{site.url}chat") as response:
            assert 'name="name"' in await response.text()  # asked for a name first
        async with nameless.post(f"{site.url}chat/name", data={"csrf": csrf, "name": " "}) as response:
            assert response.status == 400 and "give a name" in await response.text()
        async with nameless.get(f"{site.url}chat/{site.agent}/events") as response:
            assert response.status == 403 and await response.text() == "Give your name on the Chat page first."
    http, csrf = await _logged_in(site)
    async with http:
        async with http.post(f"{site.url}chat/{site.agent}/send", data=_message("no token")) as response:
            assert response.status == 403  # a forged form: no CSRF token
        async with http.post(
            f"{site.url}chat/{site.agent}/press",
            data={"message": "not-a-message", "value": "tea"},
            headers={"X-CSRF-Token": csrf},
        ) as response:
            assert response.status == 404
            assert await response.text() == "That button is not under a message of this conversation."
        async with http.get(f"{site.url}chat/not-an-agent") as response:
            assert response.status == 404 and "No such character" in await response.text()
        async with http.post(
            f"{site.url}chat/{site.agent}/send", data=_message("   "), headers={"X-CSRF-Token": csrf}
        ) as response:
            assert response.status == 400 and await response.text() == "Write something or attach a file."


def test_with_the_console_on_every_character_runs_on_the_web_and_off_it_does_not(tmp_path: Path) -> None:
    environ = {"OPENAI_API_KEY": KEY}
    (result,) = load_characters([_ada(tmp_path)], environ=environ)
    on = plans_for(result, environ, console=True)
    assert [(p.platform, p.ready) for p in on] == [("web", True)]
    assert plans_for(result, environ) == []
    assert refusal([preflight(result, environ, console=True)]) is None
    off = refusal([preflight(result, environ)])
    assert off is not None and "no character can run" in off and "Ada lists no platform" in off
    # Listed in the file with the console off: it says what it lacks.
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps({"name": "Lis", "bio": ["x"], "plugins": ["@elizaos/plugin-web"]}))
    (with_web,) = load_characters([listed], environ=environ)
    (plan_off,) = plans_for(with_web, environ)
    assert plan_off.missing == (CONSOLE_OFF,) and plan_off.gap == f"web skipped, {CONSOLE_OFF} not set"
    assert [p.platform for p in plans_for(with_web, environ, console=True)] == ["web"]  # once


async def test_with_the_console_off_a_character_with_no_platform_token_still_exits_78(tmp_path: Path, caplog) -> None:
    environ = {"OPENAI_API_KEY": KEY}
    settings = DaemonSettings(_env_file=None, data_dir=tmp_path / "data", console_port=0)
    code = await Daemon(settings, load_characters([_ada(tmp_path)], environ=environ), environ).run()
    assert code == 78
    assert "no character can run, so troupe does not start" in caplog.text


async def test_a_menu_on_the_page_is_its_options_as_buttons_each_a_choice(site: Site) -> None:
    adapter = web_adapter(site.runtime)
    assert adapter is not None
    conversation = await adapter.open("Sam")
    room = await site.runtime.store.get_room(conversation.room_id)
    assert room is not None
    options = (Button("Tea", value="tea"), Button("Coffee", value="coffee"))
    (offer,) = await adapter.send_to_room(room, Reply(text="Tea or coffee?", menu=Menu.of(options)))
    assert offer.content.buttons == options  # stored as shown: the page has no menus
    line = await adapter.press(conversation, str(offer.id), "coffee")
    assert line is not None
    async with asyncio.timeout(30):
        while not (pressed := [m for m in await _stored(site.runtime, room.id) if m.content.button]):
            await asyncio.sleep(0.02)
    assert pressed[0].content.button == Press("coffee", "Coffee")
