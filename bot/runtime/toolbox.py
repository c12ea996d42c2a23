"""Where a character's tools are offered: the ``toolbox`` runtime service.

The MCP plugin registers a :class:`~bot.kernel.tools.Toolbox` under :data:`TOOLBOX` for each
character that lists MCP servers; the tool loop finds it with ``runtime.get_service(TOOLBOX)``
(None: the character has no tools).
"""

from __future__ import annotations

from bot.kernel.tools import Toolbox
from bot.runtime.components import ServiceKey

__all__ = ["TOOLBOX"]

TOOLBOX: ServiceKey[Toolbox] = ServiceKey("toolbox")
