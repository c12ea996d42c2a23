"""SERVICE_STARTED and SERVICE_STOPPED as a plugin hears them: a service registered or withdrawn
(a platform connecting, a plugin's setup). Copy the test to follow another plugin's service."""

from __future__ import annotations

import asyncio

from bot.runtime.agent import AgentRuntime
from bot.runtime.events import ServiceStarted, ServiceStopped

from .test_runtime import db, runtime  # noqa: F401  (fixtures)


async def test_services_registered_and_withdrawn_are_heard(runtime: AgentRuntime) -> None:  # noqa: F811
    rt = runtime
    heard: list[str] = []
    stopped = asyncio.Event()

    async def on_started(event: ServiceStarted) -> None:
        heard.append(f"started {event.service}")

    async def on_stopped(event: ServiceStopped) -> None:
        heard.append(f"stopped {event.service}")
        stopped.set()

    async def broken(event: ServiceStarted) -> None:
        raise RuntimeError("a listener's bug")  # logged; the others still hear it

    rt.on(ServiceStarted, on_started)
    rt.on(ServiceStarted, broken)
    rt.on(ServiceStopped, on_stopped)
    rt.register_service("weather", object())
    rt.unregister_service("weather")
    rt.unregister_service("weather")  # gone already: nothing to say
    async with asyncio.timeout(30):
        await stopped.wait()
    assert heard == ["started weather", "stopped weather"] and rt.get_service("weather") is None
