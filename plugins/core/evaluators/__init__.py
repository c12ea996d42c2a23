"""Evaluators that learn from conversations; one module each, exposing ``evaluator``."""

__all__: list[str] = []
