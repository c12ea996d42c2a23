"""Tasks waiting for a person's choice, and the buttons that offer their options.

A plugin that needs a human decision stores a task tagged :data:`AWAITING_CHOICE` in the room,
with ``metadata.options`` (strings or ``{name, description}``) and a task worker of the same
name, then calls :func:`offer_options` to show the options as buttons (one per option, and
Cancel; more than five options go in a menu, Cancel a button beside it: :func:`choice_controls`).
The core plugin's CHOOSE_OPTION runs the worker with the option pressed or chosen, without a
model; a person can also answer in words.

A button's value is ``choose:<first 8 characters of the task id>:<option index | abort>``:
well under a Telegram ``callback_data``'s 64 bytes whatever the options are called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.kernel.buttons import MAX_BUTTONS, MAX_LABEL_CHARS, MAX_MENU_OPTIONS, Button, Menu
from bot.kernel.errors import SendError
from bot.kernel.outgoing import Reply
from bot.kernel.types import Memory, Task
from bot.runtime.components import Messenger

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = [
    "ABORT",
    "AWAITING_CHOICE",
    "Choice",
    "choice_buttons",
    "choice_controls",
    "CHOICE_PREFIX",
    "choices_buttons",
    "MENU_FROM",
    "offer_options",
    "options_of",
    "SHORT_ID",
]

AWAITING_CHOICE = "AWAITING_CHOICE"
ABORT = "ABORT"
#: How much of a task's id names it to a person (and in a button's value).
SHORT_ID = 8
CHOICE_PREFIX = "choose:"
_ABORT_VALUE = "abort"
#: From this many options on, they are offered in a menu: more than a row of buttons (Discord's five).
MENU_FROM = 6


def options_of(task: Task) -> list[tuple[str, str]]:
    """The task's options as ``(name, description)``; malformed entries are skipped."""
    raw = task.metadata.options
    found = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, str) and item.strip():
            found.append((item.strip(), ""))
        elif isinstance(item, Mapping) and str(item.get("name") or "").strip():
            found.append((str(item["name"]).strip(), str(item.get("description") or "")))
    return found


@dataclass(frozen=True, slots=True)
class Choice:
    """What a choice button carries: the task (by the start of its id) and the option's index
    among :func:`options_of` (None: cancel the task)."""

    task: str
    index: int | None

    @property
    def value(self) -> str:
        return f"{CHOICE_PREFIX}{self.task}:{_ABORT_VALUE if self.index is None else self.index}"

    @classmethod
    def parse(cls, value: str) -> Choice | None:
        """The choice a button's value carries; None for a value that is no choice."""
        if not value.startswith(CHOICE_PREFIX):
            return None
        task, _, option = value.removeprefix(CHOICE_PREFIX).partition(":")
        if not task or not option:
            return None
        if option == _ABORT_VALUE:
            return cls(task, None)
        return cls(task, int(option)) if option.isdigit() else None


def choice_buttons(task: Task) -> list[Button]:
    """One button per option of ``task`` (its name as the label), then Cancel."""
    short = str(task.id)[:SHORT_ID]
    buttons = [
        Button(name[:MAX_LABEL_CHARS], value=Choice(short, i).value) for i, (name, _) in enumerate(options_of(task))
    ]
    return [*buttons, Button("Cancel", value=Choice(short, None).value)]


def choice_controls(task: Task) -> tuple[tuple[Button, ...], Menu | None]:
    """The buttons and the menu that offer ``task``'s options: a button each and Cancel (no
    menu); from :data:`MENU_FROM` options on, a menu of them (the first
    :data:`~bot.kernel.buttons.MAX_MENU_OPTIONS`) with Cancel a button beside it."""
    *options, cancel = choice_buttons(task)
    if len(options) < MENU_FROM:
        return (*options, cancel), None
    placeholder = f"Choose for {task.name}"[:100]
    return (cancel,), Menu.of(options[:MAX_MENU_OPTIONS], placeholder)


def choices_buttons(tasks: Sequence[Task]) -> list[Button]:
    """The buttons of several waiting tasks in one message: one task's as :func:`choice_buttons`;
    of more, each label names its task ("PICK_COLOUR: red", "Cancel PICK_COLOUR"), as many whole
    tasks as a message's :data:`~bot.kernel.buttons.MAX_BUTTONS` holds (the text lists them all)."""
    if len(tasks) == 1:
        return choice_buttons(tasks[0])
    found: list[Button] = []
    for task in tasks:
        own = choice_buttons(task)
        if len(found) + len(own) > MAX_BUTTONS:
            break
        labels = [f"{task.name}: {b.label}" for b in own[:-1]] + [f"Cancel {task.name}"]
        found += [Button(label[:MAX_LABEL_CHARS], value=b.value) for label, b in zip(labels, own, strict=True)]
    return found


async def offer_options(runtime: AgentRuntime, task: Task, text: str | None = None) -> list[Memory]:
    """Show ``task``'s options as buttons (or a menu: :func:`choice_controls`) in its room, under
    ``text`` (by default the task's name and description). Returns the memories of what was sent.

    Raises:
        ValueError: the task has no id, no room or no options.
        SendError: the room is unknown, its platform is not connected, or sending failed.
    """
    if task.id is None or task.room_id is None or not options_of(task):
        raise ValueError(f"task {task.name!r} needs an id, a room and options to be offered")
    room = await runtime.store.get_room(task.room_id)
    if room is None:
        raise SendError(f"the room of task {task.name!r} is unknown")
    messenger = runtime.get_service(room.source or "")
    if not isinstance(messenger, Messenger):
        raise SendError(f"{room.source or 'the platform'} of task {task.name!r} is not connected")
    if text is None:
        text = f"{task.name}: {task.description}" if task.description else f"Please choose for {task.name}:"
    buttons, menu = choice_controls(task)
    return await messenger.send_to_room(room, Reply(text=text, source=room.source, buttons=buttons, menu=menu))
