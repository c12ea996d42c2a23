"""A character with tools in the console, in a real browser (Debian's Chromium, driven by
Playwright) against a real ``troupe start``: the character runs in the console only, with the
weather MCP server of tests/fakes over stdio; asked in Chat, the fake model calls the weather tool
and the answer that used its result shows, streamed as it is written; the message's page on "Why"
shows the call."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from playwright.async_api import Browser, expect

from .console_browser import browser, chat_with, log_in, no_secret_in, open_console, service
from .test_service import Service
from .tools_run import asks_the_weather, tool_results, tools_offered, with_tools

__all__ = ["browser", "service"]  # the fixtures, imported to be used here


async def test_chat_answers_with_a_tools_result_and_why_shows_the_call(
    service: Service, browser: Browser, tmp_path: Path
) -> None:
    s = service
    s.openai.script_chat(asks_the_weather)
    with_tools(s, "Ada", {})  # no platform: the console only
    site = await open_console(s)
    await tools_offered(s)

    page = await browser.new_page(viewport={"width": 1100, "height": 700})
    await log_in(page, site)
    await chat_with(page, "Ada", "Sam")
    # The answer after the call streams: held halfway, its first half shows as it is written.
    held = s.openai.hold_stream(lambda body: bool(tool_results(body)))
    await page.get_by_label("Message").fill("what's the weather in Oslo?")
    await page.get_by_label("Message").press("Enter")
    conversation = page.locator("#conversation")
    await asyncio.wait_for(held.reached.wait(), 60)
    partial = conversation.locator(".line.partial")
    await expect(partial).to_contain_text("Here is what")
    assert "21 °C" not in await partial.inner_text()
    held.release()
    await expect(conversation.locator(".line.from-character").last).to_contain_text(
        "sunny in Oslo, 21 °C", timeout=60_000
    )
    await expect(partial).to_have_count(0)
    await expect(conversation.locator(".line.from-character")).to_have_count(1)  # sent once
    await expect(page.locator("#chat-typing")).to_be_hidden()  # written: no longer "Ada is writing…"
    asked = conversation.locator(".line.from-person").last
    await expect(asked).to_contain_text("what's the weather in Oslo?")

    # The message's trace: the call, its arguments, how long it took, what it returned.
    message_id = await asked.get_attribute("data-id")
    assert message_id
    await page.goto(f"{site.url}why/{message_id}")
    await expect(page.get_by_role("heading", name=f"message {message_id}, heard by Ada")).to_be_visible()
    tool = page.locator("tr.line-tool")
    await expect(tool).to_have_count(1)
    await expect(tool).to_contain_text('weather__weather {"city": "Oslo"}')
    await expect(tool).to_contain_text(re.compile(r", \d+ ms, ok: .*sunny in Oslo, 21 °C"))
    await expect(page.locator("tr.line-said")).to_contain_text("sunny in Oslo, 21 °C")
    await no_secret_in(page, site)
