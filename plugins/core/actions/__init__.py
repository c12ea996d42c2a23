"""Actions the agent can take; one module each, exposing ``action``."""

__all__: list[str] = []
