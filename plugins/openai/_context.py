"""How long a prompt a model takes: the setting, the preset's guess, and what a server's refusal
taught.

A server that is sent more than its model's context window refuses with HTTP 400 (413 on some
gateways) and, in its own words, often the window's size:

- OpenAI and vLLM: ``This model's maximum context length is 8192 tokens. However, you requested …``
- vLLM (newer): ``… is longer than the maximum model length of 4096``
- llama-cpp-python: ``Requested tokens (6868) exceed context window of 2048``
- llama.cpp's ``llama-server``: ``the request exceeds the available context size …`` with
  ``n_ctx`` in the error body
- Ollama: ``… exceeds the context length …`` / ``prompt too long …``

:func:`context_refusal` reads those; :class:`LearnedContexts` remembers each window learned, per
server and model, for every character of the daemon.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["context_refusal", "ContextRefusal", "LearnedContexts", "preset_context_length"]

# What a refusal for length says (any case); a 400 saying none of it is some other refusal.
_WORDING = re.compile(
    r"context (?:length|window|size)|maximum model length|prompt (?:is )?too long|too many tokens"
    r"|exceed_context_size",
    re.IGNORECASE,
)
# Where the window's size is in the wording, first match wins.
_LIMITS = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),
    re.compile(r"context window of (\d+)", re.IGNORECASE),
    re.compile(r"maximum model length (?:is |of )?(\d+)", re.IGNORECASE),
    re.compile(r"context (?:length|size) (?:is |of )(\d+)", re.IGNORECASE),
)

# Windows of OpenAI's models by name prefix, longest prefix first; the rest of OpenAI's are large.
_OPENAI_MODELS = (
    ("gpt-3.5-turbo-instruct", 4_096),
    ("gpt-3.5", 16_385),
    ("gpt-4-32k", 32_768),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 128_000),
    ("gpt-4", 8_192),
)
_OPENAI_DEFAULT = 128_000
# Ollama gives a model 4096 tokens unless told otherwise (2048 before 0.6.6: learned on refusal).
_OLLAMA_DEFAULT = 4_096
# Any other OpenAI-compatible server (vLLM, llama.cpp, a gateway): a window most models have.
_COMPATIBLE_DEFAULT = 8_192
_OPENAI_HOST = "api.openai.com"


@dataclass(frozen=True, slots=True)
class ContextRefusal:
    """A server's refusal of a prompt as too long, and the window it named (None if it did not)."""

    limit: int | None


def context_refusal(status: int, body: object) -> ContextRefusal | None:
    """The refusal for length in an error reply of HTTP ``status`` (its JSON, or its text); None
    when the reply is not one."""
    if status not in (400, 413, 422):
        return None
    text = str(body)
    if not _WORDING.search(text):
        return None
    limit = _n_ctx(body)
    for pattern in _LIMITS:
        if limit is not None:
            break
        found = pattern.search(text)
        limit = int(found.group(1)) if found else None
    return ContextRefusal(limit if limit and limit > 0 else None)


def _n_ctx(body: object) -> int | None:
    """llama-server's ``n_ctx`` field, in the body or its ``error``."""
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    for place in (body, inner if isinstance(inner, dict) else {}):
        value = place.get("n_ctx")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def preset_context_length(preset: str, base_url: str, model: str) -> int:
    """The window to assume for ``model`` when neither the setting nor the server said."""
    if preset == "ollama":
        return _OLLAMA_DEFAULT
    if preset == "openai" and _OPENAI_HOST in base_url:
        name = model.lower()
        return next((size for prefix, size in _OPENAI_MODELS if name.startswith(prefix)), _OPENAI_DEFAULT)
    return _COMPATIBLE_DEFAULT


@dataclass(slots=True)
class LearnedContexts:
    """The windows servers named when refusing a prompt, per base URL and model: the daemon's
    one (``runtime.shared.instance_of(LearnedContexts)``), so its characters learn once."""

    _windows: dict[tuple[str, str], int] = field(default_factory=dict)

    def get(self, base_url: str, model: str) -> int | None:
        return self._windows.get((base_url, model))

    def learn(self, base_url: str, model: str, limit: int) -> bool:
        """Remember ``limit``; whether it is news (a smaller window than known)."""
        key = (base_url, model)
        known = self._windows.get(key)
        if known is not None and known <= limit:
            return False
        self._windows[key] = limit
        return True
