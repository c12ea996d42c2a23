"""The fake OpenAI-compatible server of the benchmarks, as a process of its own (see _common.py).

    python -m tests.bench._model_server [--reflections-do-not-parse] [CHARACTER NAME ...]

Prints ``{"url": ...}`` once listening; then answers each ``tally`` line on stdin with the
requests counted so far, as JSON (:class:`~tests.bench._common.Tally`); stops at end of input.
"""

from __future__ import annotations

import asyncio
import json
import sys

from tests.bench._common import Script, Tally
from tests.fakes.openai_server import FakeOpenAIServer


async def serve(characters: list[str], *, reflections_parse: bool) -> None:
    tally = Tally()
    async with FakeOpenAIServer() as server:
        server.script_chat(Script(characters, reflections_parse=reflections_parse).answer)
        print(json.dumps({"url": server.url}), flush=True)
        loop = asyncio.get_running_loop()
        while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "tally":
            # Counted, then forgotten: a long run must not keep every prompt.
            done = list(server.requests)
            del server.requests[: len(done)]
            for request in done:
                tally.add(request.endpoint, request.json)
            print(json.dumps(tally.to_json()), flush=True)


if __name__ == "__main__":
    flag = "--reflections-do-not-parse"
    asyncio.run(serve([a for a in sys.argv[1:] if a != flag], reflections_parse=flag not in sys.argv[1:]))
