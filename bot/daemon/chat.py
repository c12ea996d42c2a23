"""``troupe chat``: one character, one person, one terminal."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable, Mapping
from io import TextIOBase
from typing import TYPE_CHECKING, TextIO

from bot.config import plugins as plugin_registry
from bot.config.character import LoadResult
from bot.config.settings import DaemonSettings
from bot.kernel import logs, redact
from bot.kernel.errors import EXIT_CONFIG, PluginLoadError
from bot.kernel.models import ModelType
from bot.kernel.tools import ToolServers
from bot.runtime.agent import AgentRuntime
from bot.runtime.components import TOOLBOX
from bot.runtime.shared import Shared
from bot.store import backend_for

if TYPE_CHECKING:
    from platforms.console import ConversationLog

__all__ = ["chat", "chat_in_terminal", "runtime_plugins"]

#: Under the data directory, private like the database: what was typed is what was said.
HISTORY_FILE = "chat_history"


def runtime_plugins(result: LoadResult) -> list[str]:
    """The plugins an agent runs: the file's, plus a model plugin (every agent needs one to think)
    when the file names none."""
    return plugin_registry.with_model_plugin(result.plugins)


def chat_in_terminal(
    settings: DaemonSettings,
    result: LoadResult,
    environ: Mapping[str, str],
    *,
    user: str = "you",
    log_lines: bool = False,
) -> int:
    """``troupe chat`` on this process's terminal: line editing and history, Ctrl-C and Ctrl-D as
    in a shell; returns the exit status.

    Unless ``log_lines`` (the person asked for a log level), warnings and errors are not log
    lines but lines of the conversation (see :class:`~platforms.console.ConversationLog`).
    """
    from platforms.console import ConversationLog, TerminalPrompt

    prompt = TerminalPrompt(history=settings.database.parent / HISTORY_FILE)
    notices = None
    if not log_lines:
        name = result.character.name if result.character is not None else ""
        notices = ConversationLog(lambda line: prompt.write(f"! {line}\n"), agent=name)
        logs.configure("WARNING", handler=notices)
    return prompt.run(
        lambda: chat(settings, result, environ, user=user, read_line=prompt.read_line, output=prompt, notices=notices)
    )


async def chat(
    settings: DaemonSettings,
    result: LoadResult,
    environ: Mapping[str, str],
    *,
    user: str = "you",
    read_line: Callable[[], Awaitable[str | None]] | None = None,
    output: TextIO | TextIOBase | None = None,
    notices: ConversationLog | None = None,
) -> int:
    """Talk to ``result``'s character until end of input; returns the exit status."""
    from platforms.console import ConsoleAdapter

    character = result.raise_for_problems()
    shared = Shared()  # this conversation's secrets, kept out of its log lines
    shared.data_dir = settings.data_dir
    out = output or sys.stdout
    with redact.filtering(shared.secrets):
        async with backend_for(settings.store_location) as db:
            runtime = AgentRuntime(
                character,
                db.for_agent(character.agent_id),
                environ=environ,
                plugins=runtime_plugins(result),
                model_preset=result.model_preset,
                shared=shared,
            )
            try:
                await runtime.start()
            except PluginLoadError as exc:
                print(f"troupe chat: {exc}", file=sys.stderr)
                return EXIT_CONFIG
            try:
                if not runtime.has_model(ModelType.TEXT_LARGE):
                    print(
                        f"troupe chat: {character.name} has no model: set OPENAI_API_KEY, or OPENAI_BASE_URL for "
                        "a local OpenAI-compatible server such as Ollama",
                        file=sys.stderr,
                    )
                    return EXIT_CONFIG
                await _tools_started(runtime)
                print(f"Talking to {character.name}. Type /quit or press Ctrl-D to leave.", file=out, flush=True)
                await ConsoleAdapter(runtime, user=user, output=out, notices=notices).run(read_line)
            finally:
                await runtime.close()
    return 0


async def _tools_started(runtime: AgentRuntime, timeout: float = 30.0) -> None:
    """Until each of the character's tool servers has come up or failed (at most ``timeout``
    seconds), so that the first line typed can use its tools. (The daemon does not wait: it is
    ready while they connect, as its platforms do.)"""
    box = runtime.get_service(TOOLBOX)
    if isinstance(box, ToolServers):
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await box.settled()
