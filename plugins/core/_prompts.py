"""Prompt templates and the small mustache renderer that fills them.

The renderer is in ``_mustache`` (what it covers, how values render); the built-in templates and
a character's own are in ``_templates``.
"""

from __future__ import annotations

from ._mustache import render
from ._templates import DEFAULT_TEMPLATES, for_source, template

__all__ = ["DEFAULT_TEMPLATES", "for_source", "render", "template"]
