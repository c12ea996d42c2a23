"""Providers of prompt context; one module each, exposing ``provider``."""

__all__: list[str] = []
