"""The console's "Why" page in a real browser, against a real ``troupe start``: a Telegram message
in a group that the character lets pass is listed with its reason, and a message it answered
shows the model calls and the reply; the log line's link opens the same page."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, expect

from .console_browser import browser, log_in, no_secret_in, open_console, screenshot, service
from .test_service import Service, answer

__all__ = ["browser", "service"]  # the fixtures, imported to be used here


def _ignores_what_is_not_for_it(body: dict[str, Any]) -> str:
    """The small model lets every undecided message pass; everything else as the service answers."""
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    if "<action>RESPOND | IGNORE | STOP</action>" in prompt:
        return "<response><name>Ada</name><reasoning>not for me</reasoning><action>IGNORE</action></response>"
    return answer(body)


async def _until(found: Callable[[], re.Match[str] | None], timeout: float = 60.0) -> re.Match[str]:
    async with asyncio.timeout(timeout):
        while (match := found()) is None:
            await asyncio.sleep(0.1)
        return match


async def test_a_group_message_let_pass_and_an_answered_one_are_explained(
    service: Service, browser: Browser, tmp_path: Path
) -> None:
    s = service
    s.openai.script_chat(_ignores_what_is_not_for_it)
    site = await open_console(s, "Ada")
    sam = s.telegram.add_user("Sam", username="sam")
    group = s.telegram.add_group("Writers' Room", members=[sam, s.bots["Ada"]])

    # In the group, not addressed to Ada: the small model says IGNORE, and the log says where to look.
    await s.telegram.user_says(sam, group, "has anyone read the new chapter yet?")
    line = await _until(
        lambda: re.search(r"\[Ada\] plugins\.core\._pipeline: message (\S+) not answered: ignored \(small model: IGNORE\); "
                          r"see: troupe why \1 or (http://127\.0\.0\.1:\d+/why/\S+)", s.logs())
    )  # fmt: skip
    ignored_id, logged_link = line.group(1), line.group(2)
    assert logged_link == f"{site.url}why/{ignored_id}"
    # In a private chat: answered.
    await s.telegram.user_says(sam, s.telegram.private(sam, s.bots["Ada"]), "hello Ada")
    await s.telegram.wait_for_sent(s.bots["Ada"], 1, timeout=60)

    page = await browser.new_page(viewport={"width": 1100, "height": 700})
    await log_in(page, site)
    await page.get_by_role("link", name="Why").click()
    await expect(page.get_by_role("heading", name="Why")).to_be_visible()
    ignored = page.locator(f'tr.trace[data-message="{ignored_id}"]')
    await expect(ignored).to_contain_text("has anyone read the new chapter yet?")
    await expect(ignored).to_contain_text("Writers' Room · telegram")
    await expect(ignored).to_contain_text("ignored")
    await expect(ignored).to_contain_text("small model: IGNORE")
    replied = page.locator("tr.trace", has_text="hello Ada")
    await expect(replied).to_contain_text("replied")
    await screenshot(page, "console-why.png", tmp_path)

    # Searching by person and outcome leaves the one let pass.
    await page.get_by_label("Person").fill("Sam")
    await page.get_by_label("Outcome").select_option("ignored")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator("tr.trace")).to_have_count(1)
    await expect(page.locator("tr.trace")).to_contain_text("has anyone read the new chapter yet?")

    # Its page: the gate's rule, who decided, the model call.
    await page.locator("tr.trace a.outcome").click()
    await expect(page.get_by_role("heading", name=f"message {ignored_id}, heard by Ada")).to_be_visible()
    await expect(page.locator("tr.line-gate")).to_contain_text("undecided; decided by small model")
    await expect(page.locator("tr.line-model").filter(has_text="TEXT_SMALL via openai")).to_contain_text(" ms")
    await expect(page.locator("tr.line-outcome")).to_contain_text("ignored: small model: IGNORE")
    await screenshot(page, "console-why-message.png", tmp_path)
    await no_secret_in(page, site)

    # The answered one: its model calls with their times, the actions, and the reply it got.
    await page.goto(f"{site.url}why?outcome=replied")
    await page.locator("tr.trace a.outcome").click()
    await expect(page.locator("tr.line-outcome")).to_contain_text("replied")
    await expect(page.locator("tr.line-model").filter(has_text="TEXT_LARGE via openai")).to_contain_text(" ms")
    await expect(page.locator("tr.line-actions")).to_contain_text("REPLY ok")
    await expect(page.locator("tr.line-said")).to_contain_text("Ada here.")
    await no_secret_in(page, site)

    # The log line's link opens the page of the message it names.
    await page.goto(logged_link)
    await expect(page.get_by_role("heading", name=f"message {ignored_id}, heard by Ada")).to_be_visible()
