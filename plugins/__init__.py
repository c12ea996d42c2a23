"""Capabilities a character opts into. Each subpackage declares itself with ``meta``
(see :mod:`bot.config.plugins`)."""
