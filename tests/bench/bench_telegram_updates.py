"""Benchmark: how many Telegram updates one daemon takes and answers per second, by long polling
and by webhook, side by side.

    .venv/bin/python tests/bench/bench_telegram_updates.py [--messages 300] [--people 30] [--rounds 3]

One character on the fake Bot API (tests/fakes/telegram_server.py) is written to by ``--people``
people in private chats, ``--messages`` messages sent at once; the fake OpenAI-compatible server
answers every model call at once. The daemon runs in this process, as ``troupe start`` would run
it (the same Daemon, the same SQLite store). The clock runs from the first message sent to the
last answer; each mode is measured ``--rounds`` times and the median printed. The work per
message is the same in both modes (kept in the inbox, claimed, stored, answered): what differs is
how updates arrive — a long poll that fetches them in batches, or one POST per update (up to 40
at once) kept in the inbox before it is answered 200.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import logging

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from tests.daemon.crash_run import write_telegram_character
from tests.daemon.test_service import answer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram
from tests.platforms.telegram.scene import free_port

TOKEN = "7301:bench-updates"


async def one_round(mode: str, messages: int, people: int) -> float:
    """Seconds from the first message to the last answer."""
    with tempfile.TemporaryDirectory(prefix="troupe-bench-") as tmp:
        work = Path(tmp)
        async with FakeTelegram() as fake, FakeOpenAIServer() as openai:
            openai.script_chat(answer)
            bot = fake.add_bot(TOKEN, username="dora_bot", first_name="Dora")
            port = free_port()
            hook = {"TELEGRAM_WEBHOOK_URL": f"http://127.0.0.1:{port}/telegram/dora"} if mode == "webhook" else {}
            path = work / "characters" / "dora.json"
            write_telegram_character(path, "Dora", TOKEN, fake.url, **hook)
            environ = {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": openai.url}
            settings = DaemonSettings(data_dir=work / "data", console_port=0, webhook_port=port)
            daemon = Daemon(settings, [load_character(path, environ=environ)], environ)
            task = asyncio.create_task(daemon.run())
            try:
                await fake.wait_for(
                    lambda: bot.webhook is not None if mode == "webhook" else bot.polls > 0, 60, "Dora online"
                )
                chats = [(p, fake.private(p, bot)) for p in (fake.add_user(f"P{i}") for i in range(people))]
                started = time.perf_counter()
                for n in range(messages):
                    person, chat = chats[n % people]
                    await fake.user_says(person, chat, f"Dora, question {n}?")
                await fake.wait_for_sent(bot, messages, timeout=600)
                return time.perf_counter() - started
            finally:
                daemon.stop()
                await asyncio.wait_for(task, 60)


async def main(messages: int, people: int, rounds: int) -> None:
    logging.basicConfig(level=logging.ERROR)
    print(f"{messages} messages from {people} people to one character, median of {rounds} rounds")
    rates: dict[str, float] = {}
    for mode in ("polling", "webhook"):
        times = [await one_round(mode, messages, people) for _ in range(rounds)]
        seconds = statistics.median(times)
        rates[mode] = messages / seconds
        print(f"  {mode:8} {seconds:6.2f} s  {rates[mode]:6.1f} updates/s taken and answered")
    print(f"  webhook/polling: {rates['webhook'] / rates['polling']:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--people", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.messages, args.people, args.rounds))
