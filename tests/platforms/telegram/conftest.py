"""The ``scene`` fixture (tests/platforms/telegram/scene.py) for the Telegram tests."""

from .scene import scene

__all__ = ["scene"]
