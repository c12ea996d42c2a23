"""A platform's troubles as a plugin hears them (SERVICE_ERROR): Telegram refusing the bot's token
while it runs. Copy the test to start a plugin that alerts on outages."""

from __future__ import annotations

from bot.kernel.links import LinkState
from bot.runtime.events import ServiceError

from .scene import until


async def test_a_token_refused_while_running_is_a_service_error(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await s.fake.wait_polling(s.ada)
    rt = s.runtime("Ada")
    errors: list[ServiceError] = []

    async def on_error(event: ServiceError) -> None:
        errors.append(event)

    rt.on(ServiceError, on_error)
    s.fake.revoke(s.ada)
    await until(lambda: errors)
    assert errors[0].service == "telegram" and errors[0].retrying
    assert "token" in errors[0].error.lower() and s.ada.token not in errors[0].error
    link = rt.links.get("telegram")
    assert link is not None and link.state is LinkState.REFUSED
