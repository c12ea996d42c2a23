"""The console's Chat page in a real browser (Debian's Chromium, driven by Playwright): the first
run, a character with a model key and no platform token answering in the browser; a reply
streamed as it is written; a button pressed and the press answered; the conversation started over."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, FilePayload, expect

from bot.config.character import load_characters
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from bot.kernel.buttons import Button
from bot.kernel.lifecycle import DaemonState
from bot.kernel.outgoing import OutgoingFile, Reply
from bot.runtime.events import ChannelCleared
from platforms.web import web_adapter

from ..fakes.openai_server import FakeOpenAIServer, make_png
from ..platforms.discord.scene import plan
from .console_browser import browser, chat_with, no_secret_in, open_console, screenshot, service
from .test_service import OPENAI_KEY, Service, _free_port

__all__ = ["browser", "service"]  # the fixtures, imported to be used here

#: Installed before a message is sent: the times (performance.now(), ms) the first partial text
#: and the whole reply appear in the conversation.
_WATCH_REPLY = """() => {
  window.replyTimes = {sent: performance.now()};
  const box = document.getElementById('conversation');
  new MutationObserver(() => {
    const t = window.replyTimes;
    if (t.partial === undefined && box.querySelector('.line.partial')) t.partial = performance.now();
    if (t.whole === undefined && box.querySelectorAll('.line.from-character:not(.partial)').length > t.before)
      t.whole = performance.now();
  }).observe(box, {childList: true, subtree: true, characterData: true});
  window.replyTimes.before = box.querySelectorAll('.line.from-character:not(.partial)').length;
}"""


def write_model_only(s: Service, name: str) -> Path:
    """A character with a model key (the environment's) and no platform at all: the first run."""
    path = s.dir / "characters" / f"{name.lower()}.json"
    path.write_text(json.dumps({"name": name, "bio": [f"{name} is a test character."], "plugins": []}))
    return path


async def test_first_run_a_model_key_only_character_answers_in_the_browser(
    service: Service, browser: Browser, tmp_path: Path
) -> None:
    s = service
    write_model_only(s, "Ada")
    site = await open_console(s)  # no Telegram token anywhere: the daemon runs all the same
    logs = s.logs()
    last = [line for line in logs.splitlines() if line.strip()][-1]
    assert f"Ada runs only in the console: talk to it at {site.url}chat" in last, last
    assert "docs/discord.md" in last and "docs/telegram.md" in last

    page = await browser.new_page(viewport={"width": 1000, "height": 700})
    await page.goto(f"{site.url}login?token={site.token}")
    await expect(page.get_by_role("heading", name="Troupe")).to_be_visible()
    await expect(page.locator('tr[data-agent="Ada"]')).to_contain_text("web: connected")

    loading = await page.evaluate("() => performance.now()")
    await chat_with(page, "Ada", "Sam")
    load_ms = await page.evaluate(
        "() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; }"
    )
    await page.evaluate(_WATCH_REPLY)
    await page.get_by_label("Message").fill("hello Ada")
    await page.get_by_label("Message").press("Enter")
    conversation = page.locator("#conversation")
    await expect(conversation.locator(".line.from-person").last).to_contain_text("hello Ada")
    await expect(conversation.locator(".line.from-character").last).to_contain_text("Ada here.", timeout=30_000)
    await page.wait_for_function("() => window.replyTimes.whole !== undefined")
    times = await page.evaluate("() => window.replyTimes")
    assert times["partial"] <= times["whole"]  # streamed: written before it was whole
    print(
        f"\nchat page load {load_ms:.0f} ms (to the conversation, from the nav: "
        f"{await page.evaluate('() => performance.now()') - loading:.0f} ms); reply started "
        f"{times['partial'] - times['sent']:.0f} ms, whole {times['whole'] - times['sent']:.0f} ms after sending"
    )

    # The conversation is kept: a reload shows it from the store.
    await page.reload()
    await expect(conversation.locator(".line")).to_have_count(2)
    await expect(conversation.locator(".line.from-character")).to_contain_text("Ada here.")
    await no_secret_in(page, site)


def _prompt(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body.get("messages", []))


async def test_a_reply_streams_a_picture_and_buttons_show_and_a_press_is_answered(
    browser: Browser, tmp_path: Path
) -> None:
    """In this process, to reach the character's runtime: the daemon with its console, the fake OpenAI."""
    plans = [plan(" ".join(f"word{i}" for i in range(40))), plan("Tea it is."), plan("Got your voice note.")]

    def respond(body: dict[str, Any]) -> str:
        if "Write the next turn of Ada" in _prompt(body):
            return plans.pop(0)
        return "<response><thought>fine</thought><facts></facts><relationships></relationships></response>"

    async with FakeOpenAIServer() as openai:
        openai.script_chat(respond)
        environ = {"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": openai.url}
        path = tmp_path / "ada.json"
        path.write_text(json.dumps({"name": "Ada", "bio": ["Ada is a test character."], "plugins": []}))
        port = _free_port()
        settings = DaemonSettings(
            data_dir=tmp_path / "data", console_port=port, control_socket=tmp_path / "control.sock"
        )
        daemon = Daemon(settings, load_characters([path], environ=environ), environ)
        running = asyncio.create_task(daemon.run())
        try:
            async with asyncio.timeout(30):
                while daemon.state is not DaemonState.RUNNING:
                    await asyncio.sleep(0.02)
            site = f"http://127.0.0.1:{port}/"
            token = (tmp_path / "data" / "console-token").read_text().strip()
            page = await browser.new_page(viewport={"width": 1000, "height": 760})
            await page.goto(f"{site}login?token={token}")
            await chat_with(page, "Ada", "Sam")
            conversation = page.locator("#conversation")

            # Streamed: the first half of the reply shows while the model is still writing it.
            held = openai.hold_stream(lambda body: "Write the next turn of Ada" in _prompt(body))
            await page.get_by_label("Message").fill("tell me forty words")
            await page.get_by_role("button", name="Send").click()
            await held.reached.wait()
            partial = conversation.locator(".line.partial")
            await expect(partial).to_contain_text("word0 word1")
            assert "word39" not in (await partial.inner_text())
            await expect(conversation.locator(".line.from-character")).to_have_count(1)  # only the partial
            held.release()
            await expect(conversation.locator(".line.from-character:not(.partial)")).to_contain_text("word39")
            await expect(partial).to_have_count(0)

            # A picture and buttons, sent the way a plugin's action sends them.
            runtime = daemon.agents[next(iter(daemon.agents))].runtime
            assert runtime is not None
            adapter = web_adapter(runtime)
            assert adapter is not None
            room = await runtime.store.get_room((await adapter.open("Sam")).room_id)
            assert room is not None
            buttons = (
                Button("Tea", value="tea"),
                Button("Coffee", value="coffee"),
                Button("Menu", url="https://example.com/m"),
            )
            picture = OutgoingFile.of_bytes(make_png(160, 100), "cup.png")
            await adapter.send_to_room(room, Reply(text="Tea or coffee?", files=(picture,), buttons=buttons))
            offer = conversation.locator(".line.from-character").last
            await expect(offer).to_contain_text("Tea or coffee?")
            await expect(offer.get_by_role("img", name="cup.png")).to_be_visible()
            assert await offer.get_by_role("img", name="cup.png").evaluate("img => img.naturalWidth") == 160
            await expect(offer.get_by_role("link", name="Menu")).to_have_attribute("href", "https://example.com/m")

            # Pressed: the press is a message from Sam, and Ada answers it.
            await offer.get_by_role("button", name="Tea").click()
            await expect(conversation.locator(".line.from-person").last).to_contain_text("pressed Tea")
            await expect(conversation.locator(".line.from-character").last).to_contain_text("Tea it is.")
            pressed = [
                m for m in await runtime.store.get_memories(table="messages", room_id=room.id) if m.content.button
            ]
            assert [p.content.button.value for p in pressed if p.content.button] == ["tea"]

            # A voice note uploaded: heard (transcribed by the model) and answered.
            await page.get_by_label("Attach").set_input_files(
                files=[FilePayload(name="note.ogg", mimeType="audio/ogg", buffer=b"OggS-not-really-audio")]
            )
            await page.get_by_role("button", name="Send").click()
            mine = conversation.locator(".line.from-person").last
            await expect(mine.locator("audio")).to_be_attached()
            await expect(conversation.locator(".line.from-character").last).to_contain_text("Got your voice note.")
            heard = [
                _prompt(r.json) for r in openai.requests_for("chat") if "Write the next turn of Ada" in _prompt(r.json)
            ]
            assert "transcript of note.ogg" in heard[-1]  # the model heard what the note said
            await screenshot(page, "console-chat.png", tmp_path)

            # Start over: CHANNEL_CLEARED, as a plugin hears it; the conversation's messages go.
            cleared: list[ChannelCleared] = []

            async def heard_cleared(event: ChannelCleared) -> None:
                cleared.append(event)

            runtime.on(ChannelCleared, heard_cleared)
            await page.get_by_role("button", name="Start over").click()
            await expect(conversation.locator(".line")).to_have_count(0)
            await expect(conversation).to_contain_text("Say hello to Ada.")
            assert [(e.room_id, e.source) for e in cleared] == [(room.id, "web")]
            assert await runtime.store.get_memories(table="messages", room_id=room.id) == []
        finally:
            daemon.stop()
            assert await asyncio.wait_for(running, 60) == 0


async def test_with_nothing_configured_the_console_sets_up_the_model_and_the_character_answers(
    service: Service, browser: Browser, tmp_path: Path
) -> None:
    s = service
    del s.env["OPENAI_API_KEY"], s.env["OPENAI_BASE_URL"]  # nothing configured at all
    write_model_only(s, "Ada")
    site = await open_console(s)
    assert "nothing is configured yet, so no character runs" in s.logs()

    page = await browser.new_page(viewport={"width": 1000, "height": 640})
    await page.goto(f"{site.url}login?token={site.token}")
    await expect(page.get_by_role("heading", name="Set up troupe")).to_be_visible()  # it opens on setup
    await expect(page.locator("main")).to_contain_text("OPENAI_API_KEY or OPENAI_BASE_URL")
    await page.get_by_label("OPENAI_API_KEY").fill(OPENAI_KEY)
    await page.get_by_label("OPENAI_BASE_URL").fill(s.openai.url)
    await screenshot(page, "console-setup.png", tmp_path)
    await page.get_by_role("button", name="Save and start").click()

    await expect(page.get_by_role("heading", name="Chat")).to_be_visible()
    await page.get_by_label("Your name").fill("Sam")
    await page.get_by_role("button", name="Start talking").click()
    await expect(page.locator("#conversation[data-live=yes]")).to_be_attached()
    await page.get_by_label("Message").fill("hello Ada")
    await page.get_by_label("Message").press("Enter")
    await expect(page.locator(".line.from-character").last).to_contain_text("Ada here.", timeout=30_000)
    await no_secret_in(page, site)
    env = s.dir / ".env"
    assert env.stat().st_mode & 0o777 == 0o600 and f'OPENAI_API_KEY="{OPENAI_KEY}"' in env.read_text()
    assert OPENAI_KEY not in s.logs()
