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
exactly what was replaced.  Calls are idempotent.  With
``OTEL_SDK_DISABLED=true`` nothing is recorded, so nothing is patched for
recording (a replay session still patches, and undoes it when it ends).  An
``@otel_replay.tool`` of the same name inside a recorded call is not
recorded twice.
"""

from __future__ import annotations

import importlib.util
import threading
from types import ModuleType

from ..spans import sdk_disabled, warn_once
from . import (
    autogen,
    crewai,
    google_adk,
    haystack,
    langchain,
    llama_index,
    openai_agents,
    pydantic_ai,
    semantic_kernel,
    smolagents,
    strands,
)
from ._patch import LayoutChanged, Patches
from ._record import record_tool_call, record_tool_call_sync

__all__ = [
    "FRAMEWORKS",
    "installed",
    "instrument",
    "instrument_langchain",
    "instrument_openai_agents",
    "instrument_pydantic_ai",
    "record_tool_call",
    "record_tool_call_sync",
    "uninstrument",
    "uninstrument_all",
    "uninstrument_langchain",
    "uninstrument_openai_agents",
    "uninstrument_pydantic_ai",
]

#: Framework name -> its integration module (``MODULE``: what must be importable; ``install``).
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
}

_lock = threading.Lock()
_installed: dict[str, Patches] = {}


def instrument(framework: str, *, replay: bool = False) -> bool:
    """Wrap ``framework``'s tool calls; False when it is not installed or not as expected.

    ``replay``: for a replay session, which patches even with the SDK disabled.
    """
    integration = FRAMEWORKS[framework]
    if not replay and sdk_disabled():
        warn_once(
            "sdk-disabled-" + framework,
            "otel-replay: OTEL_SDK_DISABLED is true; %s tool calls are not instrumented",
            framework,
        )
        return False
    with _lock:
        if framework in _installed:
            return True
        try:
            if importlib.util.find_spec(integration.MODULE) is None:
                return False
        except (ImportError, ValueError):
            return False
        patches = Patches(framework)
        try:
            integration.install(patches)
        except ImportError:
            patches.undo()
            return False
        except LayoutChanged as exc:
            patches.undo()
            patches.warn(exc)
            return False
        except Exception as exc:  # never let instrumenting break the app
            patches.undo()
            warn_once(
                f"framework-{framework}", "otel-replay could not instrument %s: %r", framework, exc
            )
            return False
        _installed[framework] = patches
        return True


def uninstrument(framework: str) -> None:
    """Put back what :func:`instrument` replaced in ``framework`` (nothing if it did not)."""
    with _lock:
        patches = _installed.pop(framework, None)
    if patches is not None:
        patches.undo()


def installed() -> list[str]:
    """The frameworks whose tool calls are wrapped now."""
    with _lock:
        return list(_installed)


def uninstrument_all() -> None:
    for framework in installed():
        uninstrument(framework)


def instrument_pydantic_ai(*, agent_spans: bool = False) -> bool:
    """Record every pydantic-ai function-tool call; False when pydantic-ai is not usable.

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
    """Record every openai-agents function-tool call; False when openai-agents is not usable."""
    return instrument("openai_agents")


def instrument_langchain() -> bool:
    """Record every LangChain tool call: ``BaseTool`` (``@tool``, ``StructuredTool``, ...).

    LangGraph's ``ToolNode`` and LangChain's agents call their tools through it.
    """
    return instrument("langchain")


def uninstrument_pydantic_ai() -> None:
    uninstrument("pydantic_ai")


def uninstrument_openai_agents() -> None:
    uninstrument("openai_agents")


def uninstrument_langchain() -> None:
    uninstrument("langchain")
