"""Benchmark: the CPU one Telegram Bot API request costs the daemon, by HTTP backend.

    .venv/bin/python tests/bench/bench_telegram_request.py [--backend aiohttp|httpx] [--requests 2000] [--concurrency 1]

A ``telegram.Bot`` sends ``--requests`` messages (``send_message`` with a reply, as a character
answers) to the fake Telegram Bot API (tests/fakes/telegram_server.py), which runs in a child
process so that this process's CPU time is the client's alone: PTB building the request and
parsing the answer, and the backend (``httpx``: PTB's default ``HTTPXRequest``; ``aiohttp``:
troupe's :class:`platforms.telegram._request.AiohttpRequest`) moving the bytes. Prints the
process CPU time and the wall time per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from telegram import Bot, ReplyParameters
from telegram.request import BaseRequest, HTTPXRequest

from platforms.telegram._request import AiohttpRequest
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "7001:bench-token"
_WARM_UP = 100


async def serve() -> None:
    """The child: the fake Bot API with one bot in one group; prints what the parent needs and
    runs until its standard input ends."""
    async with FakeTelegram() as fake:
        bot = fake.add_bot(TOKEN, username="ada_bot", first_name="Ada")
        sam = fake.add_user("Sam", username="samr")
        group = fake.add_group("Writers", members=[sam, bot])
        said = await fake.user_says(sam, group, "hi @ada_bot")
        print(json.dumps({"url": fake.url, "chat": group.id, "reply_to": said["message_id"]}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


def backend(name: str) -> BaseRequest:
    if name == "httpx":
        return HTTPXRequest(connection_pool_size=256, connect_timeout=10, read_timeout=30, write_timeout=30)
    return AiohttpRequest(connection_pool_size=256, connect_timeout=10, read_timeout=30, write_timeout=30)


async def measure(name: str, requests: int, concurrency: int) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--serve", cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        world = json.loads(await asyncio.wait_for(child.stdout.readline(), 30))
        bot = Bot(TOKEN, base_url=f"{world['url']}/bot", request=backend(name))
        reply = ReplyParameters(world["reply_to"])
        text = "Ada here, on it. " * 8  # a short reply, about as long as a character's

        async def send(count: int) -> None:
            for _ in range(count):
                await bot.send_message(world["chat"], text, reply_parameters=reply)

        async with bot:
            await send(_WARM_UP)
            wall, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(send(requests // concurrency) for _ in range(concurrency)))
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        done = requests // concurrency * concurrency
        print(
            f"{name}: {done} send_message, concurrency {concurrency}: CPU {cpu * 1000 / done:.3f} ms per request "
            f"(process), wall {wall * 1000 / done:.3f} ms per request, {done / wall:.0f} requests/s"
        )
    finally:
        child.stdin.close()
        await child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("aiohttp", "httpx"), default="aiohttp")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve())
    else:
        asyncio.run(measure(args.backend, args.requests, args.concurrency))


if __name__ == "__main__":
    main()
