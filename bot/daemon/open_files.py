"""The daemon's open-file limit: raised from the soft limit to the hard one at start.

systemd gives a service 1,024 open files (soft) by default, and every connection, database file
and socket counts; the hard limit is usually far higher. asyncio waits with epoll, not select(),
so nothing in the daemon needs descriptors below 1,024. Under the unit the call is refused (its
SystemCallFilter removes @resources, and setrlimit is one), so the unit sets LimitNOFILE= itself;
elsewhere (a terminal, another supervisor) the daemon raises what it may.
"""

from __future__ import annotations

import logging
import resource
from collections.abc import Callable

__all__ = ["raise_open_file_limit"]

_log = logging.getLogger(__name__)

#: When the hard limit is unlimited, the soft one is raised this far (Linux refuses "unlimited").
_UNLIMITED_TARGET = 65536

Limits = tuple[int, int]


def raise_open_file_limit(
    get: Callable[[int], Limits] = resource.getrlimit,
    set_: Callable[[int, Limits], None] = resource.setrlimit,
) -> int:
    """Raise RLIMIT_NOFILE's soft limit to its hard limit; the soft limit in force after.

    Never raises: a refusal (EPERM under the unit's system call filter) leaves the limit as it is,
    said at debug level, for the unit's LimitNOFILE= is what counts there."""
    soft, hard = get(resource.RLIMIT_NOFILE)
    target = _UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft >= target:
        _log.debug("open-file limit %d (the hard limit)", soft)
        return soft
    try:
        set_(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError) as exc:
        _log.debug("open-file limit stays %d: raising it to %d was refused (%s)", soft, target, exc)
        return soft
    _log.debug("open-file limit raised from %d to %d", soft, target)
    return target
