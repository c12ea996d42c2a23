"""The model handlers of one runtime, and calling them: best first, each attempt timed out,
counted and logged, the next one tried when one fails."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.config import plugins as plugin_registry
from bot.kernel.errors import ModelError
from bot.kernel.models import ContextLength, ModelType
from bot.kernel.time_limits import time_limit
from bot.kernel.traces import ModelCall
from bot.runtime.events import ModelFailed, ModelUsed
from bot.runtime.tracing import CallDetails, current_tracer, model_call

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = ["ModelHandler", "ModelHandlers", "type_name"]

_log = logging.getLogger(__name__)

ModelHandler = Callable[["AgentRuntime", Any], Awaitable[Any]]

_DEFAULT_MODEL_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class _Entry:
    handler: ModelHandler
    provider: str
    priority: int
    order: int
    timeout_s: float | None
    """The longest the handler says it may take (its own timeouts and retries); ``None``: unsaid."""
    context_length: ContextLength | None = None


class ModelHandlers:
    """For each model type, the handlers plugins registered: higher priority first, ties by
    registration order."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime
        self._entries: dict[ModelType, list[_Entry]] = {}
        self._registered = 0

    def register(
        self,
        kind: ModelType,
        handler: ModelHandler,
        provider: str,
        priority: int,
        timeout_s: float | None = None,
        context_length: ContextLength | None = None,
    ) -> None:
        entries = self._entries.setdefault(kind, [])
        entries.append(_Entry(handler, provider, priority, self._registered, timeout_s, context_length))
        self._registered += 1
        entries.sort(key=lambda e: (-e.priority, e.order))

    def serves(self, kind: ModelType) -> bool:
        return bool(self._entries.get(kind))

    def context_length(self, kind: ModelType) -> int | None:
        """The context window of the model that answers ``kind`` first; None when it does not say."""
        entries = self._entries.get(kind)
        if not entries or entries[0].context_length is None:
            return None
        return entries[0].context_length()

    async def call(self, kind: ModelType, params: Any, provider: str | None) -> Any:
        """See :meth:`AgentRuntime.use_model <bot.runtime.agent.AgentRuntime.use_model>`."""
        runtime = self.runtime
        entries = self._entries.get(kind, [])
        if provider is not None:
            entries = [e for e in entries if e.provider == provider]
        if not entries:
            models = plugin_registry.model_plugin()
            raise ModelError(
                f"no model serves {kind.value}; add a model plugin such as "
                f'"{(*models.aliases, models.name)[0]}" to the character\'s plugins',
                provider=provider,
                model_type=kind.value,
                agent=runtime.character.name,
            )
        last: BaseException | None = None
        tracer = current_tracer()
        details: CallDetails | None = None
        for entry in entries:
            # Unset, the limit gives way to a handler that says it needs longer (a slow local
            # server): cutting a call its own timeouts would still allow only fails it early.
            timeout = runtime.get_number("MODEL_TIMEOUT_S", max(_DEFAULT_MODEL_TIMEOUT_S, entry.timeout_s or 0.0))
            started = time.perf_counter()
            try:
                async with time_limit(timeout):
                    if tracer is None:
                        result = await entry.handler(runtime, params)
                    else:  # the plugin may say which model served it, and its tokens
                        with model_call(tracer) as details:
                            result = await entry.handler(runtime, params)
            except Exception as exc:
                last = exc
                elapsed = (time.perf_counter() - started) * 1000
                _log.warning(
                    "%s: %s via %s failed after %.0f ms: %s",
                    runtime.character.name,
                    kind.value,
                    entry.provider,
                    elapsed,
                    exc.__class__.__name__,
                )
                await self._record(kind, entry.provider, elapsed, error=exc, details=details)
                continue
            elapsed = (time.perf_counter() - started) * 1000
            _log.debug("%s: %s via %s in %.0f ms", runtime.character.name, kind.value, entry.provider, elapsed)
            await self._record(kind, entry.provider, elapsed, details=details)
            return result
        if isinstance(last, ModelError):
            raise last
        raise ModelError(
            f"every {kind.value} model failed ({type_name(last)})",
            provider=entries[-1].provider,
            model_type=kind.value,
            agent=runtime.character.name,
            original=last,
        ) from last

    async def _record(
        self,
        kind: ModelType,
        provider: str,
        elapsed_ms: float,
        error: BaseException | None = None,
        details: CallDetails | None = None,
    ) -> None:
        runtime = self.runtime
        agent = runtime.character.name
        outcome = "error" if error else "ok"
        runtime.metrics.model_calls.labels(agent=agent, model_type=kind.value, provider=provider, outcome=outcome).inc()
        runtime.metrics.model_latency.labels(agent=agent, model_type=kind.value).observe(elapsed_ms / 1000)
        # When, not only how many: the console says how long ago a model last answered or failed.
        runtime.metrics.model_last_call.labels(agent=agent, provider=provider, outcome=outcome).set(time.time())
        duration_ms = round(elapsed_ms, 1)
        tracer = current_tracer()
        if tracer is not None:
            failed = type_name(error) if error is not None else ""
            said = details or CallDetails()
            tracer.model_calls.append(
                ModelCall(
                    kind.value,
                    provider,
                    duration_ms,
                    error is None,
                    failed,
                    said.model,
                    said.prompt_tokens,
                    said.completion_tokens,
                )
            )
        body = {"modelType": kind.value, "provider": provider, "durationMs": duration_ms, "ok": error is None}
        if error is not None:
            body["error"] = type_name(error)
        try:
            # Queued, not awaited: the row is written in a batch off the reply's path.
            runtime.store.queue_log(body, runtime.agent_id, runtime.agent_id, f"useModel:{kind.value}")
        except Exception as exc:  # logging must never break a model call
            _log.debug("%s: could not log model use: %s", runtime.character.name, exc)
        if error is None:
            await runtime.emit(ModelUsed(model_type=kind.value, provider=provider, duration_ms=duration_ms))
        else:
            await runtime.emit(
                ModelFailed(model_type=kind.value, provider=provider, duration_ms=duration_ms, error=type_name(error))
            )


def type_name(exc: BaseException | None) -> str:
    return "unknown error" if exc is None else exc.__class__.__name__
