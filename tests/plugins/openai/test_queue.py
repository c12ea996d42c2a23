"""ServerQueue: turns at one server, first come first served."""

from __future__ import annotations

import asyncio

from plugins.openai._pools import HttpPools
from plugins.openai._queue import ServerQueue


async def queued(queue: ServerQueue, name: str, order: list[str], done: asyncio.Event) -> None:
    await queue.acquire()
    try:
        order.append(name)
        await done.wait()
    finally:
        queue.release()


async def until_waiting(queue: ServerQueue, count: int) -> None:
    async with asyncio.timeout(60):
        while queue.waiting != count:
            await asyncio.sleep(0)


async def test_turns_come_in_order_one_at_a_time() -> None:
    queue = ServerQueue(1)
    order: list[str] = []
    releases = {name: asyncio.Event() for name in "abc"}
    tasks = []
    for number, name in enumerate("abc"):
        tasks.append(asyncio.create_task(queued(queue, name, order, releases[name])))
        await until_waiting(queue, number)
    assert (order, queue.running, queue.waiting, queue.busy) == (["a"], 1, 2, True)
    releases["a"].set()
    await tasks[0]
    assert order == ["a", "b"]  # b, the first to wait, has its turn; c still waits
    releases["b"].set()
    releases["c"].set()
    await asyncio.gather(*tasks)
    assert (order, queue.running, queue.waiting, queue.busy) == (["a", "b", "c"], 0, 0, False)


async def test_a_request_that_gives_up_while_waiting_leaves_the_line() -> None:
    queue = ServerQueue(1)
    order: list[str] = []
    first, third = asyncio.Event(), asyncio.Event()
    holder = asyncio.create_task(queued(queue, "a", order, first))
    await until_waiting(queue, 0)
    quitter = asyncio.create_task(queued(queue, "b", order, asyncio.Event()))
    await until_waiting(queue, 1)
    after = asyncio.create_task(queued(queue, "c", order, third))
    await until_waiting(queue, 2)
    quitter.cancel()
    assert queue.waiting == 1
    first.set()
    third.set()
    await asyncio.gather(holder, after)
    assert order == ["a", "c"]
    assert (queue.running, queue.waiting) == (0, 0)


async def test_a_raised_limit_lets_the_waiting_in_at_once_and_none_lets_everyone_through() -> None:
    queue = ServerQueue(1)
    order: list[str] = []
    done = asyncio.Event()
    tasks = [asyncio.create_task(queued(queue, "a", order, done))]
    await until_waiting(queue, 0)
    tasks.append(asyncio.create_task(queued(queue, "b", order, done)))
    await until_waiting(queue, 1)
    queue.limit = 2
    await until_waiting(queue, 0)
    assert (queue.running, order) == (2, ["a"])  # b has its turn; its task runs at the next step
    queue.limit = 0
    tasks.append(asyncio.create_task(queued(queue, "c", order, done)))
    async with asyncio.timeout(60):
        while len(order) < 3:
            await asyncio.sleep(0)
    assert queue.running == 3 and not queue.busy
    done.set()
    await asyncio.gather(*tasks)
    assert queue.running == 0


async def test_the_daemon_keeps_one_line_per_server_whose_limit_the_last_to_ask_sets() -> None:
    pools = HttpPools()
    pools.join()
    line = pools.queue("http://127.0.0.1:8000/v1", 1)
    assert pools.queue("http://127.0.0.1:8000/v1", 3) is line and line.limit == 3  # a reload that raised it
    assert pools.queue("http://127.0.0.1:8080/v1", 1) is not line
    assert (pools.waiting("http://127.0.0.1:8000/v1"), pools.waiting("http://elsewhere/v1")) == (0, 0)
    await pools.leave()
    assert pools.queue("http://127.0.0.1:8000/v1", 1) is not line  # the last one out closed them all
