"""TIME: the current date and time in UTC, so the model never guesses it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.sdk import Memory, Provider, ProviderResult, State

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["format_time", "provider"]

# Spelled out rather than strftime's %A/%B, which follow the process locale.
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def format_time(moment: datetime) -> str:
    """``Tuesday, March 5, 2024 at 2:07:09 PM UTC`` (en-US full date and long time)."""
    moment = moment.astimezone(UTC)
    hour = moment.hour % 12 or 12
    half = "AM" if moment.hour < 12 else "PM"
    return (
        f"{_DAYS[moment.weekday()]}, {_MONTHS[moment.month - 1]} {moment.day}, {moment.year} "
        f"at {hour}:{moment.minute:02d}:{moment.second:02d} {half} UTC"
    )


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    now = datetime.fromtimestamp(runtime.clock() / 1000, UTC)
    when = format_time(now)
    text = f"# Current Time\nIt is {when}. Use this for anything that depends on the date or the time of day."
    return ProviderResult(text=text, values={"time": when}, data={"time": now})


provider = Provider(
    name="TIME",
    get=_get,
    description="The current date and time (UTC).",
)
