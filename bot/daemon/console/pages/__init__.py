"""The console's pages, one module each; :mod:`bot.daemon.console._routes` registers them."""

__all__: list[str] = []
