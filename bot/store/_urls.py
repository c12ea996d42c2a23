"""Database URLs: which name PostgreSQL, and how to show one without its password."""

from __future__ import annotations

from typing import TypeGuard
from urllib.parse import urlsplit, urlunsplit

__all__ = ["is_postgres_url", "redacted_url"]


def is_postgres_url(location: object) -> TypeGuard[str]:
    """Whether ``location`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def redacted_url(url: str) -> str:
    """``url`` with its password (if any) replaced, for logs and errors."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))
