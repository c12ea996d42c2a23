"""Chat platforms. Each subpackage translates one platform's guilds, chats and users into
troupe's worlds, rooms and entities, and declares itself with ``meta`` (see :mod:`bot.config.plugins`)."""
