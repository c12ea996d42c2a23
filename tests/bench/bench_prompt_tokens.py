"""What a turn's plan prompt costs, part by part, in estimated tokens.

    .venv/bin/python tests/bench/bench_prompt_tokens.py [characters/iris.json] [--context 2048] [--lines 12] [--seed 0]

Runs the pipeline for a character (its model plugins left out: scripted models answer) in a
direct-message room: ``--lines`` short lines of conversation, then one more, and prints the
prompt the large model was given for that last one, cut into its parts (the system message, each
XML block of the template, each ``#`` section of the context) with the estimated tokens of each
(plugins/core/_tokens.py), and the total. With ``--context``, the model says its context window
is that many tokens, and the prompt is built to fit it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.kernel.models import ModelType
from bot.kernel.types import ChannelType
from bot.store import Database
from plugins.core._tokens import estimate_tokens
from tests.plugins.core.harness import harnesses, plan

__all__ = ["main", "parts_of"]

_BLOCK = re.compile(r"<(task|context|available_actions|rules|output)>\n?(.*?)</\1>", re.S)
_LINES = [
    "Hi Iris, how are you today?",
    "I'm trying to learn about the night sky.",
    "What should I look at first with small binoculars?",
    "Is the Andromeda galaxy visible from a city?",
]


def parts_of(prompt: str) -> list[tuple[str, int]]:
    """The prompt's parts and their estimated tokens: each block, the context by section."""
    parts: list[tuple[str, int]] = []
    for name, body in _BLOCK.findall(prompt):
        if name != "context":
            parts.append((f"<{name}>", estimate_tokens(body)))
            continue
        for section in re.split(r"\n(?=# )", body):
            title = section.split("\n", 1)[0] if section.startswith("# ") else "(context, untitled)"
            parts.append((f"  {title[:60]}", estimate_tokens(section)))
    return parts


async def main(character_file: Path, context: int | None, lines: int, seed: int) -> None:
    data: dict[str, Any] = json.loads(character_file.read_text())
    data.pop("plugins", None)  # scripted models instead of the character's model plugins
    with tempfile.TemporaryDirectory() as tmp:
        async with Database(Path(tmp) / "t.db") as db, harnesses(db, Path(tmp)) as make:
            h = await make(ChannelType.DM, **data)
            h.rt.rng = random.Random(seed)  # the same sample of the character every run
            prompts: list[str] = []

            async def large(runtime: Any, params: dict[str, Any]) -> str:
                prompts.append(params["prompt"])
                return plan("Happy to help.")

            async def small(runtime: Any, params: dict[str, Any]) -> str:
                return "<response><thought>ok</thought></response>"

            window = {"context_length": (lambda: context)} if context else {}
            h.rt.register_model(ModelType.TEXT_LARGE, large, "bench", 100, **window)
            h.rt.register_model(ModelType.TEXT_SMALL, small, "bench", 100, **window)
            for number in range(lines):
                await h.say(_LINES[number % len(_LINES)])
            await h.say("And what about Saturn's rings? Can I see them?")
            prompt = prompts[-1]
            system = h.rt.character.system or ""
            print(f"{'system message':<64}{estimate_tokens(system):>6}")
            for title, tokens in parts_of(prompt):
                print(f"{title:<64}{tokens:>6}")
            total = estimate_tokens(prompt) + estimate_tokens(system)
            print(f"{'total (prompt and system message)':<64}{total:>6}")
            print(
                f"{'occurrences of the system prompt in the prompt':<64}{prompt.count(system[:60]) if system else 0:>6}"
            )
            print(f"{'occurrences of the received line in the prompt':<64}{prompt.count('what about Saturn'):>6}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("character", nargs="?", default="characters/iris.json", type=Path)
    parser.add_argument("--context", type=int, default=None, help="the model's context window, in tokens")
    parser.add_argument("--lines", type=int, default=12, help="lines of conversation before the measured one")
    parser.add_argument("--seed", type=int, default=0, help="which sample of the character's bio and examples")
    args = parser.parse_args()
    asyncio.run(main(args.character, args.context, args.lines, args.seed))
