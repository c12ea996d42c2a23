"""Benchmark: the troupe scene — five characters in the same Telegram groups, one daemon.

    .venv/bin/python tests/bench/bench_scene.py [--groups 50] [--rates 2] [--seconds 10] [--rounds 1] [--warm-up 4]

The real ``troupe start`` runs as a subprocess with five characters (Ada, Brann, Cleo, Dora,
Emil), each its own bot on the fake Telegram Bot API (tests/fakes/telegram_server.py, in this
process) and each with the openai plugin pointed at the fake OpenAI-compatible server
(tests/bench/_common.py: a process of its own, answering at once). Every bot and ``--people``
people are members of each of ``--groups`` groups. What one character says in a group reaches
the others through the daemon's relay, as in production.

The model's answers (tests/bench/_common.py ``Script``): a plan is a REPLY; a character deciding
alone answers a person's message that names no character and lets everything else pass; the
troupe decision (when troupe has one) picks, by the same rule, every character it is asked
about; a reflection learns one fact.

After a warm-up (``--warm-up`` rounds of one message per group naming a character; not counted:
a character reflects on its cadence only once a room holds nine messages, so the warm-up brings
every group there and the counts below are those of a conversation under way) come two phases:
A, messages that name one character ("Brann, what do you make of maps (question 7)?"; in each
group the five are named in turn); B, messages that name none. People write in turn, and the
groups are written to in turn. Each phase has two parts:

- latency: for each rate in ``--rates``, messages at that rate (open loop, one group after the
  other) for ``--seconds``; reply p50/p95 is the time from a user's message to the first reply
  quoting it in that group.
- saturation: ``--rounds`` rounds, each of one message in every group at the same moment.
  User messages/s at saturation = the round's messages / the time from its first message to the
  daemon's last activity (a reply sent or a model request), once it has answered every message
  and gone quiet (nothing for ``--quiet`` s). The model answers at once, so the daemon's own CPU
  is what runs out: fifty messages at once keep it busy until the round's work is done. The
  p50/p95 of a round is queueing time and is printed for information.

For each phase: model requests per user message (by endpoint, and chat requests by kind: the
template that wrote the prompt), replies sent per user message, chat requests per reply sent,
user messages/s at saturation and the latencies. Everything a phase's messages caused counts,
the replies to relayed replies included. The daemon's log is printed if it fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench._common import ModelServer, Tally, p50_p95
from tests.daemon.crash_run import spawn_start
from tests.fakes.telegram_server import FakeBot, FakeChat, FakeTelegram, FakeUser

NAMES = ("Ada", "Brann", "Cleo", "Dora", "Emil")
TOPICS = ("tides", "bread", "maps", "bees", "clocks", "ferns", "kites")


@dataclass
class Said:
    """A user's message and when it went to Telegram."""

    chat_id: int
    message_id: int
    at: float


@dataclass
class Watcher:
    """Notes when each bot message reaches the fake Telegram, and when the daemon was last busy."""

    bots: list[FakeBot]
    seen: dict[str, int] = field(default_factory=dict)
    replies: dict[tuple[int, int], float] = field(default_factory=dict)
    """(chat id, quoted message id) -> when the first reply quoting it arrived."""
    sent: int = 0
    last_activity: float = 0.0
    requests: int = 0

    def poll(self) -> None:
        now = time.monotonic()
        for bot in self.bots:
            new = bot.sent[self.seen.get(bot.token, 0) :]
            self.seen[bot.token] = len(bot.sent)
            for message in new:
                self.sent += 1
                self.last_activity = now
                if message["reply_to"] is not None:
                    self.replies.setdefault((message["chat_id"], int(message["reply_to"])), now)

    async def run(self) -> None:
        while True:
            self.poll()
            await asyncio.sleep(0.005)

    async def settle(self, models: ModelServer, said: list[Said], quiet: float, timeout: float) -> Tally:
        """Wait until every message in ``said`` has a reply and nothing happened for ``quiet`` s
        (or, with messages unanswered, for five times as long; or ``timeout`` s in all); the
        model requests counted so far."""
        deadline = time.monotonic() + timeout
        self.last_activity = time.monotonic()  # the last message was just sent
        while True:
            tally = await models.tally()
            now = time.monotonic()
            if tally.total != self.requests:
                self.requests, self.last_activity = tally.total, now
            missing = sum((s.chat_id, s.message_id) not in self.replies for s in said)
            idle = now - self.last_activity
            if idle >= quiet and not missing:
                return tally
            if idle >= 5 * quiet or now > deadline:
                print(f"    {missing} of {len(said)} messages never answered (idle {idle:.1f} s)")
                return tally
            await asyncio.sleep(0.1)

    def latencies(self, said: list[Said]) -> list[float]:
        return [
            self.replies[(s.chat_id, s.message_id)] - s.at for s in said if (s.chat_id, s.message_id) in self.replies
        ]


@dataclass
class Scene:
    telegram: FakeTelegram
    models: ModelServer
    watcher: Watcher
    groups: list[FakeChat]
    people: list[FakeUser]
    quiet: float
    timeout: float
    count: int = 0
    named: dict[int, int] = field(default_factory=dict)
    """Per group: how many of its messages named a character (they name the five in turn)."""

    async def say(self, phase: str) -> Said:
        """The next person writes in the next group (the groups in turn, so any run of as many
        messages as there are groups reaches each group once)."""
        n, self.count = self.count, self.count + 1
        group, person = self.groups[n % len(self.groups)], self.people[n % len(self.people)]
        topic = TOPICS[n % len(TOPICS)]
        if phase == "A":
            asked = self.named.get(group.id, 0)
            self.named[group.id] = asked + 1
            name = NAMES[(n % len(self.groups) + asked) % len(NAMES)]
            text = f"{name}, what do you make of {topic} (question {n})?"
        else:
            text = f"What does everyone make of {topic} (question {n})?"
        at = time.monotonic()
        message = await self.telegram.user_says(person, group, text)
        return Said(group.id, message["message_id"], at)


@dataclass
class Part:
    said: list[Said]
    seconds: float
    latencies: list[float]


async def at_rate(scene: Scene, phase: str, rate: float, seconds: float) -> Part:
    said: list[Said] = []
    started = time.monotonic()
    for k in range(max(1, round(rate * seconds))):
        await asyncio.sleep(max(0.0, started + k / rate - time.monotonic()))
        said.append(await scene.say(phase))
    await scene.watcher.settle(scene.models, said, scene.quiet, scene.timeout)
    return Part(said, scene.watcher.last_activity - started, scene.watcher.latencies(said))


async def round_at_once(scene: Scene, phase: str) -> Part:
    started = time.monotonic()
    said = [await scene.say(phase) for _ in scene.groups]
    await scene.watcher.settle(scene.models, said, scene.quiet, scene.timeout)
    return Part(said, scene.watcher.last_activity - started, scene.watcher.latencies(said))


async def phase(scene: Scene, name: str, title: str, rates: list[float], seconds: float, rounds: int) -> None:
    print(f"  phase {name}: {title}")
    before, sent_before = await scene.models.tally(), scene.watcher.sent
    messages = 0
    for rate in rates:
        part = await at_rate(scene, name, rate, seconds)
        messages += len(part.said)
        print(
            f"    at {rate:g} msgs/s: {len(part.said)} messages, all handled after {part.seconds:.1f} s; "
            f"reply {p50_p95(part.latencies)}"
        )
    saturation: list[Part] = []
    for _ in range(rounds):
        part = await round_at_once(scene, name)
        messages += len(part.said)
        saturation.append(part)
    if saturation:
        done = sum(len(p.said) for p in saturation)
        busy = sum(p.seconds for p in saturation)
        waits = [s for p in saturation for s in p.latencies]
        print(
            f"    saturation: {done} messages ({len(scene.groups)} at once, {rounds}x) in {busy:.1f} s: "
            f"{done / busy:.1f} user msgs/s; reply (queueing) {p50_p95(waits)}"
        )
    requests = await scene.models.tally() - before
    replies = scene.watcher.sent - sent_before
    chat = requests.endpoints["chat"]
    print(f"    {requests.per(messages, 'user message')}")
    print(
        f"    {replies / messages:.2f} replies sent per user message; "
        f"{chat / max(replies, 1):.2f} chat requests ({requests.total / max(replies, 1):.2f} model requests) "
        f"per reply sent ({messages} user messages, {replies} replies)"
    )


def write_characters(folder: Path, telegram: FakeTelegram, bots: dict[str, FakeBot]) -> None:
    folder.mkdir()
    for name, bot in bots.items():
        (folder / f"{name.lower()}.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "bio": [f"{name} is one of five characters in a troupe.", f"{name} likes {TOPICS[len(name)]}."],
                    "topics": list(TOPICS),
                    "plugins": ["@elizaos/plugin-telegram", "@elizaos/plugin-openai"],
                    "settings": {
                        "secrets": {"TELEGRAM_BOT_TOKEN": bot.token},
                        "TELEGRAM_API_ROOT": telegram.url,
                        "TELEGRAM_POLL_TIMEOUT_S": "1",
                    },
                }
            )
        )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--people", type=int, default=10, help="people in every group, writing in turn")
    parser.add_argument("--rates", type=float, nargs="*", default=[2.0], help="user msgs/s of the latency runs")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each latency run")
    parser.add_argument("--rounds", type=int, default=1, help="saturation rounds (one message per group each)")
    parser.add_argument("--warm-up", type=int, default=4, help="rounds (one message per group each) before measuring")
    parser.add_argument("--phases", default="AB", help="which phases to run: A, B or AB")
    parser.add_argument("--quiet", type=float, default=1.0, help="seconds without activity that end a run")
    parser.add_argument("--timeout", type=float, default=120.0, help="longest wait for a run's answers")
    args = parser.parse_args()
    print(
        f"bench_scene: {len(NAMES)} characters, {args.groups} Telegram groups, {args.people} people; "
        "troupe start as a subprocess; models over HTTP answering at once"
    )
    work = Path(tempfile.mkdtemp(prefix="troupe-scene-", dir="/tmp"))  # AF_UNIX paths must be short
    log = work / "daemon.log"
    process: asyncio.subprocess.Process | None = None
    watching: asyncio.Task[Any] | None = None
    status = 0
    try:
        async with FakeTelegram() as telegram, ModelServer(NAMES) as models:
            bots = {
                name: telegram.add_bot(
                    f"{7300 + i}:token-{name.lower()}", username=f"{name.lower()}_bot", first_name=name
                )
                for i, name in enumerate(NAMES)
            }
            people = [telegram.add_user(f"Person{i}", username=f"person{i}") for i in range(args.people)]
            groups = [telegram.add_group(f"Group {g}", members=[*people, *bots.values()]) for g in range(args.groups)]
            write_characters(work / "characters", telegram, bots)
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(work),
                "LANG": "C.UTF-8",
                "TROUPE_DATA_DIR": str(work / "data"),
                "TROUPE_STOP_TIMEOUT_S": "10",
                "OPENAI_API_KEY": "sk-bench-scene-0000",
                "OPENAI_BASE_URL": models.url,
            }
            started = time.monotonic()
            process = await spawn_start(work, env, log)
            for bot in bots.values():
                await telegram.wait_polling(bot, timeout=60)
            print(f"  daemon up, all {len(bots)} bots polling, in {time.monotonic() - started:.1f} s")
            watcher = Watcher(list(bots.values()))
            watching = asyncio.create_task(watcher.run())
            scene = Scene(telegram, models, watcher, groups, people, args.quiet, args.timeout)
            warm = [await round_at_once(scene, "A") for _ in range(args.warm_up)]
            print(
                f"  warm-up: {args.warm_up} x {len(groups)} messages naming a character (one per group at once), "
                f"in {sum(w.seconds for w in warm):.1f} s"
            )
            titles = {"A": "every message names one character", "B": "no message names a character"}
            for name in args.phases:
                await phase(scene, name, titles[name], args.rates, args.seconds, args.rounds)
    except Exception:
        status = 1
        raise
    finally:
        if watching is not None:
            watching.cancel()
        if process is not None and process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()
        if process is not None and (status or process.returncode):
            print(f"daemon exited with {process.returncode}; its log:\n{log.read_text(errors='replace')[-5000:]}")
        shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
