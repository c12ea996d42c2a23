"""The Telegram-specific templates elizaOS's Telegram guides name (``telegramMessageHandlerTemplate``,
``telegramShouldRespondTemplate``): used for what comes from Telegram, in ``templates`` or (as
its guides also write them) ``settings.templates``; the generic ones otherwise."""

from __future__ import annotations

from bot.config.character import Character
from plugins.core._templates import for_source

from .scene import plan

PLAN = "TELEGRAM PLAN. Write the next turn of Ada.\n{{providers}}\nAnswer in XML with <text>."
DECIDE = "TELEGRAM DECISION. Decide what Ada does with the newest message.\n{{providers}}"


def test_a_platform_variant_is_chosen_for_its_platform_only() -> None:
    templates = {"telegramMessageHandlerTemplate": PLAN, "telegramShouldRespondTemplate": "  "}
    assert for_source(templates, "messageHandlerTemplate", "telegram") == "telegramMessageHandlerTemplate"
    assert for_source(templates, "messageHandlerTemplate", "discord") == "messageHandlerTemplate"
    assert for_source(templates, "messageHandlerTemplate", None) == "messageHandlerTemplate"
    assert for_source(templates, "shouldRespondTemplate", "telegram") == "shouldRespondTemplate"  # blank: unset


def test_templates_in_settings_are_read_and_the_top_level_wins() -> None:
    character = Character.model_validate(
        {
            "name": "Ada",
            "bio": "A test.",
            "templates": {"telegramShouldRespondTemplate": "top"},
            "settings": {
                "templates": {"telegramShouldRespondTemplate": "nested", "telegramMessageHandlerTemplate": PLAN}
            },
        }
    )
    assert character.templates == {"telegramShouldRespondTemplate": "top", "telegramMessageHandlerTemplate": PLAN}


async def test_a_telegram_message_is_planned_and_decided_with_the_telegram_templates(scene) -> None:
    s = scene
    s.brain.plans["Ada"].append(plan("Planned the Telegram way."))
    templates = {"telegramMessageHandlerTemplate": PLAN, "telegramShouldRespondTemplate": DECIDE}
    await s.start({"templates": templates}, with_brann=False)
    await s.fake.wait_polling(s.ada)
    s.brain.decisions["Ada"].append("RESPOND")
    await s.fake.user_says(s.sam, s.group, "the ending needs work")  # not addressed: Ada decides
    sent = await s.fake.wait_for_sent(s.ada, chat=s.group)
    assert [m["text"] for m in sent] == ["Planned the Telegram way."]
    assert any(p.startswith("TELEGRAM DECISION.") for p in s.brain.prompts if "Decide what Ada" in p)
    assert any("TELEGRAM PLAN." in p for p in s.brain.prompts if "Write the next turn of Ada" in p)
