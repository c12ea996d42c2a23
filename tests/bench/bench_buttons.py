"""Benchmark: time from a button press to its acknowledgement, on Telegram and Discord, while the
model is slow.

Not a test. Run it from the repository root::

    .venv/bin/python tests/bench/bench_buttons.py                       # 20 presses each, model 5 s
    .venv/bin/python tests/bench/bench_buttons.py --presses 50 --model-latency 10

Each platform runs the real daemon against its fake (tests/bench/_press_telegram.py,
tests/bench/_press_discord.py): one character, a message with buttons, presses one after the
other, each also answered through a model that takes ``--model-latency`` seconds a call. Prints,
per platform, p50/p95/max of the seconds from the press reaching the bot to its acknowledgement
(Telegram answerCallbackQuery; Discord's deferred interaction, which must come within 3 s).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench import _press_discord, _press_telegram
from tests.bench._common import p50_p95

Measure = Callable[[int, float], Awaitable[list[float]]]
PLATFORMS: dict[str, tuple[str, Measure]] = {
    "telegram": ("Telegram, press -> answerCallbackQuery", _press_telegram.press_to_ack),
    "discord": ("Discord, press -> deferred interaction", _press_discord.press_to_ack),
}


async def main(args: argparse.Namespace) -> None:
    # The daemon's log stays out of the figures: each run ends by shutting the slow model while
    # answers still wait for it, which the daemon rightly logs as failures.
    logging.getLogger().addHandler(logging.NullHandler())
    print(f"bench_buttons: {args.presses} presses per platform, the model {args.model_latency:g} s a call")
    for name in args.platforms:
        label, measure = PLATFORMS[name]
        seconds = await measure(args.presses, args.model_latency)
        print(f"  {label:40} {p50_p95(seconds)}  max {max(seconds) * 1000:7.1f} ms  ({len(seconds)} presses)")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--model-latency", type=float, default=5.0, help="seconds the fake model takes a call")
    parser.add_argument(
        "--platforms",
        type=lambda s: [p.strip() for p in s.split(",") if p.strip()],
        default=list(PLATFORMS),
        help="comma list of " + ", ".join(PLATFORMS),
    )
    args = parser.parse_args(argv)
    unknown = [p for p in args.platforms if p not in PLATFORMS]
    if unknown:
        parser.error(f"unknown platform {', '.join(unknown)}: choose among {', '.join(PLATFORMS)}")
    if args.presses < 1:
        parser.error("--presses is 1 or more")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
