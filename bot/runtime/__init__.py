"""The agent runtime: one running character, what plugins register with it, and what it asks of the store."""

__all__: list[str] = []
