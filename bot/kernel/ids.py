"""Deterministic ids, bit for bit the same as elizaOS's ``stringToUuid``/``createUniqueUuid``.

The same input gives the same id in both systems (a character's agent id, derived from its name,
is the same in both), and a character keeps its memories across restarts. The strings troupe
hashes for rooms, people and messages (``discord:<snowflake>``) are its own, so those ids differ
from elizaOS's.
"""

from __future__ import annotations

import functools
import hashlib
import re
from urllib.parse import quote

__all__ = ["UUID_RE", "is_uuid", "string_to_uuid", "unique_uuid"]

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)

# The characters JavaScript's encodeURIComponent leaves alone besides letters and digits.
_URI_SAFE = "-_.!~*'()"


def is_uuid(value: str) -> bool:
    """True if ``value`` is a canonical 8-4-4-4-12 hex UUID (any case)."""
    return bool(UUID_RE.match(value))


def string_to_uuid(target: str | int) -> str:
    """Map a string to a UUID the way elizaOS does.

    A string that already is a UUID is returned unchanged. Otherwise the UTF-8 string is
    percent-encoded like ``encodeURIComponent``, hashed with SHA-1, and the first 16 bytes are
    formatted as a UUID with the RFC 4122 variant and a version nibble of 0 (not 5: upstream's
    choice, kept for compatibility).
    """
    if isinstance(target, bool) or not isinstance(target, (str, int)):
        raise TypeError(f"string_to_uuid needs a str or int, not {type(target).__name__}")
    return _mapped(str(target))


# The same few room, world and person ids are mapped for every message each character sees,
# and the percent-encoding costs more than the hash: recent answers are kept (a pure function).
@functools.lru_cache(maxsize=16_384)
def _mapped(text: str) -> str:
    if is_uuid(text):
        return text
    digest = bytearray(hashlib.sha1(quote(text, safe=_URI_SAFE).encode("ascii")).digest()[:16])
    digest[6] &= 0x0F
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def unique_uuid(agent_id: str, base: str) -> str:
    """An id for ``base`` as seen by one agent (``createUniqueUuid``).

    Two characters in the same Discord channel get different room and entity ids for it, so
    their memories never collide. ``base`` is usually ``"<platform>:<native id>"``; the agent's
    own id maps to itself.
    """
    if base == agent_id:
        return agent_id
    return string_to_uuid(f"{base}:{agent_id}")
