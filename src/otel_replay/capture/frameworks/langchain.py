"""LangChain (and LangGraph's ``ToolNode``, which calls them): ``BaseTool`` tools.

``BaseTool.run`` / ``arun`` validate the model's arguments, call the tool's
``_run`` / ``_arun`` and wrap what it returns in a ``ToolMessage``.  The
tool's own ``_run`` / ``_arun`` is what is recorded and, in a replay,
answered: the value the function returned, before LangChain formats it, so
that the message LangChain builds from it is the recorded one.  ``run`` /
``arun`` are wrapped only to know the model's tool-call id; each tool class's
``_run`` / ``_arun`` is wrapped when one of its tools first runs (tool
classes are often defined after setup), and undone with the rest.
"""

from __future__ import annotations

import functools
from typing import Any

from ..tool import tool_call_id
from ._patch import Patches
from ._record import record_tool_call, record_tool_call_sync

MODULE = "langchain_core.tools"
#: What LangChain passes a tool's ``_run`` besides the tool's own arguments.
_PLUMBING = ("run_manager", "config", "callbacks")


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from langchain_core.tools import BaseTool

    expect = ("self", "tool_input")

    def make_run(original: Any) -> Any:
        @functools.wraps(original)
        def run(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
            _wrap_class(patches, type(self), BaseTool)
            with tool_call_id(kwargs.get("tool_call_id")):
                return original(self, tool_input, *args, **kwargs)

        return run

    def make_arun(original: Any) -> Any:
        @functools.wraps(original)
        async def arun(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
            _wrap_class(patches, type(self), BaseTool)
            with tool_call_id(kwargs.get("tool_call_id")):
                return await original(self, tool_input, *args, **kwargs)

        return arun

    patches.replace(BaseTool, "run", make_run, expect=expect)
    patches.replace(BaseTool, "arun", make_arun, expect=expect)


def _arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The tool's own arguments, without LangChain's plumbing (one positional: ``input``)."""
    out = {k: v for k, v in kwargs.items() if k not in _PLUMBING}
    if len(args) == 1 and not out:
        return {"input": args[0]}
    for i, value in enumerate(args):
        out[f"arg{i}"] = value
    return out


def _owner(cls: type, name: str, base: type) -> type | None:
    """The class that defines ``name`` for ``cls`` (None when it is ``base``'s own)."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return None if klass is base else klass
    return None


def _wrap_class(patches: Patches, cls: type, base: type) -> None:
    """Wrap the ``_run`` / ``_arun`` that tools of ``cls`` use (once per defining class)."""
    sync_owner = _owner(cls, "_run", base)
    if sync_owner is not None:
        patches.replace(sync_owner, "_run", _make_sync)
    async_owner = _owner(cls, "_arun", base)
    if async_owner is not None:
        patches.replace(async_owner, "_arun", _make_async)


def _make_sync(original: Any) -> Any:
    @functools.wraps(original)
    def _run(self: Any, *args: Any, **kwargs: Any) -> Any:
        return record_tool_call_sync(
            str(self.name),
            _arguments(args, kwargs),
            lambda: original(self, *args, **kwargs),
            description=getattr(self, "description", None),
            function=getattr(self, "func", None),
        )

    return _run


def _make_async(original: Any) -> Any:
    @functools.wraps(original)
    async def _arun(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await record_tool_call(
            str(self.name),
            _arguments(args, kwargs),
            lambda: original(self, *args, **kwargs),
            description=getattr(self, "description", None),
            function=getattr(self, "coroutine", None) or getattr(self, "func", None),
        )

    return _arun
