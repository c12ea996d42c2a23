"""The vocabulary every layer speaks: records, ids, errors, events, messages, models, and small utilities."""

__all__: list[str] = []
