"""A real pseudo-terminal for driving a command the way a person at a keyboard does.

::

    async with Terminal([troupe, "chat", "iris.json"], env=env) as term:
        await term.expect("> ")
        await term.type("hello\\r")
        await term.expect("Iris: ")
        await term.press(CTRL_C)
        assert await term.wait_exit(timeout=60) == 0

The command runs as the leader of its own session with the terminal as its controlling terminal,
so Ctrl-C becomes SIGINT and Ctrl-D end of input exactly as in a shell. Everything the command
writes is kept in ``output`` (bytes, escape sequences included); :meth:`screen_text` drops the
escape sequences for assertions about what a person would read.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import struct
import sys
import termios
from collections.abc import Mapping, Sequence
from typing import Self

__all__ = ["CTRL_C", "CTRL_D", "DOWN", "LEFT", "RIGHT", "Terminal", "UP", "visible"]

CTRL_C = b"\x03"
CTRL_D = b"\x04"
UP, DOWN, RIGHT, LEFT = b"\x1b[A", b"\x1b[B", b"\x1b[C", b"\x1b[D"

# The child makes the terminal its controlling one (it is already a session leader: setsid).
_ADOPT_TTY = "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.argv[1], sys.argv[1:])"
_DELAY_BEFORE_SEND_S = 0.05
_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\x07|\x08")


def visible(data: bytes) -> str:
    """What a person would read: escape sequences and bells dropped, CR LF as LF."""
    return _ESCAPES.sub(b"", data).replace(b"\r\n", b"\n").decode("utf-8", "replace")


class Terminal:
    """One command on one pseudo-terminal, 200 columns by 50 rows."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | os.PathLike[str] | None = None,
        columns: int = 200,
        rows: int = 50,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.size = (rows, columns)
        self.output = bytearray()
        self.process: asyncio.subprocess.Process | None = None
        self._master = -1
        self._changed = asyncio.Event()
        self._closed = False
        self._pending = bytearray()

    async def __aenter__(self) -> Self:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *self.size, 0, 0))
        try:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _ADOPT_TTY,
                *self.argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        self._master = master
        asyncio.get_running_loop().add_reader(master, self._read)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        self._close_master()

    def _close_master(self) -> None:
        if self._master >= 0:
            loop = asyncio.get_running_loop()
            loop.remove_reader(self._master)
            loop.remove_writer(self._master)
            os.close(self._master)
            self._master = -1

    def _read(self) -> None:
        try:
            data = os.read(self._master, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: every copy of the other end is closed (the command ended)
            data = b""
        if not data:
            self._closed = True
            asyncio.get_running_loop().remove_reader(self._master)
        self.output.extend(data)
        self._changed.set()

    # -- input --------------------------------------------------------------------------------

    async def type(self, text: str | bytes) -> None:
        """Send keys (or a paste); big inputs are written as the command reads them.

        Like pexpect (``delaybeforesend``), it waits a moment first: a prompt shows a little
        before the program is waiting at it, and a Ctrl-C in that instant reaches Python's
        readline before its wait for input, which only a key pressed later ends. A person is
        never that quick.
        """
        await asyncio.sleep(_DELAY_BEFORE_SEND_S)
        self._pending.extend(text.encode() if isinstance(text, str) else text)
        self._write()

    press = type

    def _write(self) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_writer(self._master)
        while self._pending:
            try:
                written = os.write(self._master, self._pending[:1024])
            except BlockingIOError:
                loop.add_writer(self._master, self._write)
                return
            del self._pending[:written]

    async def drained(self, timeout: float = 60.0) -> None:
        """Wait until everything typed has been taken by the terminal."""
        async with asyncio.timeout(timeout):
            while self._pending:
                await asyncio.sleep(0.01)

    # -- output -------------------------------------------------------------------------------

    def screen_text(self) -> str:
        return visible(bytes(self.output))

    async def expect(self, text: str, *, timeout: float = 60.0, start: int = 0) -> int:
        """Wait until ``text`` shows in the visible output after position ``start`` (of
        :meth:`screen_text`); returns the position just after it."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    screen = self.screen_text()
                    found = screen.find(text, start)
                    if found >= 0:
                        return found + len(text)
                    if self._closed:
                        raise AssertionError(f"the command ended before {text!r} showed; it wrote:\n{screen}")
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"{text!r} did not show within {timeout} s; the command wrote:\n{self.screen_text()}"
            ) from None

    async def wait_exit(self, *, timeout: float = 60.0) -> int:
        """The command's exit status, once it has ended and its output has been read."""
        assert self.process is not None
        try:
            async with asyncio.timeout(timeout):
                status = await self.process.wait()
                while not self._closed:
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"the command did not end within {timeout} s; it wrote:\n{self.screen_text()}"
            ) from None
        with contextlib.suppress(OSError):
            self._close_master()
        return status
