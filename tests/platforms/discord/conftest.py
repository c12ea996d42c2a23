"""The ``scene`` fixture (tests/platforms/discord/scene.py) for the Discord tests."""

from .scene import scene

__all__ = ["scene"]
