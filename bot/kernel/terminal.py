"""Asking the person at the terminal a question from async code."""

from __future__ import annotations

import asyncio
import contextlib
import threading

__all__ = ["ask"]


async def ask(question: str) -> str | None:
    """``input(question)`` without blocking the loop; ``None`` at end of input (Ctrl-D).

    The read runs in a daemon thread rather than the loop's executor: ``asyncio.run`` waits for
    its executor's threads when it ends, so after Ctrl-C a read there would hold the program
    until Enter. A daemon thread still reading when the program ends is simply dropped.
    """
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str | None] = loop.create_future()

    def settle(value: str | None, error: BaseException | None) -> None:
        if answer.done():  # cancelled meanwhile (Ctrl-C)
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(value)

    def read() -> None:
        value: str | None = None
        error: BaseException | None = None
        try:
            value = input(question)
        except EOFError:
            pass
        except Exception as exc:  # noqa: BLE001 -- handed to the asking coroutine
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop has ended: nobody is asking any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=read, name="troupe-ask", daemon=True).start()
    return await answer
