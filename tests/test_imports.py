"""What loading troupe costs: heavy libraries load only when a character uses what needs them."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Loaded as the daemon loads them before it knows what the characters need.
_CORE = [
    "bot.cli.main",
    "bot.daemon.daemon",
    "bot.runtime.agent",
    "bot.runtime.speech",
    "plugins.core",
    "plugins.knowledge",
    "plugins.openai",
]
_PLATFORMS = ["platforms.discord", "platforms.telegram"]
# What a character's start loads: every module of the plugins (a plugin's setup imports its parts).
_PLUGIN_PARTS = ["plugins.core.*", "plugins.knowledge.*", "plugins.openai.*"]


@pytest.mark.parametrize(
    ("modules", "absent"),
    [
        (_CORE, ["av", "numpy", "discord", "telegram"]),  # audio costs ~16 MB of RSS
        (_PLATFORMS, ["av", "numpy", "discord", "telegram"]),  # a platform's package is its metadata
        (_PLUGIN_PARTS, ["av", "numpy", "discord", "telegram"]),  # a shared video loads PyAV, not a start
    ],
)
def test_loading_troupe_leaves_audio_and_platform_sdks_unloaded(modules: list[str], absent: list[str]) -> None:
    script = (
        "import importlib, pkgutil, sys\n"
        f"for name in {modules!r}:\n"
        "    package = importlib.import_module(name.removesuffix('.*'))\n"
        "    if name.endswith('.*'):\n"
        "        for part in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "            importlib.import_module(part.name)\n"
        f"print(','.join(m for m in {absent!r} if m in sys.modules))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == ""
