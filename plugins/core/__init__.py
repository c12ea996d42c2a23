"""The conversation pipeline every character runs: should-respond, reply, actions, providers,
evaluators (elizaOS's plugin-bootstrap)."""

from bot.plugins import PluginMeta

__all__ = ["meta"]

meta = PluginMeta(
    name="core",
    description="conversation pipeline: deciding to respond, replying, actions, memory (built in)",
    aliases=("@elizaos/plugin-bootstrap", "bootstrap"),
    always=True,
)
