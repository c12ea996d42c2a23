"""Benchmark: CPU per chat request in the client, by the way it is posted.

    .venv/bin/python tests/bench/bench_openai_post.py [--requests 2000] [--concurrency 1]

Against the fake OpenAI-compatible server in a process of its own (tests/bench/_common.py), the
same small chat request posted ``--requests`` times, ``--concurrency`` at a time, by:

- ``sdk``: ``openai.AsyncOpenAI.post(cast_to=bytes)`` over ``DefaultAioHttpClient`` (what the
  plugin did for chat completions and embeddings);
- ``plugin``: the plugin's own path (``Calls.post_json``: aiohttp, retries, error translation);
- ``aiohttp``: a bare ``aiohttp.ClientSession.post`` and ``read()``, the floor.

Prints this process's CPU time per request (``time.process_time``) and wall time per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiohttp
import openai

from bot.kernel.models import ModelType
from plugins.openai._calls import Calls
from plugins.openai._config import resolve_config
from tests.bench._common import ModelServer

KEY = "sk-bench"
BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello there"}]}


class _Runtime:
    agent_id = "bench"
    model_preset: str | None = "openai"

    def __init__(self, url: str) -> None:
        self._settings = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url}

    def get_setting(self, key: str) -> str | None:
        return self._settings.get(key)


async def measure(name: str, post: Callable[[], Awaitable[object]], requests: int, concurrency: int) -> None:
    for _ in range(50):  # warm up: connections open, code paths loaded
        await post()
    left = requests

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await post()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"{name:8} CPU {cpu / requests * 1000:.3f} ms/request, wall {wall / requests * 1000:.3f} ms/request")


async def main(requests: int, concurrency: int) -> None:
    async with ModelServer() as server:
        url = server.url
        config = resolve_config(_Runtime(url), agent="bench")

        async with aiohttp.ClientSession() as session:
            headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
            timeout = aiohttp.ClientTimeout(total=30)

            async def bare() -> bytes:
                async with session.post(
                    url + "/chat/completions", data=json.dumps(BODY), headers=headers, timeout=timeout
                ) as response:
                    return await response.read()

            await measure("aiohttp", bare, requests, concurrency)

        calls = Calls(config, agent="bench")
        try:
            await measure(
                "plugin",
                lambda: calls.post_json(ModelType.TEXT_SMALL, config.chat, "m", "/chat/completions", BODY, bytes),
                requests,
                concurrency,
            )
        finally:
            await calls.aclose()

        async with openai.AsyncOpenAI(
            api_key=KEY, base_url=url, timeout=30, http_client=openai.DefaultAioHttpClient()
        ) as client:
            await measure(
                "sdk",
                lambda: client.post("/chat/completions", cast_to=bytes, body=BODY),
                requests,
                concurrency,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=1)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.requests, arguments.concurrency))
