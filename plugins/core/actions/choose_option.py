"""CHOOSE_OPTION: pick one of the options a pending task is waiting for, or cancel the task.

A plugin that needs a human decision stores a task tagged ``AWAITING_CHOICE`` in the room,
with ``metadata.options`` (strings or ``{name, description}``) and a task worker of the same
name (see :mod:`bot.runtime.choices`, whose ``offer_options`` shows the options as buttons). When the
person answers, this action works out which task and option they meant, runs the worker with
``{"option": <name>}`` and removes the task (a task tagged ``repeat`` stays). ``ABORT`` cancels
the task. When it cannot tell, it asks again with the options as buttons.

A press of one of those buttons (``choose:<task>:<option>``) is handled without a model
(:func:`press_handler`): the option runs at once, once, however often it is pressed, and the
question shows "✓ chosen: <option>" without its buttons where the platform edits messages
(elsewhere the answer is a new message, as for a choice in words).

Who may choose: the person the task is waiting on (``task.entity_id``), or the server's owner
or an admin. Anyone else is not offered the action, and is refused if the model names it anyway
(or presses a button).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.sdk import (
    ABORT,
    AWAITING_CHOICE,
    CHOICE_PREFIX,
    SHORT_ID,
    Action,
    ActionContext,
    ActionResult,
    Choice,
    HandlerCallback,
    Memory,
    Press,
    PressHandler,
    ServiceKey,
    Settled,
    State,
    Task,
    World,
    choice_controls,
    choices_buttons,
    options_of,
)

from .._open_choices import describe_choices, open_choices
from ._common import (
    PRIVILEGED,
    ask_small_model,
    notify,
    role_in,
    room_and_world,
    sender_text,
)

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["AWAITING_CHOICE", "CHOOSING", "Choosing", "action", "options_of", "register"]

_log = logging.getLogger(__name__)

NAME = "CHOOSE_OPTION"
_NO_LONGER_OPEN = "That choice is no longer open."


def _may_choose(task: Task, world: World | None, entity_id: str) -> bool:
    return task.entity_id == entity_id or role_in(world, entity_id) in PRIVILEGED


async def _choosable(runtime: AgentRuntime, message: Memory, state: State | None = None) -> list[Task]:
    tasks = await open_choices(runtime, message.room_id)
    if not tasks:
        return []
    _, world = await room_and_world(runtime, message, state)
    return [t for t in tasks if _may_choose(t, world, message.entity_id)]


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    return bool(await _choosable(runtime, message, state))


def _find_task(tasks: list[Task], reference: str) -> Task | None:
    wanted = reference.strip().strip('"').casefold()
    if not wanted:
        return tasks[0] if len(tasks) == 1 else None
    for task in tasks:
        if str(task.id).casefold().startswith(wanted[:SHORT_ID]) or task.name.casefold() == wanted:
            return task
    return None


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message = context.runtime, context.message
    tasks = await _choosable(runtime, message)
    if not tasks:
        await notify(context.reply, "There is nothing waiting for a choice from you here.", NAME, message)
        return ActionResult(success=False, error="no task awaits a choice from this person")

    parsed = (
        await ask_small_model(
            runtime,
            "optionExtractionTemplate",
            {
                "agentName": runtime.character.name,
                "tasks": describe_choices(tasks),
                "request": sender_text(message),
            },
        )
        or {}
    )
    task = _find_task(tasks, str(parsed.get("taskId") or ""))
    picked = str(parsed.get("selectedOption") or "").strip()
    if task is None or not picked:
        text = "Which one? Please pick one of these:\n" + describe_choices(tasks)
        await notify(context.reply, text, "SELECT_OPTION_INVALID", message, buttons=choices_buttons(tasks))
        return ActionResult(success=False, error="no task or option could be read from the request")
    if picked.upper() == ABORT:
        return await _carry_out(runtime, task, ABORT, context.reply, message)
    choice = next((name for name, _ in options_of(task) if name.casefold() == picked.casefold()), None)
    if choice is None:
        buttons, menu = choice_controls(task)
        await notify(
            context.reply,
            f'"{picked}" is not one of the options. Please pick one of these:\n' + describe_choices([task]),
            "SELECT_OPTION_INVALID",
            message,
            buttons=buttons,
            menu=menu,
        )
        return ActionResult(success=False, error=f"{picked!r} is not an option of {task.name}")
    return await _carry_out(runtime, task, choice, context.reply, message)


async def _choose(
    runtime: AgentRuntime, task: Task, choice: str, callback: HandlerCallback, message: Memory
) -> ActionResult:
    """Carry out ``choice`` (an option's name, or ABORT) for ``task`` and say so."""
    if choice == ABORT:
        await runtime.store.delete_task(str(task.id))
        text = f'Cancelled "{task.name}".'
        await notify(callback, text, "CHOOSE_OPTION_CANCELLED", message, settles=_settled(message, "✗ cancelled"))
        return ActionResult(text=text, data={"actionName": NAME, "taskId": task.id, "option": ABORT})
    worker = runtime.task_workers.get(task.name)
    if worker is None:
        await notify(
            callback, f'Nothing can carry out "{task.name}" right now; the choice was not made.', NAME, message
        )
        return ActionResult(success=False, error=f"no task worker for {task.name}")
    try:
        await worker.execute(runtime, {"option": choice}, task)
    except Exception as exc:
        _log.exception("%s: task %s failed on option %r", runtime.character.name, task.name, choice)
        await notify(callback, f'Choosing {choice} for "{task.name}" failed; nothing was changed.', NAME, message)
        return ActionResult(success=False, error=f"task worker {task.name} failed: {exc.__class__.__name__}")
    if "repeat" not in task.tags:
        await runtime.store.delete_task(str(task.id))
    text = f'Chose {choice} for "{task.name}".'
    await notify(callback, text, NAME, message, settles=_settled(message, f"✓ chosen: {choice}"))
    return ActionResult(text=text, data={"actionName": NAME, "taskId": task.id, "option": choice})


def _settled(message: Memory, note: str) -> Settled | None:
    """For a press, the question it answered showing ``note``, without its buttons (a choice made
    in words leaves the question as it is: the answer is a new message)."""
    return Settled(note) if message.content.button is not None else None


class Choosing:
    """The choices being carried out for one runtime's tasks. A task's worker runs for one choice
    at a time, whether it came by a press or in words: a second one meanwhile is told the choice is
    being made, and one that comes after it finds the task gone (or, tagged ``repeat``, may choose
    again). Registered per runtime as the :data:`CHOOSING` service by the core plugin."""

    def __init__(self) -> None:
        self._under_way: set[str] = set()

    async def choose(
        self, runtime: AgentRuntime, task: Task, choice: str, callback: HandlerCallback, message: Memory
    ) -> ActionResult:
        """Carry out ``choice`` (an option's name, or ABORT) for ``task`` unless its choice is
        being made or was made since the task was read; say what happened."""
        task_id = str(task.id)
        if task_id in self._under_way:
            await notify(callback, f'The choice for "{task.name}" is already being made.', NAME, message)
            return ActionResult(success=False, error="the choice was being made already")
        self._under_way.add(task_id)
        try:
            # Read again: a choice made while this one was read (or the model asked) removed it.
            if await runtime.store.get_task(task_id) is None:
                await notify(callback, _NO_LONGER_OPEN, NAME, message)
                return ActionResult(success=False, error=f"task {task.name} was chosen for or cancelled meanwhile")
            return await _choose(runtime, task, choice, callback, message)
        finally:
            self._under_way.discard(task_id)

    async def on_press(
        self, runtime: AgentRuntime, message: Memory, press: Press, callback: HandlerCallback
    ) -> ActionResult:
        """A press of a choice button (:class:`~bot.runtime.choices.Choice`): that option, without a model."""
        choice = Choice.parse(press.value)
        tasks = await runtime.store.get_tasks(room_id=message.room_id, tags=[AWAITING_CHOICE])
        task = next((t for t in tasks if choice is not None and str(t.id).startswith(choice.task)), None)
        options = options_of(task) if task is not None else []
        if choice is None or task is None or (choice.index is not None and choice.index >= len(options)):
            await notify(callback, _NO_LONGER_OPEN, NAME, message)
            return ActionResult(success=False, error=f"no open choice for {press.value!r}")
        _, world = await room_and_world(runtime, message)
        if not _may_choose(task, world, message.entity_id):
            await notify(callback, f'That choice for "{task.name}" is not yours to make.', NAME, message)
            return ActionResult(success=False, error="this person may not choose for the task")
        name = ABORT if choice.index is None else options[choice.index][0]
        return await self.choose(runtime, task, name, callback, message)


#: The runtime's :class:`Choosing` (core-internal: the action and the press handler share it).
CHOOSING: ServiceKey[Choosing] = ServiceKey("core.choosing")


def register(runtime: AgentRuntime) -> None:
    """Give ``runtime`` its :class:`Choosing` and the handler of choice-button presses (the
    buttons :func:`bot.runtime.choices.offer_options` and CHOOSE_OPTION show), without a model."""
    choosing = Choosing()
    runtime.register_service(CHOOSING, choosing)
    runtime.register_press_handler(PressHandler(CHOICE_PREFIX, choosing.on_press))


async def _carry_out(
    runtime: AgentRuntime, task: Task, choice: str, callback: HandlerCallback, message: Memory
) -> ActionResult:
    choosing = runtime.get_service(CHOOSING)
    if choosing is None:
        raise RuntimeError("CHOOSE_OPTION runs with the core plugin, which registers its Choosing")
    return await choosing.choose(runtime, task, choice, callback, message)


action = Action(
    name=NAME,
    handler=_handler,
    validate=_validate,
    description="Pick one of the options a pending task is waiting for (or cancel it) when the person answers.",
    # CHOICE: the name elizaOS's documents give the action (its code gives it to the provider).
    similes=("CHOICE", "SELECT_OPTION", "SELECT", "PICK", "CHOOSE"),
)
