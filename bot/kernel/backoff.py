"""Delays between retries: exponential, capped, with jitter.

::

    backoff = ExponentialBackoff(base=2.0, cap=60.0)
    while True:
        try:
            return await connect()
        except OSError:
            await asyncio.sleep(backoff.delay())

The n-th delay (counting from 0) is drawn uniformly from ``[d/2, d]`` with
``d = min(cap, base * 2**n)``: half of it guaranteed so retries do spread out, the other half
random so many clients that failed together do not retry together. ``reset()`` starts again
from ``base`` (call it once the thing being retried works again).

Retrying is bounded by time, not by a count of tries, wherever the other side says how long to
wait (a 429's ``retry_after``): a :class:`Deadline` says whether a wait still fits::

    deadline = Deadline.after(60.0)
    ...
    if not deadline.allows(wait):
        raise GaveUp(f"a wait of {wait} s would end past the {deadline.seconds} s deadline")
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

__all__ = ["Deadline", "ExponentialBackoff"]


class ExponentialBackoff:
    """Retry delays that double from ``base`` up to ``cap`` seconds."""

    __slots__ = ("_random", "attempts", "base", "cap")

    def __init__(self, base: float = 1.0, cap: float = 60.0, *, rng: random.Random | None = None) -> None:
        if base <= 0 or cap < base:
            raise ValueError(f"backoff needs 0 < base <= cap, not base={base} cap={cap}")
        self.base = base
        self.cap = cap
        self.attempts = 0
        self._random = rng or random.Random()

    def delay(self) -> float:
        """The next delay in seconds (and count one more attempt)."""
        ceiling = min(self.cap, self.base * 2 ** min(self.attempts, 62))
        self.attempts += 1
        return self._random.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.attempts = 0


def _now() -> float:
    return asyncio.get_running_loop().time()


@dataclass(frozen=True, slots=True)
class Deadline:
    """A moment ``seconds`` after it was made (on the event loop's clock), past which a retry
    loop stops waiting."""

    seconds: float
    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(seconds, _now() + seconds)

    def remaining(self) -> float:
        """Seconds left (negative once it has passed)."""
        return self.at - _now()

    def allows(self, wait: float) -> bool:
        """Whether waiting ``wait`` seconds from now ends by the deadline."""
        return wait <= self.remaining()
