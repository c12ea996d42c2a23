"""The daemon: every character in one event loop, its platforms, reloads, control endpoint and systemd."""

__all__: list[str] = []
