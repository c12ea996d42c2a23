"""The console's Chat page in a real browser (Debian's Chromium, driven by Playwright): the first
run, a character with a model key and no platform token answering in the browser; a reply
streamed as it is written; a button pressed and the press answered."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.async_api import Browser, Page, expect

from .console_browser import browser, no_secret_in, open_console, screenshot, service
from .test_service import Service

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


async def chat_with(page: Page, name: str, person: str) -> None:
    """From any console page: Chat, give a name, land in the conversation with ``name``."""
    await page.get_by_role("link", name="Chat").click()
    await page.get_by_label("Your name").fill(person)
    await page.get_by_role("button", name="Start talking").click()
    await expect(page.get_by_role("heading", name=f"Chat with {name}")).to_be_visible()
    await expect(page.locator("#conversation[data-live=yes]")).to_be_attached()  # the event stream is open


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
    await screenshot(page, "console-chat.png", tmp_path)
    await no_secret_in(page, site)
