"""Updates by webhook (``TELEGRAM_WEBHOOK_URL``), end to end: the fake Bot API posts each update
to the daemon's webhook port as Telegram does (the secret token in its header, again until it
is answered 200); the daemon keeps it in the inbox, answers 200 and handles it once."""

from __future__ import annotations

import asyncio
import json
import logging

import aiohttp
import pytest

from platforms.telegram._webhook import SECRET_HEADER

from .scene import Scene, plan, until


async def webhook_on(s: Scene, **settings: str) -> None:
    await s.start({"TELEGRAM_WEBHOOK_URL": s.webhook_url("Ada"), **settings}, with_brann=False)
    await until(lambda: s.ada.webhook is not None)


async def inbox_empty(s: Scene) -> None:
    store = s.runtime("Ada").store
    async with asyncio.timeout(30):
        while await store.inbox_pending("telegram"):
            await asyncio.sleep(0.01)


async def test_updates_come_by_webhook_and_each_is_answered_once(scene) -> None:
    s = scene
    s.brain.plans["Ada"].append(plan("Hello from the webhook."))
    await webhook_on(s)
    hook = s.ada.webhook
    assert hook.url == s.webhook_url("Ada") and hook.secret  # a secret derived from the token
    assert s.ada.webhook_deletions == 0  # not removed at start, as polling does

    await s.fake.user_says(s.sam, s.group, "@ada_bot hello there")
    sent = await s.fake.wait_for_sent(s.ada, chat=s.group)
    assert [m["text"] for m in sent] == ["Hello from the webhook."]
    assert s.ada.polls == 0  # nothing was polled
    assert [status for _, status in s.ada.webhook_posts] == [200]
    await inbox_empty(s)

    # Telegram sends it again (it never saw the 200): answered 200, not answered twice.
    s.fake.redeliver(s.ada, s.ada.webhook_posts[0][0])
    await until(lambda: len(s.ada.webhook_posts) == 2)
    await inbox_empty(s)
    assert s.ada.webhook_posts[1][1] == 200
    assert len([m for m in s.ada.sent if m["chat_id"] == s.group.id]) == 1


async def test_a_post_without_the_secret_token_or_not_an_update_is_refused(scene, caplog) -> None:
    s = scene
    await webhook_on(s)
    url = s.webhook_url("Ada")
    update = {"update_id": 999_001, "message": {"message_id": 1, "date": 0, "chat": {"id": 1, "type": "private"}}}
    secret = s.ada.webhook.secret
    caplog.set_level(logging.WARNING)
    async with aiohttp.ClientSession() as http:
        async with http.post(url, json=update) as response:
            assert response.status == 403
        async with http.post(url, json=update, headers={SECRET_HEADER: "not-the-secret"}) as response:
            assert response.status == 403
        async with http.post(url, data=b"{not json", headers={SECRET_HEADER: secret}) as response:
            assert response.status == 400
        async with http.post(url, data=json.dumps({"message": {}}), headers={SECRET_HEADER: secret}) as response:
            assert response.status == 400
        async with http.get(url) as response:
            assert response.status == 405
        async with http.post(url + "-other", json=update, headers={SECRET_HEADER: secret}) as response:
            assert response.status == 404
    assert await s.runtime("Ada").store.inbox_pending("telegram") == []
    refusals = [r.getMessage() for r in caplog.records if "without the right secret token" in r.getMessage()]
    assert len(refusals) == 1  # said once, not once per request
    assert secret not in caplog.text


async def test_stopping_removes_the_webhook_and_polling_takes_over(scene) -> None:
    s = scene
    await webhook_on(s)
    assert s.daemon is not None and s.task is not None
    s.daemon.stop()
    assert await asyncio.wait_for(s.task, 60) == 0
    assert s.ada.webhook is None  # what Telegram gets meanwhile waits there for the next start

    await s.fake.user_says(s.sam, s.group, "@ada_bot are you there?")
    s.brain.plans["Ada"].append(plan("Back, and polling."))
    await s.start({}, with_brann=False)
    sent = await s.fake.wait_for_sent(s.ada, chat=s.group)
    assert [m["text"] for m in sent] == ["Back, and polling."]
    assert s.ada.polls > 0


async def test_a_webhook_url_telegram_refuses_stops_only_telegram_for_that_character(scene, caplog) -> None:
    s = scene
    s.fake.fail_next("setWebhook", status=400, description="Bad Request: bad webhook: Failed to resolve host")
    caplog.set_level(logging.ERROR)
    await s.start({"TELEGRAM_WEBHOOK_URL": s.webhook_url("Ada")}, wait=False)
    await s.fake.wait_polling(s.brann)  # the other character runs
    await until(lambda: "Telegram refused TELEGRAM_WEBHOOK_URL" in caplog.text)
    assert "failed to resolve host" in caplog.text.lower()
    ada = await s.running("Ada", connected=False)
    link = ada.links.get("telegram")
    assert link is not None and link.state.value == "failed"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://bots.example.com/telegram/ada", "must be the https URL"),
        ("https://bots.example.com/", "needs a path of its own"),
        ("https://bots.example.com/telegram/ada?x=1", "must be the https URL"),
    ],
)
def test_a_webhook_url_of_the_wrong_form_is_a_clear_error(url: str, says: str) -> None:
    from bot.sdk import ConfigError
    from platforms.telegram._config import read_config

    settings = {"TELEGRAM_BOT_TOKEN": "7001:token", "TELEGRAM_WEBHOOK_URL": url}
    with pytest.raises(ConfigError, match=says):
        read_config(settings.get, "Ada")


def test_http_is_refused_for_telegram_itself_and_the_secret_is_checked() -> None:
    from bot.sdk import ConfigError
    from platforms.telegram._config import read_config

    plain = {"TELEGRAM_BOT_TOKEN": "7001:token", "TELEGRAM_WEBHOOK_URL": "http://bots.example.com/telegram/ada"}
    with pytest.raises(ConfigError, match="https"):
        read_config(plain.get, "Ada")
    local = {**plain, "TELEGRAM_API_ROOT": "http://127.0.0.1:8081"}
    webhook = read_config(local.get, "Ada").webhook
    assert webhook is not None and webhook.path == "/telegram/ada"
    # Derived from the token: the same on every daemon, unlike another bot's.
    again = read_config(local.get, "Ada").webhook
    other = read_config({**local, "TELEGRAM_BOT_TOKEN": "7002:other"}.get, "Ada").webhook
    assert again is not None and other is not None
    assert webhook.secret.get_secret_value() == again.secret.get_secret_value() != other.secret.get_secret_value()
    with pytest.raises(ConfigError, match="TELEGRAM_WEBHOOK_SECRET"):
        read_config({**local, "TELEGRAM_WEBHOOK_SECRET": "has spaces"}.get, "Ada")
