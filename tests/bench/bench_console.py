"""Benchmark: the console in a real browser — how long a page takes to load, and a reply to start.

Not a test. Run it from the repository root (it needs Debian's ``chromium`` on PATH)::

    .venv/bin/python tests/bench/bench_console.py                 # 20 page loads, 20 replies
    .venv/bin/python tests/bench/bench_console.py --runs 50

The real daemon (in this process) runs one character on the console's web platform only, with a
model key for the fake OpenAI-compatible API, which answers at once from a process of its own
(tests/bench/_model_server.py). Chromium, driven by Playwright, logs in and then measures:

- page load: each console page (Troupe, Chat's conversation, Why, Characters, Memory, Knowledge,
  Logs) loaded ``--runs`` times, from navigation start to the load event;
- reply start: ``--runs`` messages sent in Chat, from the send to the reply's first words on the
  page (streamed), and to the whole reply.

The fake model answers at once, so the figures are troupe's own: the daemon, its store, the
page's script and the browser.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import socket
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from playwright.async_api import Page, async_playwright, expect

from bot.config.character import load_characters
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from bot.kernel.lifecycle import DaemonState
from tests.bench._common import ModelServer, p50_p95
from tests.daemon.console_browser import CHROMIUM_ARGS

PAGES = ("/", "/why", "/characters", "/memory", "/knowledge", "/logs")
#: Installed before each message: when the first words and the whole reply appear (ms).
_WATCH_REPLY = """() => {
  const box = document.getElementById('conversation');
  const before = box.querySelectorAll('.line.from-character:not(.partial)').length;
  window.replyTimes = {sent: performance.now()};
  if (window.replyWatch) window.replyWatch.disconnect();  // the last message's watch counted from its own start
  window.replyWatch = new MutationObserver(() => {
    const t = window.replyTimes;
    if (t.partial === undefined && box.querySelector('.line.partial')) t.partial = performance.now();
    if (t.whole === undefined && box.querySelectorAll('.line.from-character:not(.partial)').length > before)
      t.whole = performance.now();
  });
  window.replyWatch.observe(box, {childList: true, subtree: true, characterData: true});
}"""
_LOAD_MS = "() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; }"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _load(page: Page, url: str) -> float:
    await page.goto(url, wait_until="load")
    return float(await page.evaluate(_LOAD_MS)) / 1000


async def _reply(page: Page, text: str) -> tuple[float, float]:
    await page.evaluate(_WATCH_REPLY)
    await page.get_by_label("Message").fill(text)
    await page.get_by_label("Message").press("Enter")
    await page.wait_for_function("() => window.replyTimes.whole !== undefined", timeout=60_000)
    times = await page.evaluate("() => window.replyTimes")
    start = times.get("partial", times["whole"])
    return (start - times["sent"]) / 1000, (times["whole"] - times["sent"]) / 1000


async def main(args: argparse.Namespace) -> int:
    chromium = shutil.which("chromium")
    if chromium is None:
        print("no chromium on PATH: apt-get install chromium", file=sys.stderr)
        return 2
    logging.getLogger().addHandler(logging.NullHandler())
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        path = folder / "ada.json"
        path.write_text(json.dumps({"name": "Ada", "bio": ["Ada is a benchmark character."], "plugins": []}))
        async with ModelServer(["Ada"]) as model:
            environ = {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": model.url}
            port = _free_port()
            settings = DaemonSettings(
                _env_file=None,
                data_dir=folder / "data",
                console_port=port,
                control_socket=folder / "control.sock",
            )
            daemon = Daemon(settings, load_characters([path], environ=environ), environ)
            running = asyncio.create_task(daemon.run())
            try:
                async with asyncio.timeout(60):
                    while daemon.state is not DaemonState.RUNNING:
                        await asyncio.sleep(0.02)
                site = f"http://127.0.0.1:{port}"
                token = (folder / "data" / "console-token").read_text().strip()
                async with async_playwright() as playwright:
                    browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                    page = await browser.new_page()
                    await page.goto(f"{site}/login?token={token}")
                    await page.goto(f"{site}/chat")
                    await page.get_by_label("Your name").fill("Sam")
                    await page.get_by_role("button", name="Start talking").click()
                    await expect(page.locator("#conversation[data-live=yes]")).to_be_attached()
                    chat = page.url
                    await _reply(page, "warming up")  # the first reply opens what later ones reuse
                    starts, wholes = [], []
                    for i in range(args.runs):
                        start, whole = await _reply(page, f"message {i}")
                        starts.append(start)
                        wholes.append(whole)
                    loads: dict[str, list[float]] = {}
                    for route in (*PAGES, chat.removeprefix(site)):
                        loads[route] = [await _load(page, f"{site}{route}") for _ in range(args.runs)]
                    await browser.close()
            finally:
                daemon.stop()
                await asyncio.wait_for(running, 60)
    print(f"console in Chromium, {args.runs} runs each, fake model answering at once")
    for route, values in loads.items():
        name = "/chat (a conversation)" if route.startswith("/chat") else route
        print(f"  page load {name:24} {p50_p95(values)}")
    print(f"  reply start (first words) {'':9} {p50_p95(starts)}")
    print(f"  reply whole {'':23} {p50_p95(wholes)}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    raise SystemExit(asyncio.run(main(parser.parse_args())))
