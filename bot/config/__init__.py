"""Configuration: character files, daemon settings, secret references, what plugins and platforms exist."""

__all__: list[str] = []
