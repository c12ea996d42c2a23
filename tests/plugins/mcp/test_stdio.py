"""The MCP plugin against a real MCP server over stdio (a subprocess): listing, calling, sharing
one session, the server's environment, restarts, and every way a call can go wrong."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys

import pytest

from bot.sdk import MAX_RESULT_CHARS, ExponentialBackoff, ToolAccess, ToolServer, ToolServers
from plugins.mcp._config import McpConfig, ServerConfig, ServerPolicy, Transport
from plugins.mcp._connection import MAX_TOOLS, ServerConnection, ServerState
from plugins.mcp._pool import ServerPool
from plugins.mcp._stderr import KEPT_LINES, LINE_CHARS
from plugins.mcp._toolbox import McpToolbox, offered_name

from .conftest import call, stdio_config, until

pytestmark = pytest.mark.xdist_group("mcp")


async def toolbox_for(
    pool: ServerPool, server: ServerConfig, *, policy: ServerPolicy | None = None, allowed: frozenset[str] | None = None
) -> McpToolbox:
    config = McpConfig(servers=(server,), policies={server.name: policy or ServerPolicy()}, allowed_tools=allowed)
    box = McpToolbox("Ada", config, [pool.acquire(server)])
    await until(lambda: bool(box.tools()))
    return box


def state(box: McpToolbox) -> ServerState:
    return box.connections[0].state


async def test_lists_the_servers_tools_and_calls_one(pool: ServerPool) -> None:
    box = await toolbox_for(pool, stdio_config())
    specs = {spec.name: spec for spec in box.tools()}
    assert {"weather__weather", "weather__slow", "weather__crash", "weather__delete"} <= set(specs)
    weather = specs["weather__weather"]
    assert weather.source == "weather"
    assert weather.description == "The weather in a city."
    assert weather.parameters["required"] == ["city"]
    assert weather.changes_things is False  # read-only
    assert specs["weather__delete"].changes_things is True  # destructive
    assert specs["weather__grow"].changes_things is True  # says nothing: it may change things
    result = await box.call(call("weather__weather", city="Oslo"), timeout=10)
    assert result.ok and result.text == "sunny in Oslo, 21 °C"
    assert result.call.name == "weather__weather" and result.duration_ms > 0 and not result.truncated


async def test_two_characters_share_one_session(pool: ServerPool) -> None:
    server = stdio_config()
    ada = await toolbox_for(pool, server)
    bob = await toolbox_for(pool, server)
    assert len(pool) == 1 and ada.connections[0] is bob.connections[0]
    pid_ada = await ada.call(call("weather__pid"), timeout=10)
    pid_bob = await bob.call(call("weather__pid"), timeout=10)
    assert pid_ada.ok and pid_ada.text.isdigit() and pid_ada.text == pid_bob.text  # one process
    # Another configuration (another key) is another session.
    other = await toolbox_for(pool, stdio_config(env={"KEY": "other"}))
    assert len(pool) == 2 and other.connections[0] is not ada.connections[0]
    # The last user stops it.
    await pool.release(server)
    assert state(ada) is ServerState.UP
    await pool.release(server)
    assert state(ada) is ServerState.STOPPED and len(pool) == 1
    result = await ada.call(call("weather__weather", city="Oslo"), timeout=10)
    assert not result.ok and "no tool named" in result.text


async def test_the_server_sees_only_its_own_environment(pool: ServerPool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "daemon-secret-token")
    box = await toolbox_for(pool, stdio_config(env={"WEATHER_KEY": "given-key"}))
    seen = await box.call(call("weather__env", name="DISCORD_TOKEN"), timeout=10)
    assert seen.ok and seen.text == "<unset>"
    given = await box.call(call("weather__env", name="WEATHER_KEY"), timeout=10)
    assert given.text == "given-key"


async def test_a_server_that_dies_is_restarted(pool: ServerPool) -> None:
    box = await toolbox_for(pool, stdio_config())
    connection = box.connections[0]
    version = connection.version
    died = await box.call(call("weather__crash"), timeout=10)
    assert not died.ok and "went away" in died.text
    await until(lambda: connection.version > version + 1 and connection.state is ServerState.UP)
    again = await box.call(call("weather__weather", city="Bergen"), timeout=10)
    assert again.ok and again.text == "sunny in Bergen, 21 °C"


async def test_what_goes_wrong_is_a_result_never_a_raise(pool: ServerPool) -> None:
    box = await toolbox_for(pool, stdio_config())
    version = box.connections[0].version
    hang = await box.call(call("weather__slow"), timeout=0.5)
    assert not hang.ok and "did not answer within 0.5 s" in hang.text
    failed = await box.call(call("weather__fail"), timeout=10)
    assert not failed.ok and "the weather station is on fire" in failed.text
    unknown = await box.call(call("weather__snow", city="Oslo"), timeout=10)
    assert not unknown.ok and "no tool named weather__snow" in unknown.text and "weather__weather" in unknown.text
    missing = await box.call(call("weather__weather"), timeout=10)
    assert not missing.ok and "'city' is a required property" in missing.text
    wrong = await box.call(call("weather__weather", city=3), timeout=10)
    assert not wrong.ok and "city: 3 is not of type 'string'" in wrong.text
    # The session is still fine after all that, and was never started again.
    assert (await box.call(call("weather__weather", city="Oslo"), timeout=10)).ok
    assert box.connections[0].version == version


async def test_garbage_is_a_failed_call_never_a_raise(pool: ServerPool) -> None:
    box = await toolbox_for(pool, stdio_config())
    # Lines that are not MCP between the answers are passed over.
    noise = await box.call(call("weather__garbage"), timeout=10)
    assert noise.ok and noise.text == "said garbage"
    assert (await box.call(call("weather__weather", city="Oslo"), timeout=10)).ok
    # A result that is not a tool's result is a failed call.
    server = dataclasses.replace(stdio_config("garbage"), args=("-m", "tests.fakes.mcp_garbage"))
    garbage = await toolbox_for(pool, server)
    result = await garbage.call(call("garbage__echo"), timeout=10)
    assert not result.ok and result.text == (
        "the MCP server garbage answered garbage__echo with something that is not a tool's result"
        " (content: Input should be a valid list)"
    )
    version = garbage.connections[0].version
    assert (await garbage.call(call("garbage__echo"), timeout=10)).ok is False
    shaped = await garbage.call(call("garbage__count"), timeout=10)
    assert not shaped.ok and "Invalid structured content returned by tool count" in shaped.text, shaped.text
    assert garbage.connections[0].version == version  # the session stays: no restart for a bad answer


async def test_a_huge_result_is_cut_with_a_note(pool: ServerPool) -> None:
    box = await toolbox_for(pool, stdio_config())
    result = await box.call(call("weather__huge", size=100_000), timeout=10)
    assert result.ok and result.truncated
    assert len(result.text) <= MAX_RESULT_CHARS
    assert result.text.endswith("[cut: the result was 100,000 characters; only the first part is shown]")


async def test_pictures_are_named_not_inlined(pool: ServerPool) -> None:
    box = await toolbox_for(pool, stdio_config())
    result = await box.call(call("weather__picture"), timeout=10)
    assert result.ok and result.text == "a cat\n[an image (image/png), not shown]"


async def test_a_changed_list_is_read_again(pool: ServerPool) -> None:
    box = await toolbox_for(pool, stdio_config())
    assert "weather__late" not in {spec.name for spec in box.tools()}
    assert (await box.call(call("weather__grow"), timeout=10)).text == "grown"
    await until(lambda: "weather__late" in {spec.name for spec in box.tools()})
    assert (await box.call(call("weather__late"), timeout=10)).text == "late but here"


async def test_allow_lists_confirmation_and_access(pool: ServerPool) -> None:
    policy = ServerPolicy(
        only=frozenset({"weather", "delete", "env"}),
        confirm=frozenset({"env"}),
        access={"delete": ToolAccess.ADMINS},
    )
    box = await toolbox_for(
        pool, stdio_config(), policy=policy, allowed=frozenset({"weather__weather", "weather__delete"})
    )
    specs = {spec.name: spec for spec in box.tools()}
    assert set(specs) == {"weather__weather", "weather__delete"}
    assert specs["weather__delete"].access is ToolAccess.ADMINS
    assert specs["weather__weather"].access is ToolAccess.ANYONE
    refused = await box.call(call("weather__env", name="PATH"), timeout=10)
    assert not refused.ok and "no tool named" in refused.text
    confirm = await toolbox_for(pool, stdio_config(), policy=ServerPolicy(confirm=frozenset({"env"})))
    assert {spec.name: spec for spec in confirm.tools()}["weather__env"].changes_things is True


async def test_a_thousand_tools_are_cut(pool: ServerPool, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="plugins.mcp"):
        box = await toolbox_for(pool, stdio_config(tools=1000))
    assert len(box.tools()) == MAX_TOOLS
    assert any("lists more than 128 tools; only the first 128 are offered" in r.getMessage() for r in caplog.records)
    # Two servers together offer no more than one could.
    second = stdio_config("second", tools=100)
    both = McpToolbox("Ada", McpConfig(servers=(second,)), [box.connections[0], pool.acquire(second)])
    with caplog.at_level(logging.WARNING, logger="plugins.mcp"):
        await until(lambda: bool(both.connections[1].tools))
        assert len(both.tools()) == MAX_TOOLS
    assert any("Ada: its MCP servers offer more than 128 tools" in r.getMessage() for r in caplog.records)


async def test_a_server_that_cannot_start_is_one_warning(pool: ServerPool, caplog: pytest.LogCaptureFixture) -> None:
    server = ServerConfig(name="ghost", transport=Transport.STDIO, command="/nonexistent/mcp-ghost", timeout=5)
    config = McpConfig(servers=(server,), policies={})
    with caplog.at_level(logging.DEBUG, logger="plugins.mcp"):
        box = McpToolbox("Ada", config, [pool.acquire(server)])
        connection = box.connections[0]
        await until(lambda: connection.state is ServerState.DOWN)
        await until(lambda: any("retrying in" in r.getMessage() for r in caplog.records))
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "mcp server ghost (/nonexistent/mcp-ghost) is down" in warnings[0]
    assert box.tools() == []
    result = await box.call(call("ghost__x"), timeout=5)
    assert not result.ok and "no tool named ghost__x: no tool is available now" in result.text


async def test_the_toolbox_tells_each_server_up_or_down(pool: ServerPool) -> None:
    weather = stdio_config()
    ghost = ServerConfig(name="ghost", transport=Transport.STDIO, command="/nonexistent/mcp-ghost", timeout=5)
    box = McpToolbox("Ada", McpConfig(servers=(weather, ghost)), [pool.acquire(weather), pool.acquire(ghost)])
    assert isinstance(box, ToolServers)
    await until(lambda: bool(box.tools()) and box.connections[1].state is ServerState.DOWN)
    up, down = box.servers()
    assert up == ToolServer("weather", up=True)
    assert down.name == "ghost" and not down.up
    assert down.detail == box.connections[1].reason and down.detail


async def test_a_crash_looping_server_backs_off_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    server = dataclasses.replace(stdio_config(), args=(*stdio_config().args, "--die-after", "0.3"))
    backoff = ExponentialBackoff(0.05, 60.0)
    connection = ServerConnection(server, backoff=backoff)
    with caplog.at_level(logging.INFO, logger="plugins.mcp"):
        connection.start()
        try:
            await until(lambda: sum("is up" in r.getMessage() for r in caplog.records) >= 3, timeout=60)
        finally:
            await connection.close()
    # Each start that dies soon keeps backing off (the delays are not reset by coming up) …
    assert backoff.attempts >= 2
    # … and the outage is one warning, not one per start.
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [
        f"mcp server weather ({sys.executable}) is down: the server closed the connection; "
        "its tools are missing until it answers (retrying)"
    ]


def test_offered_names_are_sanitised_bounded_and_unique() -> None:
    taken: set[str] = set()
    first = offered_name("my server", "get.weather/now", taken)
    assert first == "my_server__get_weather_now"
    taken.add(first)
    assert offered_name("my server", "get weather now", taken) == "my_server__get_weather_now_2"
    long = offered_name("s", "x" * 100, set())
    assert len(long) == 64 and long.startswith("s__xxx")
    assert offered_name("s", "x" * 100, {long}).endswith("_2") and len(offered_name("s", "x" * 100, {long})) == 64


def test_python_is_the_test_servers_interpreter() -> None:
    assert stdio_config().command == sys.executable


async def test_a_server_that_cannot_start_says_why_from_its_stderr(
    pool: ServerPool, caplog: pytest.LogCaptureFixture
) -> None:
    server = dataclasses.replace(stdio_config("broken"), args=("-c", "import no_such_module_for_troupe"))
    with caplog.at_level(logging.DEBUG, logger="plugins.mcp"):
        box = McpToolbox("Ada", McpConfig(servers=(server,)), [pool.acquire(server)])
        await until(lambda: box.connections[0].state is ServerState.DOWN)
    said = "ModuleNotFoundError: No module named 'no_such_module_for_troupe'"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and f"mcp server broken ({sys.executable}) is down: " in warnings[0]
    # The last three lines: a traceback's end.
    assert warnings[0].endswith(
        f'; stderr: Traceback (most recent call last): | File "<string>", line 1, in <module> | {said}; '
        "its tools are missing until it answers (retrying)"
    ), warnings[0]
    assert box.servers()[0].detail.endswith(said)
    # Every line is logged at DEBUG, with the server's name.
    assert f"mcp server broken: {said}" in [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]


async def test_stderr_is_kept_short_and_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    secret = "stderr-secret-1234"
    extra = ("--stderr", f"starting with key {secret}\\nready", "--noise", "60", "--die-after", "0.5")
    server = dataclasses.replace(
        stdio_config(env={"WEATHER_KEY": secret}), args=(*stdio_config().args, *extra), referenced=frozenset({secret})
    )
    connection = ServerConnection(server, backoff=ExponentialBackoff(30.0, 60.0))
    with caplog.at_level(logging.DEBUG, logger="plugins.mcp"):
        connection.start()
        try:
            await until(lambda: connection.state is ServerState.DOWN, timeout=60)
        finally:
            await connection.close()
    logged = [r.getMessage() for r in caplog.records if r.name == "plugins.mcp._stderr"]
    assert logged[:2] == ["mcp server weather: starting with key <redacted>", "mcp server weather: ready"]
    assert len(logged) == 62 and all(len(line) <= len("mcp server weather: ") + LINE_CHARS for line in logged)
    kept = list(connection._errors.lines)
    assert len(kept) == KEPT_LINES and kept[-1].startswith("noise 59 ~~~") and len(kept[-1]) == LINE_CHARS
    assert connection.reason.startswith("the server closed the connection; stderr: …")
    assert connection.reason.endswith("~~~") and len(connection.reason) < 400
    assert secret not in caplog.text


async def test_a_server_that_dies_again_and_again_leaks_no_pipe_or_task(caplog: pytest.LogCaptureFixture) -> None:
    server = dataclasses.replace(
        stdio_config(), args=(*stdio_config().args, "--stderr", "dying soon", "--die-after", "0.2")
    )
    fds = set(os.listdir("/proc/self/fd"))
    tasks = len(asyncio.all_tasks())
    connection = ServerConnection(server, backoff=ExponentialBackoff(0.05, 0.2))
    with caplog.at_level(logging.DEBUG, logger="plugins.mcp"):
        connection.start()
        try:
            await until(lambda: sum("dying soon" in r.getMessage() for r in caplog.records) >= 5, timeout=90)
            await until(lambda: connection.state is ServerState.DOWN)
            assert connection.reason.endswith("; stderr: dying soon")
        finally:
            await connection.close()
    await until(lambda: len(asyncio.all_tasks()) == tasks)
    assert set(os.listdir("/proc/self/fd")) <= fds
