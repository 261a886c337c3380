"""CrewAI: its tools' ``_run`` (and ``Tool.run``, which calls the function itself).

CrewAI calls a tool two ways: with native function calling, the agent calls
``tool.run(**arguments)``; in its ReAct loop, a ``CrewStructuredTool`` made by
``to_structured_tool()`` calls the tool's ``_run``.  Both end in the tool
class's ``_run`` except ``Tool.run`` (the ``@tool`` decorator's class,
CrewAI 1.x), which calls the function directly: those are recorded and, in a
replay, answered.  Each tool class's ``_run`` is wrapped when one of its tools
is first run or converted (tool classes are often defined after setup); a
replayed error is raised inside, where CrewAI turns it into what it tells
the model.
"""

from __future__ import annotations

import functools
from typing import Any

from ._patch import Patches
from ._record import record_tool_call_sync

MODULE = "crewai.tools.base_tool"


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from crewai.tools.base_tool import BaseTool, Tool

    def make_entry(original: Any) -> Any:
        @functools.wraps(original)
        def entry(self: Any, *args: Any, **kwargs: Any) -> Any:
            _wrap_class(patches, type(self), BaseTool)
            return original(self, *args, **kwargs)

        return entry

    patches.replace(BaseTool, "run", make_entry, expect=("self", "args", "kwargs"))
    patches.replace(BaseTool, "to_structured_tool", make_entry, expect=("self",))
    if "run" in vars(Tool):  # CrewAI 1.x: the decorator's tools call their function here
        patches.replace(Tool, "run", _recorded, expect=("self", "args", "kwargs"))


def _wrap_class(patches: Patches, cls: type, base: type) -> None:
    """Wrap the ``_run`` that tools of ``cls`` use (once per defining class)."""
    for klass in cls.__mro__:
        if "_run" in vars(klass):
            if klass is not base:
                patches.replace(klass, "_run", _recorded)
            return


def _recorded(original: Any) -> Any:
    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        arguments = dict(kwargs)
        for i, value in enumerate(args):
            arguments[f"arg{i}"] = value
        return record_tool_call_sync(
            str(self.name),
            arguments,
            lambda: original(self, *args, **kwargs),
            description=getattr(self, "description", None),
            function=getattr(self, "func", None),
        )

    return run
