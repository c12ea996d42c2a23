"""What TRANSCRIBE_MEDIA and CHAT_WITH_ATTACHMENTS share: the attachments a request names.

Not an action itself (the leading underscore keeps it out of discovery).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["named_in"]

#: Upstream matches attachment ids by their first five characters, which people copy from prompts.
_ID_PREFIX = 5


def named_in(text: str, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``items`` that ``text`` names by id (or its first characters), title or URL."""
    wanted = text.casefold()
    named = []
    for item in items:
        keys = [item["id"], item["title"], item["url"]]
        if len(item["id"]) > _ID_PREFIX:
            keys.append(item["id"][:_ID_PREFIX])
        if any(len(k) >= 3 and k.casefold() in wanted for k in keys if k):
            named.append(item)
    return named
