"""Tool I/O for agent frameworks that run the user's tools, with no decorator in the user's code.

Each ``instrument_<framework>()`` wraps the one place that framework calls a
tool and records the call as ``@otel_replay.tool`` would: byte-exact argument
and result payloads with their digests, errors, the model's tool-call id.
During a replay session the call is handed to the replayer, which answers
from the recording (the tool does not run).  One module per framework says
what it wraps and why.

Every wrapper goes through :class:`~._patch.Patches`: the framework's
callable is checked before it is replaced (a version laid out differently is
left alone, with one warning), and ``uninstrument_<framework>()`` puts back
exactly what was replaced.  A framework is patched when the app imports it
(at once if it already has): instrumenting one the app does not use costs
nothing.  Calls are idempotent.  With
``OTEL_SDK_DISABLED=true`` nothing is recorded, so nothing is patched for
recording (a replay session still patches, and undoes it when it ends).  An
``@otel_replay.tool`` of the same name inside a recorded call is not
recorded twice.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import ModuleType

from ..spans import sdk_disabled, warn_once
from . import (
    autogen,
    crewai,
    google_adk,
    haystack,
    langchain,
    llama_index,
    mcp,
    openai_agents,
    pydantic_ai,
    semantic_kernel,
    smolagents,
    strands,
)
from ._imports import forget, when_imported
from ._patch import LayoutChanged, Patches
from ._record import record_tool_call, record_tool_call_sync

__all__ = [
    "FRAMEWORKS",
    "installed",
    "instrument",
    "instrument_framework",
    "instrument_openai_agents",
    "instrument_pydantic_ai",
    "record_tool_call",
    "record_tool_call_sync",
    "uninstrument",
    "uninstrument_framework",
]

#: Framework name -> its integration module: ``MODULE``, the module whose import means the
#: app uses the framework, and ``install(patches)``, which wraps its tool calls.
FRAMEWORKS: dict[str, ModuleType] = {
    "pydantic_ai": pydantic_ai,
    "openai_agents": openai_agents,
    "langchain": langchain,
    "google_adk": google_adk,
    "smolagents": smolagents,
    "strands": strands,
    "crewai": crewai,
    "llama_index": llama_index,
    "haystack": haystack,
    "autogen": autogen,
    "semantic_kernel": semantic_kernel,
    "mcp": mcp,
}


@dataclass
class _Integration:
    """One framework's integration: its patches, once its module is imported."""

    framework: str
    patches: Patches
    #: Patched (False: waiting for the app to import the framework, or failed).
    done: bool = False
    failed: bool = False

    def on_import(self) -> None:
        """The framework's module was imported: patch it, unless uninstrumented meanwhile."""
        with _lock:
            if _integrations.get(self.framework) is self and not self.done:
                self.install()

    def install(self) -> None:
        try:
            FRAMEWORKS[self.framework].install(self.patches)
        except ImportError:
            self._failed()
        except LayoutChanged as exc:
            self._failed()
            self.patches.warn(exc)
        except Exception as exc:  # never let instrumenting break the app
            self._failed()
            warn_once(
                f"framework-{self.framework}",
                "otel-replay could not instrument %s: %r",
                self.framework,
                exc,
            )
        else:
            self.done = True

    def _failed(self) -> None:
        self.patches.undo()
        self.failed = True


_lock = threading.RLock()
_integrations: dict[str, _Integration] = {}


def instrument(framework: str, *, replay: bool = False) -> bool:
    """Wrap ``framework``'s tool calls now, or when the app imports it.

    True when they are wrapped now; False when the framework is not imported
    yet (it is wrapped when it is), is laid out differently than expected
    (one warning says so), or the SDK is disabled.  ``replay``: for a replay
    session, which patches even with the SDK disabled.
    """
    integration_module = FRAMEWORKS[framework]
    if not replay and sdk_disabled():
        warn_once(
            "sdk-disabled-" + framework,
            "otel-replay: OTEL_SDK_DISABLED is true; %s tool calls are not instrumented",
            framework,
        )
        return False
    with _lock:
        found = _integrations.get(framework)
        if found is not None and not found.failed:
            return found.done
        integration = _integrations[framework] = _Integration(framework, Patches(framework))
        when_imported(integration_module.MODULE, integration.on_import)
        return integration.done


def uninstrument(framework: str) -> None:
    """Put back what :func:`instrument` replaced in ``framework`` (nothing if it did not)."""
    with _lock:
        integration = _integrations.pop(framework, None)
    if integration is None:
        return
    forget(FRAMEWORKS[framework].MODULE, integration.on_import)
    integration.patches.undo()


def installed() -> list[str]:
    """The frameworks whose tool calls are wrapped now."""
    with _lock:
        return [name for name, i in _integrations.items() if i.done]


def instrumented() -> list[str]:
    """The frameworks :func:`instrument` was asked for (wrapped now or when imported)."""
    with _lock:
        return [name for name, i in _integrations.items() if not i.failed]


def instrument_framework(*names: str) -> list[str]:
    """Record the tool calls of the frameworks named (all of :data:`FRAMEWORKS` if none).

    Each is wrapped now if the app imported it already, else when it does;
    the names of those wrapped now are returned.  Unknown names raise
    ``ValueError``.
    """
    unknown = [n for n in names if n not in FRAMEWORKS]
    if unknown:
        raise ValueError(f"unknown frameworks {unknown}; known: {', '.join(FRAMEWORKS)}")
    for name in names or tuple(FRAMEWORKS):
        instrument(name)
    return installed()


def uninstrument_framework(*names: str) -> None:
    """Put back what :func:`instrument_framework` patched (every framework if none named)."""
    for name in names or tuple(_integrations):
        uninstrument(name)


def instrument_pydantic_ai(*, agent_spans: bool = False) -> bool:
    """Record every pydantic-ai function-tool call (see :func:`instrument`).

    ``agent_spans`` also turns pydantic-ai's own instrumentation on for every
    agent that does not set it (``Agent.instrument_all()``): its agent, chat
    and ``execute_tool`` spans, to the global tracer provider.
    """
    done = instrument("pydantic_ai")
    if done and agent_spans:
        try:
            pydantic_ai.agent_spans()
        except Exception as exc:
            warn_once(
                "pydantic-ai-spans", "otel-replay could not turn on pydantic-ai spans: %r", exc
            )
    return done


def instrument_openai_agents() -> bool:
    """Record every openai-agents function-tool call (see :func:`instrument`)."""
    return instrument("openai_agents")
