"""troupe's own tools the core plugin offers: one module per tool, each exposing ``tool`` (an
:class:`~bot.sdk.OwnTool`); a character is offered those its ``TROUPE_TOOLS`` names."""

__all__: list[str] = []
