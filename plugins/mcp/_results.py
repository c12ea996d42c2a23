"""A tool's answer as text for a prompt: text parts joined, pictures and resources named (never
inlined)."""

from __future__ import annotations

import json

import mcp.types as types

__all__ = ["result_text"]


def result_text(result: types.CallToolResult) -> str:
    """What ``result`` says, as text."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent):
            parts.append(f"[an image ({block.mime_type}), not shown]")
        elif isinstance(block, types.AudioContent):
            parts.append(f"[audio ({block.mime_type}), not played]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[a resource: {block.name} at {block.uri}]")
        elif isinstance(block, types.EmbeddedResource):
            parts.append(f"[a resource: {block.resource.uri}, not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts)
