"""``troupe memory``: inspect, export and forget what an agent remembers.

::

    troupe memory list [AGENT] [--room ROOM] [--entity WHO] [--table T]... [--limit N] [--json]
    troupe memory show AGENT                 what the agent stores: counts, rooms, people (with ids)
    troupe memory search AGENT QUERY [--room ROOM] [--entity WHO] [--table T]... [--limit N] [--json]
    troupe memory export AGENT [--room ROOM | --entity WHO] [--out FILE]
    troupe memory forget AGENT (--room ROOM | --entity WHO | --knowledge | --all) [--dry-run] [--yes]

It works on the database file the daemon uses (``TROUPE_DB_PATH``, else
``TROUPE_DATA_DIR/troupe.db``; ``--db`` overrides both). Running it while the daemon runs is
safe: SQLite's write-ahead log lets both use the file, and every write here is one short
transaction. ``list`` without an agent lists the agents. AGENT is a name or an id, or
``shared`` for the knowledge every agent sees (what character files mark ``shared``); WHO is an
entity id or a name (a name several people share is refused, with the candidates listed); ROOM
is a room id (``show`` lists them).

``forget --entity`` removes everything the agent stores about that person, in every room (see
:mod:`bot.store._selection` for exactly what), ``--room`` one room with everything in it, and
``--knowledge`` the agent's knowledge (its documents, and its claims on shared ones: a shared
document goes when no other agent lists it; for ``shared``, all shared knowledge), and ``--all``
everything the agent learned from conversations and its knowledge. Knowledge comes back from the
character's files at the agent's next start or reload, so ``--knowledge`` also clears what a
setting that is gone left behind. It says what it will delete and asks first on a terminal;
``--yes`` skips the question (required when not on a terminal), ``--dry-run`` only counts.
Deleted text is overwritten on disk and left out of the keyword index. A running daemon carries
on: someone forgotten who writes again is remembered afresh.

Exit status: 0 done; 1 the agent, room or person does not exist, or nothing was deleted (nothing
to forget, or the question was answered no); 2 the command line is malformed; 78 a usage or
configuration problem (no database file, an ambiguous name, ``forget`` without ``--yes`` off a
terminal, a database from a newer troupe).
"""

from __future__ import annotations

from bot.cli.memory._arguments import add_parser
from bot.cli.memory._command import run
from bot.cli.memory._stop import EXIT_NOT_FOUND

__all__ = ["EXIT_NOT_FOUND", "add_parser", "run"]
