"""The ``harness`` fixture (tests/plugins/core/harness.py) for every test in this package."""

from .harness import harness

__all__ = ["harness"]
