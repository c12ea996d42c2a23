"""The errors troupe raises.

::

    TroupeError                      root of everything troupe raises on purpose
    ├── ConfigError                  bad configuration; the daemon exits with status 78
    │   ├── CharacterError           one character file is wrong (file, problems)
    │   ├── SecretReferenceError     an ``env:``/``file:``/``credential:`` reference cannot be resolved
    │   ├── PluginLoadError          a plugin's setup failed for an agent (plugin, agent, original)
    │   └── TableDeclarationError    a plugin's declared tables cannot be made (plugin)
    └── StoreError                   the database cannot be used
        ├── SchemaVersionError       the file was written by a newer troupe
        ├── VectorExtensionError     sqlite-vec could not be loaded
        └── EmbeddingDimensionError  a vector of the wrong length for the active column
    └── ModelError                   a model call failed (provider, model_type)
        ├── ModelAuthError           the key was refused
        ├── ModelRateLimited         the provider asked us to slow down (retry_after)
        ├── ModelRequestRejected     the request was refused as asked (HTTP 400/422)
        │   ├── ModelContextExceeded the prompt was longer than the model's context (limit)
        │   └── ToolsRefused         the server takes no tools: offer them another way
        └── ModelUnavailable         timeout, connection failure or server error
    └── SendError                    a platform could not deliver a message the agent started
    └── PartlySent                   a message in pieces stopped part-way (sent)
    └── ReloadError                  a reload was refused (also a RuntimeError)
        └── ReloadFailed             a reload started and failed; nothing changed

Errors about one character carry it as ``agent`` rather than in their text: ``str()`` shows
``<agent>: <message>``, and :func:`reason_for` shows the message beside the agent's name.

Messages say what is wrong and what to do. They never contain a secret value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "AudioError",
    "CharacterError",
    "ConfigError",
    "EXIT_CONFIG",
    "EXIT_TEMPFAIL",
    "EmbeddingDimensionError",
    "ModelAuthError",
    "ModelContextExceeded",
    "ModelError",
    "ModelRateLimited",
    "ModelRequestRejected",
    "ModelUnavailable",
    "PartlySent",
    "PluginLoadError",
    "Problem",
    "ReloadError",
    "ReloadFailed",
    "SchemaVersionError",
    "SecretReferenceError",
    "SendError",
    "SettingUnset",
    "StoreError",
    "StoreLocked",
    "StoreUnavailable",
    "TableDeclarationError",
    "TooLargeToFetch",
    "ToolsRefused",
    "TroupeError",
    "VectorExtensionError",
    "reason_for",
]

#: ``EX_CONFIG`` from sysexits.h; systemd units use it to stop restart loops.
EXIT_CONFIG = 78
#: sysexits EX_TEMPFAIL: it may work later (the database stayed locked); systemd starts troupe again.
EXIT_TEMPFAIL = 75


class TroupeError(Exception):
    """Root of every error troupe raises on purpose.

    ``message`` says what is wrong; ``agent`` is the character it is about, if any. ``str()``
    composes the two as ``<agent>: <message>``; where the agent is shown already (a log line
    that names it, ``troupe status`` beside its name) show ``message`` alone.
    """

    __slots__ = ("agent", "message")

    def __init__(self, message: str, *, agent: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.agent = agent

    def __str__(self) -> str:
        return f"{self.agent}: {self.message}" if self.agent else self.message

    def __repr__(self) -> str:
        agent = f", agent={self.agent!r}" if self.agent else ""
        return f"{type(self).__name__}({self.message!r}{agent})"

    def reason_for(self, agent: str) -> str:
        """The message as shown next to ``agent``'s name: without the name when it is about that agent."""
        return self.message if self.agent == agent else str(self)


class ConfigError(TroupeError):
    """Configuration that cannot work; the daemon exits with :data:`EXIT_CONFIG`."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a character file."""

    path: str
    """JSON path of the field, such as ``$.settings.secrets.OPENAI_API_KEY``; ``$`` for the file."""
    message: str
    """What is wrong and what to do about it."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class CharacterError(ConfigError):
    """A character file has one or more problems."""

    __slots__ = ("problems", "source")

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{source}:\n{lines}")


class SecretReferenceError(ConfigError):
    """A secret given as a reference (``env:NAME``, ``file:/path``, ``credential:NAME``) cannot be resolved."""

    __slots__ = ("reference",)

    def __init__(self, reference: str, reason: str) -> None:
        self.reference = reference
        super().__init__(f"cannot resolve secret reference {reference!r}: {reason}")


class SettingUnset(ConfigError):
    """Nothing is configured where a setting is needed: any one of ``settings`` would do (the model
    key, or a local server's address). The console's setup page can write it to ``.env``."""

    __slots__ = ("settings",)

    def __init__(self, message: str, *, settings: tuple[str, ...], agent: str | None = None) -> None:
        super().__init__(message, agent=agent)
        self.settings = settings


class StoreError(TroupeError):
    """The database cannot be opened or used."""

    __slots__ = ()


class StoreUnavailable(StoreError):
    """The database server cannot be reached now (down, starting up, out of connections, its
    name not resolvable yet): trying again later may work, unlike a refused login or a wrong URL."""

    __slots__ = ()


class StoreLocked(StoreError):
    """Another process holds the database file locked (a backup, ``sqlite3`` at a shell):
    waiting may help, unlike a file that cannot be read."""

    __slots__ = ()


class SchemaVersionError(StoreError):
    """The database was written by a newer version of troupe."""

    __slots__ = ()


class VectorExtensionError(StoreError):
    """sqlite-vec could not be loaded into SQLite."""

    __slots__ = ()


class EmbeddingDimensionError(StoreError, ValueError):
    """A vector's length does not match the store's active embedding dimension."""

    __slots__ = ()


class PluginLoadError(ConfigError):
    """A plugin could not be set up for an agent; the other agents run on."""

    __slots__ = ("original", "plugin")

    def __init__(self, plugin: str, agent: str | None, original: BaseException) -> None:
        self.plugin, self.original = plugin, original
        reason = reason_for(original, agent) if agent else str(original)  # the agent is named once
        who = f" for {agent}" if agent else ""
        super().__init__(f"plugin {plugin}{who} failed to load: {reason}", agent=agent)

    def __str__(self) -> str:  # the message names the agent already
        return self.message


class TableDeclarationError(ConfigError):
    """A plugin's declared tables (``PluginMeta.tables``) cannot be made or migrated: the message
    names the plugin, the table and what to change. Only that plugin is affected."""

    __slots__ = ("plugin",)

    def __init__(self, plugin: str, problem: str) -> None:
        self.plugin = plugin
        super().__init__(f"plugin {plugin} declares tables troupe cannot make: {problem}")


class ModelError(TroupeError):
    """A model call failed. Messages name the provider, never a key; ``original`` is what the
    handler raised when it was not a ModelError itself (``None`` otherwise)."""

    __slots__ = ("model_type", "original", "provider")

    def __init__(
        self,
        message: str,
        *,
        agent: str | None = None,
        provider: str | None = None,
        model_type: str | None = None,
        original: BaseException | None = None,
    ) -> None:
        super().__init__(message, agent=agent)
        self.provider, self.model_type, self.original = provider, model_type, original


class ModelAuthError(ModelError):
    """The provider refused the key (401/403)."""

    __slots__ = ()


class ModelRateLimited(ModelError):
    """The provider is rate-limiting us; ``retry_after`` seconds if it said."""

    __slots__ = ("retry_after",)

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ModelRequestRejected(ModelError):
    """The provider rejected the request as it was asked (HTTP 400 or 422): a parameter or a
    value it does not support, a prompt it will not take. Asking the same again fails again."""

    __slots__ = ()


class ModelContextExceeded(ModelRequestRejected):
    """The server refused the prompt as longer than the model's context window. ``limit`` is the
    window in tokens when the server said it (``None`` otherwise): a shorter prompt may pass."""

    __slots__ = ("limit",)

    def __init__(self, message: str, *, limit: int | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.limit = limit


class ToolsRefused(ModelRequestRejected):
    """The server refused a request because it carried ``tools`` (it, or its model, cannot call
    tools): the caller offers the tools another way (troupe's planning format) instead."""

    __slots__ = ()


class ModelUnavailable(ModelError):
    """Timeout, connection failure or server error after retries."""

    __slots__ = ()


class SendError(TroupeError):
    """A platform could not deliver a message the agent started (SEND_MESSAGE).

    The message is shown to the person who asked, so it says what went wrong in plain words.
    """

    __slots__ = ()


class TooLargeToFetch(TroupeError):
    """An attachment larger than its platform lets a bot download
    (:meth:`~bot.kernel.messages.ReplyChannel.fetch`).

    The message says so to follow "it is", for a person: "larger than the 20 MB the Telegram Bot
    API lets bots download".
    """

    __slots__ = ()


class PartlySent(TroupeError):
    """A message sent in several pieces stopped part-way: ``sent`` holds the platform's messages
    for the pieces that did go out (they stay sent, and should be remembered); the error that
    stopped the next piece is the ``__cause__``."""

    __slots__ = ("sent",)

    def __init__(self, message: str, sent: list[Any]) -> None:
        super().__init__(message)
        self.sent = sent


class ReloadError(TroupeError, RuntimeError):
    """A reload did not happen: one is already running, the daemon is not running, or it has no
    character files to read again. Nothing was changed, nothing was logged."""

    __slots__ = ()


class ReloadFailed(ReloadError):
    """A reload started and failed (logged already); every agent keeps running as it was."""

    __slots__ = ()


def reason_for(error: BaseException, agent: str) -> str:
    """``error``'s message as shown next to ``agent``'s name (which it then does not repeat)."""
    return error.reason_for(agent) if isinstance(error, TroupeError) else str(error)


class AudioError(TroupeError, ValueError):
    """Audio bytes could not be decoded, encoded or interpreted.

    A ``ValueError`` because the cause is always the data handed in (a corrupt file, a truncated
    packet, PCM of the wrong length), never the machine; a ``TroupeError`` like everything troupe
    raises on purpose. Callers log it and skip the item. The message says what was wrong with
    the bytes, never what they contained.
    """
