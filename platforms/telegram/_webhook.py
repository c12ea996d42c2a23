"""Updates by webhook (``TELEGRAM_WEBHOOK_URL``): Telegram posts each update to the daemon's
webhook port, behind the operator's reverse proxy, instead of being polled.

Exactly once holds as with polling. The route (:class:`TelegramWebhook`) keeps an update in the
character's inbox before it answers 200 (Telegram sends again whatever was not answered 200), then
hands it to the adapter serving the character: on this daemon directly (:class:`WebhookDesk`),
on another over the bus — any daemon of a troupe may be the one the proxy picked. What is in the
inbox and never reached an adapter (a bus post lost, the character moving between daemons) is
found by the serving adapter's sweep (:class:`WebhookWatch`) and, as with polling, at its next
start. The watch also asks Telegram how delivery goes (getWebhookInfo): it logs what Telegram
meets trying to reach the proxy, and sets the webhook again if something else changed it.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from telegram.error import BadRequest, TelegramError

from bot.sdk import ConfigError, LinkState, StoreError, WebhookAnswer, WebhookRequest

from ._inbox import replay
from ._mapping import SOURCE

if TYPE_CHECKING:
    from bot.sdk import Bus, Post, Store, WebhookHost

    from ._adapter import TelegramAdapter
    from ._config import Webhook

__all__ = ["SECRET_HEADER", "TelegramWebhook", "WebhookDesk", "WebhookWatch"]

_log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_TOPIC = "telegram:webhook"
#: A store that cannot write for this long: 503, and Telegram sends the update again later.
_KEEP_TIMEOUT_S = 10.0
#: How often the serving adapter sweeps its inbox and asks Telegram how delivery goes.
WATCH_EVERY_S = 30.0
_CALL_TIMEOUT_S = 15.0
_REFUSALS_LOGGED_EVERY_S = 60.0
#: Parallel deliveries Telegram may make to one bot's webhook (its default is 40).
MAX_CONNECTIONS = 40


class TelegramWebhook:
    """One character's webhook route (a :class:`~bot.sdk.WebhookRoute`), served by every daemon."""

    def __init__(self, agent: str, agent_id: str, webhook: Webhook, host: WebhookHost) -> None:
        self.agent = agent
        self.agent_id = agent_id
        self.path = webhook.path
        self._secret = webhook.secret.get_secret_value().encode()
        self._host = host
        self._store: Store | None = None
        self._refused_logged = -_REFUSALS_LOGGED_EVERY_S

    async def handle(self, request: WebhookRequest) -> WebhookAnswer:
        if not hmac.compare_digest(request.headers.get(SECRET_HEADER, "").encode(), self._secret):
            self._log_refusal()
            return WebhookAnswer(403, "wrong secret token")
        try:
            text = request.body.decode()
            update = json.loads(text)
            update_id = update["update_id"]
            if not isinstance(update_id, int):
                raise TypeError("update_id is not a number")
        except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            _log.warning("%s: the Telegram webhook was sent something that is not an update (%s)", self.agent, exc)
            return WebhookAnswer(400, "not a Telegram update")
        store = self._store = self._store or self._host.store_for(self.agent_id)
        try:
            async with asyncio.timeout(_KEEP_TIMEOUT_S):
                await store.health.retry(lambda: store.inbox_put(SOURCE, str(update_id), text))
        except TimeoutError:
            return WebhookAnswer(503, "cannot keep it now; send it again later")
        except StoreError as exc:
            _log.warning("%s: could not keep Telegram update %s: %s", self.agent, update_id, exc)
            return WebhookAnswer(500, "cannot keep it; send it again later")
        shared = self._host.shared
        await shared.instance_of(WebhookDesk).deliver(self.agent_id, update, shared.bus)
        return WebhookAnswer(200)

    def _log_refusal(self) -> None:
        # Anyone who finds the URL can post to it: said now and then, never once per request.
        now = time.monotonic()
        if now - self._refused_logged >= _REFUSALS_LOGGED_EVERY_S:
            self._refused_logged = now
            _log.warning(
                "%s: refused a post to its Telegram webhook %s without the right secret token (not from "
                "Telegram, or TELEGRAM_WEBHOOK_SECRET differs between daemons)",
                self.agent,
                self.path,
            )


class WebhookDesk:
    """This daemon's Telegram bots that take updates by webhook, by agent id
    (``runtime.shared.instance_of(WebhookDesk)``), and the bus between the troupe's daemons."""

    def __init__(self) -> None:
        self._adapters: dict[str, TelegramAdapter] = {}
        self._bus: Bus | None = None

    def join(self, adapter: TelegramAdapter) -> None:
        self._adapters[adapter.runtime.agent_id] = adapter
        bus = adapter.runtime.shared.bus
        if bus is not self._bus and bus.spans_daemons:
            bus.subscribe(_TOPIC, self._heard)
            self._bus = bus

    def leave(self, adapter: TelegramAdapter) -> None:
        if self._adapters.get(adapter.runtime.agent_id) is adapter:
            del self._adapters[adapter.runtime.agent_id]

    async def deliver(self, agent_id: str, update: dict[str, Any], bus: Bus) -> None:
        """Hand a kept update (as Telegram sent it, read) to the adapter serving ``agent_id``:
        here, or on another daemon."""
        adapter = self._adapters.get(agent_id)
        if adapter is not None:
            await adapter.take_kept(update)
        elif bus.spans_daemons:
            try:
                await bus.post(_TOPIC, json.dumps({"agent": agent_id, "update": update}))
            except StoreError as exc:  # kept all the same: the serving daemon's sweep finds it
                _log.info("could not tell the other daemons of a Telegram update: %s", exc)

    async def _heard(self, post: Post) -> None:
        news = json.loads(post.payload)
        adapter = self._adapters.get(news["agent"])
        if adapter is not None:
            await adapter.take_kept(news["update"])


class WebhookWatch:
    """Sets one bot's webhook, and watches it while the adapter runs."""

    def __init__(self, adapter: TelegramAdapter, webhook: Webhook, allowed_updates: list[str]) -> None:
        self.adapter = adapter
        self.webhook = webhook
        self.allowed_updates = allowed_updates
        self._last_error = 0  # Telegram's last_error_date already told

    async def set(self) -> None:
        """Point Telegram at the webhook (what it holds is delivered there, nothing dropped)."""
        app = self.adapter.app
        assert app is not None
        try:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                await app.bot.set_webhook(
                    self.webhook.url,
                    secret_token=self.webhook.secret.get_secret_value(),
                    allowed_updates=self.allowed_updates,
                    max_connections=MAX_CONNECTIONS,
                    drop_pending_updates=False,
                )
        except BadRequest as exc:  # Telegram will not post there: it says why ("bad webhook: …")
            raise ConfigError(
                f"Telegram refused TELEGRAM_WEBHOOK_URL {self.webhook.url}: {exc.message}; it must be a public "
                "https URL on port 443, 80, 88 or 8443 with a valid certificate",
                agent=self.adapter.name,
            ) from None
        _log.info("%s: Telegram posts its updates to %s", self.adapter.name, self.webhook.url)

    async def run(self) -> None:
        """Every :data:`WATCH_EVERY_S`: the inbox swept, the webhook checked, until cancelled."""
        while True:
            await asyncio.sleep(WATCH_EVERY_S)
            await self.round()

    async def round(self) -> None:
        adapter = self.adapter
        if adapter.app is None or adapter.closed or not adapter.runtime.accepting:
            return
        queue = adapter.inbox
        try:
            await replay(adapter.runtime, adapter.app.bot, queue, skip=queue.seen)
        except StoreError as exc:  # the next round tries again
            _log.info("%s: could not read the Telegram inbox: %s", adapter.name, exc)
        try:
            await self._check()
        except (TelegramError, TimeoutError) as exc:
            _log.info("%s: could not ask Telegram about its webhook: %s", adapter.name, str(exc) or "timed out")

    async def _check(self) -> None:
        adapter, runtime = self.adapter, self.adapter.runtime
        assert adapter.app is not None
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            info = await adapter.app.bot.get_webhook_info()
        if info.url != self.webhook.url:
            _log.warning(
                "%s: Telegram's webhook for this bot was %s, not %s (another program using its token?); "
                "setting it again",
                adapter.name,
                info.url or "unset",
                self.webhook.url,
            )
            await self.set()
            return
        error_at = int(info.last_error_date.timestamp()) if info.last_error_date is not None else 0
        if error_at > self._last_error:
            self._last_error = error_at
            _log.warning(
                "%s: Telegram could not deliver updates to %s: %s (%d waiting); check that the reverse proxy "
                "forwards it to TROUPE_WEBHOOK_HOST:TROUPE_WEBHOOK_PORT",
                adapter.name,
                self.webhook.url,
                info.last_error_message or "no reason given",
                info.pending_update_count,
            )
            runtime.links.set(SOURCE, LinkState.RETRYING, f"webhook not reached: {info.last_error_message}")
        elif (link := runtime.links.get(SOURCE)) is not None and link.state is LinkState.RETRYING:
            runtime.links.set(SOURCE, LinkState.CONNECTED)
