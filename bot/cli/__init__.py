"""The ``troupe`` command and its subcommands."""

__all__: list[str] = []
