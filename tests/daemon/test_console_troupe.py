"""The console's Troupe and Logs pages in a real browser (Debian's Chromium under Playwright)
against a real ``troupe start`` subprocess: the last hour's plots after a few Telegram messages,
and the log tailed live, filtered by character."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect

from .console_browser import browser, log_in, no_secret_in, open_console, screenshot, service
from .test_service import Service

__all__ = ["browser", "service"]  # the fixtures, imported to be used here

#: Generous: the page polls every few seconds, and the machine may be busy.
_WAIT_MS = 30_000


async def test_the_troupe_page_plots_the_hour_and_the_logs_page_tails_a_character(
    service: Service, browser: Browser, tmp_path: Path
) -> None:
    s = service
    # DEBUG: each message's outcome is logged (at DEBUG), a line per message to watch arrive.
    site = await open_console(s, "Ada", "Brann", TROUPE_LOG_LEVEL="DEBUG")
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    await log_in(page, site)

    # Nothing handled yet: the page says so instead of drawing empty plots.
    summary = page.locator("#plots-summary")
    await expect(summary).to_have_text("No messages in the last hour: nothing to plot yet.", timeout=_WAIT_MS)
    await expect(page.locator("#plots .plot-grid")).to_be_hidden()

    # A few messages to each character, through the fake Telegram (whose private chats are one
    # per person: a person each).
    people = {"Ada": s.telegram.add_user("Sam", username="sam"), "Brann": s.telegram.add_user("Kim", username="kim")}
    chats = {name: s.telegram.private(person, s.bots[name]) for name, person in people.items()}
    for name, person in people.items():
        for n in range(2):
            await s.telegram.user_says(person, chats[name], f"hello {name}, message {n}")
            await s.telegram.wait_for_sent(s.bots[name], n + 1, timeout=60)

    # The plots, drawn from the daemon's metrics: four messages, all replied.
    await expect(summary).to_contain_text("4 messages in the last hour: 4 replied", timeout=_WAIT_MS)
    await expect(summary).to_contain_text("reply latency p50")
    for plot in ("plot-outcomes", "plot-latency", "plot-model"):
        await expect(page.locator(f"#{plot} canvas")).to_have_count(1)
    await expect(page.locator("#plot-outcomes .u-legend")).to_contain_text("replied")
    await expect(page.locator("#plot-latency .u-legend")).to_contain_text("p95")
    # Each character's models: the last call answered.
    ada = page.locator('tr.agent[data-agent="Ada"] td.model')
    await expect(ada).to_contain_text("ok", timeout=_WAIT_MS)
    await expect(ada).to_contain_text("openai · last call")
    await expect(ada).to_contain_text("0 failed in the last hour")
    await screenshot(page, "console-status.png", tmp_path)
    await no_secret_in(page, site)

    # The Logs page, filtered on Ada from DEBUG up: her lines only, and a new one arrives live.
    await page.get_by_role("link", name="Logs").click()
    await expect(page.get_by_role("heading", name="Logs")).to_be_visible()
    await page.get_by_label("Character").select_option("Ada")
    await page.get_by_label("From level").select_option("DEBUG")
    await expect(page.locator("#log-state")).to_have_text("Live", timeout=_WAIT_MS)
    replied = page.locator("#log li.line", has_text="-> replied")
    await expect(replied).to_have_count(2, timeout=_WAIT_MS)  # the backlog: her two replies
    await expect(page.locator('#log li.line[data-agent="Brann"]')).to_have_count(0)
    assert page.url.endswith("/logs?agent=Ada&level=DEBUG")

    await s.telegram.user_says(people["Brann"], chats["Brann"], "one more, Brann")
    await s.telegram.wait_for_sent(s.bots["Brann"], 3, timeout=60)
    await s.telegram.user_says(people["Ada"], chats["Ada"], "one more, Ada")
    await s.telegram.wait_for_sent(s.bots["Ada"], 3, timeout=60)
    await expect(replied).to_have_count(3, timeout=_WAIT_MS)  # live, without a reload
    await expect(page.locator('#log li.line[data-agent="Brann"]')).to_have_count(0)
    lines = page.locator("#log li.line")
    assert await lines.count() > 3
    for agent in await lines.evaluate_all("items => items.map(item => item.dataset.agent)"):
        assert agent == "Ada"
    await screenshot(page, "console-logs.png", tmp_path)
    await no_secret_in(page, site)

    # Every character again: Brann's lines are there too.
    await page.get_by_label("Character").select_option("")
    await expect(page.locator('#log li.line[data-agent="Brann"]').first).to_be_visible(timeout=_WAIT_MS)
    assert site.token not in s.logs()
