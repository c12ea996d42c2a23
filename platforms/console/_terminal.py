"""The keyboard side of ``troupe chat``: lines read with readline, the conversation around them.

readline reads key by key, so arrow keys edit the line and recall earlier lines instead of
reaching the model as escape codes, and a long pasted line is not cut at the 4,095 characters a
terminal's line discipline keeps in canonical mode. It must run in the main thread: only there
does Ctrl-C interrupt it at once (Python handles signals in the main thread), and readline then
puts the terminal back as it found it. So the conversation runs on an event loop in another
thread and asks the main thread for each line::

    prompt = TerminalPrompt(history=Path("data/chat_history"))
    status = prompt.run(lambda: chat(..., read_line=prompt.read_line, output=prompt))
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import logging
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TextIO

__all__ = ["EXIT_INTERRUPTED", "TerminalPrompt"]

_log = logging.getLogger(__name__)

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command ended by Ctrl-C
_HISTORY_LINES = 1000


class TerminalPrompt(io.TextIOBase):
    """Reads the person's lines in the main thread for a conversation running in another.

    It is also the conversation's output (a minimal text stream): what the character says while
    the person is typing is written above the line being typed, which is then shown again.
    """

    def __init__(
        self,
        *,
        prompt: str = "> ",
        history: Path | None = None,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
    ) -> None:
        super().__init__()
        self.prompt = prompt
        self.history = history
        self._stdin = stdin or sys.stdin
        self._stdout = stdout or sys.stdout
        self._requests: queue.SimpleQueue[concurrent.futures.Future[str | None] | None] = queue.SimpleQueue()
        self._reading = threading.Event()  # the main thread is in input(): output goes around the prompt
        self._write_lock = threading.Lock()
        self._readline: Any = None
        self._read_cancelled = False
        self._partial = ""  # output written while the person types, not yet a whole line

    # -- the conversation's side (its event loop's thread) ---------------------------------------

    async def read_line(self) -> str | None:
        """The next line the person enters; ``None`` at end of input (Ctrl-D)."""
        request: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        self._requests.put(request)
        return await asyncio.wrap_future(request)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._write_lock:
            if not (self._reading.is_set() and self._readline is not None):
                self._stdout.write(self._partial + text)
                self._partial = ""
                return len(text)
            # The person is typing: whole lines go above the line being typed (print() writes the
            # text and its newline separately), then the prompt and what was typed are shown again.
            self._partial += text
            if "\n" in self._partial:
                lines, _, self._partial = self._partial.rpartition("\n")
                self._stdout.write(f"\r\x1b[K{lines}\n{self.prompt}{self._readline.get_line_buffer()}")
                self._stdout.flush()
            return len(text)

    def flush(self) -> None:
        with self._write_lock:
            self._stdout.flush()

    # -- the main thread's side ----------------------------------------------------------------

    def run(self, conversation: Callable[[], Coroutine[Any, Any, int]]) -> int:
        """Run ``conversation()`` on an event loop in another thread, answering its line requests
        here; returns its exit status, or 130 after Ctrl-C (the conversation is cancelled, so it
        closes what it opened)."""
        self._load_history()
        loop_ready = concurrent.futures.Future[tuple[asyncio.AbstractEventLoop, asyncio.Task[int]]]()

        async def main() -> int:
            task = asyncio.current_task()
            assert task is not None
            loop_ready.set_result((asyncio.get_running_loop(), task))
            return await conversation()

        done: concurrent.futures.Future[int] = concurrent.futures.Future()
        done.add_done_callback(lambda _: self._requests.put(None))  # wakes the wait in _serve
        # A daemon thread: after a second Ctrl-C the process may leave without waiting for it.
        threading.Thread(target=_run_without_sigint, args=(main, done), name="troupe-chat", daemon=True).start()
        try:
            self._serve(done)
        except KeyboardInterrupt:
            self.write("\n")
            # At the prompt, the read was cancelled and the conversation is closing already;
            # during a reply, it is cancelled here. Either way it closes what it opened.
            if not self._read_cancelled and loop_ready.done():
                loop, task = loop_ready.result()
                with contextlib.suppress(RuntimeError):  # the loop already ended
                    loop.call_soon_threadsafe(task.cancel)
            self._wait_quietly(done)
            return EXIT_INTERRUPTED
        finally:
            self._save_history()
        return done.result()

    def _serve(self, done: concurrent.futures.Future[int]) -> None:
        while True:
            request = self._requests.get()  # Ctrl-C interrupts this wait too
            if request is None:
                if done.done():
                    return
                continue
            try:
                self._reading.set()
                try:
                    line: str | None = input(self._prompt_shown())
                finally:
                    self._reading.clear()
            except EOFError:  # Ctrl-D: end the prompt's line, so what follows starts on its own
                if self._prompt_shown():
                    self.write("\n")
                line = None
            except KeyboardInterrupt:
                self._read_cancelled = request.cancel()
                raise
            request.set_result(line)

    def _prompt_shown(self) -> str:
        # Lines from a pipe have nobody to prompt: the prompt would only run into the output.
        return self.prompt if self._stdin.isatty() else ""

    def _wait_quietly(self, done: concurrent.futures.Future[int]) -> None:
        """Wait for the cancelled conversation to close; a second Ctrl-C stops waiting."""
        try:
            done.result()
        except (KeyboardInterrupt, asyncio.CancelledError, concurrent.futures.CancelledError):
            pass
        except Exception as exc:  # noqa: BLE001 -- the person asked to leave; say what failed and leave
            self._stdout.write(f"! closing failed: {exc}\n")

    # -- history -------------------------------------------------------------------------------

    def _load_history(self) -> None:
        if not (self._stdin.isatty() and self._stdout.isatty()):
            return  # input() edits lines only between two terminals; from a pipe: whole lines, no history
        try:
            import readline  # noqa: PLC0415 -- importing it is what turns line editing on for input()
        except ImportError:  # a Python built without it: plain input(), still whole lines
            return
        self._readline = readline
        readline.set_history_length(_HISTORY_LINES)
        if self.history is not None:
            with contextlib.suppress(OSError):
                readline.read_history_file(self.history)

    def _save_history(self) -> None:
        if self._readline is None or self.history is None:
            return
        try:
            # What was typed is private: the file is the person's alone from the moment it exists.
            self.history.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(self.history, os.O_WRONLY | os.O_CREAT, 0o600))
            self._readline.write_history_file(self.history)
            os.chmod(self.history, 0o600)
        except OSError as exc:
            _log.warning("could not save the chat history to %s: %s", self.history, exc.strerror or exc)


def _run_without_sigint(main: Callable[[], Coroutine[Any, Any, int]], done: concurrent.futures.Future[int]) -> None:
    """``asyncio.run(main())`` in a thread that never takes SIGINT (nor do the threads it starts);
    its result or exception goes to ``done``.

    The kernel hands a process's signal to any thread that does not block it; taken here, Ctrl-C
    would leave the main thread waiting in readline until Enter.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        done.set_result(asyncio.run(main()))
    except BaseException as exc:  # noqa: BLE001 -- handed to the main thread, which decides
        done.set_exception(exc)
