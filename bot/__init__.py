"""troupe's shared runtime: characters, ids, storage and the agent runtime.

Imports no platform SDK and no vendor SDK.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

__all__ = ["installed_version"]


def installed_version() -> str:
    """troupe's version as installed (``unknown`` when run from a tree that is not installed)."""
    try:
        return _version("troupe")
    except _PackageNotFoundError:
        return "unknown"
