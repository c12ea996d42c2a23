"""The daemon's signal handlers, on the running loop: installed where signals exist, removed after."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterable, Mapping

__all__ = ["install_signal_handlers", "remove_signal_handlers"]


def install_signal_handlers(handlers: Mapping[signal.Signals, Callable[[], None]]) -> list[signal.Signals]:
    """Install each handler on the running loop; the signals that got one (none off the main thread)."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig, handler in handlers.items():
        try:
            loop.add_signal_handler(sig, handler)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            continue
        installed.append(sig)
    return installed


def remove_signal_handlers(installed: Iterable[signal.Signals]) -> None:
    """Remove what :func:`install_signal_handlers` installed."""
    loop = asyncio.get_running_loop()
    for sig in installed:
        loop.remove_signal_handler(sig)
