"""ACTIONS: the actions the model may choose for this message, with descriptions and examples.

Only actions whose ``validate`` passes are offered (no ``validate`` means always). A validate
that raises counts as failed and is logged. The order is shuffled (seeded from ``runtime.rng``)
after sorting by name, so a seeded runtime always offers the same order.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.sdk import Action, Content, Memory, Provider, ProviderResult, State

from .._budget import Cut, Section
from .._mustache import fill_placeholders
from ._common import fork_rng

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_log = logging.getLogger(__name__)

_MAX_EXAMPLES = 10


async def _offered(runtime: AgentRuntime, action: Action, message: Memory, state: State) -> bool:
    if action.validate is None:
        return True
    try:
        verdict = action.validate(runtime, message, state)
        return bool(await verdict if inspect.isawaitable(verdict) else verdict)
    except Exception:
        _log.exception("%s: validate of action %s failed; not offering it", runtime.character.name, action.name)
        return False


def _example_line(item: Any) -> str:
    """``name: text (actions: A, B)`` for one message of an example conversation."""
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        name, content = item.get("name") or item.get("user") or "{{name1}}", _example_content(item.get("content"))
    else:  # a pydantic ExampleMessage or similar
        name, content = getattr(item, "name", "{{name1}}"), _example_content(getattr(item, "content", None))
    line = f"{name}: {content.text or ''}".rstrip()
    actions = content.actions or ((content.action,) if content.action else ())
    if actions:
        line += f" (actions: {', '.join(actions)})"
    return line


def _example_content(given: object) -> Content:
    """What an example message says: elizaOS's JSON, or an object with ``text`` and ``actions``."""
    if isinstance(given, Content):
        return given
    if isinstance(given, Mapping):
        return Content.from_json(given)
    actions = getattr(given, "actions", None)
    return Content(
        text=text if isinstance(text := getattr(given, "text", None), str) else None,
        actions=tuple(str(a) for a in actions) if isinstance(actions, (list, tuple)) else None,
    )


def _examples(actions: list[Action], rng: random.Random) -> str:
    conversations: list[Any] = [c for a in actions for c in a.examples]
    rng.shuffle(conversations)
    rendered = []
    for conversation in conversations[:_MAX_EXAMPLES]:
        messages = conversation if isinstance(conversation, (list, tuple)) else [conversation]
        names: dict[int, str] = {}  # one set of speaker names per conversation
        rendered.append("\n".join(fill_placeholders(_example_line(m), rng, names) for m in messages))
    return "\n\n".join(r for r in rendered if r)


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    rng = fork_rng(runtime)
    candidates = sorted(runtime.actions.values(), key=lambda a: a.name)
    # Only actions with a validate need a task each (this runs for every prompt); the rest are offered.
    checked = [a for a in candidates if a.validate is not None]
    verdicts = await asyncio.gather(*(_offered(runtime, a, message, state) for a in checked))
    refused = {a.name for a, ok in zip(checked, verdicts, strict=True) if not ok}
    offered = [a for a in candidates if a.name not in refused]
    rng.shuffle(offered)

    if not offered:
        text = "# Available Actions\nNo actions are available for this message."
        return ProviderResult(
            text=text,
            values={
                "actionNames": "Possible response actions: none",
                "actionsWithDescriptions": text,
                "actionExamples": "",
            },
            data={"actionsData": []},
        )
    names = "Possible response actions: " + ", ".join(a.name for a in offered)
    described = "# Available Actions\n" + "\n".join(f"{a.name}: {a.description}" for a in offered)
    examples = _examples(offered, rng)
    examples_text = f"# Action Examples\n{examples}" if examples else ""
    text = "\n\n".join(s for s in (described, examples_text) if s)  # the names are in the list above
    return ProviderResult(
        text=text,
        values={"actionNames": names, "actionsWithDescriptions": described, "actionExamples": examples_text},
        # What a prompt short of room gives up (_budget): the examples, at last the descriptions;
        # the names stay in the template's list of actions.
        data={
            "actionsData": offered,
            "sections": [Section.of(described, Cut.DESCRIPTIONS), Section.of(examples_text, Cut.EXAMPLES)],
        },
    )


provider = Provider(
    name="ACTIONS",
    get=_get,
    description="The actions the agent can take in reply to this message.",
    position=-1,
)
