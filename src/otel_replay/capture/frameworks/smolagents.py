"""smolagents: ``Tool.__call__``, through which its agents call every tool.

``ToolCallingAgent`` calls ``tool(**arguments)``; a ``CodeAgent``'s generated
code calls the tool as a function, by keyword or by position.  The arguments
recorded are keywords: positional ones take their names from the tool's
``inputs``, in order, as smolagents passes them to ``forward``.
"""

from __future__ import annotations

import functools
from typing import Any

from ._patch import Patches
from ._record import record_tool_call_sync

MODULE = "smolagents.tools"


def arguments(tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by name, as ``Tool.__call__`` reads them."""
    names = list(getattr(tool, "inputs", None) or {})
    one = args[0] if len(args) == 1 and not kwargs else None
    if isinstance(one, dict) and all(key in names for key in one):
        return dict(one)
    out = {names[i] if i < len(names) else f"arg{i}": value for i, value in enumerate(args)}
    out.update(kwargs)
    return out


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from smolagents.tools import Tool

    def make(original: Any) -> Any:
        @functools.wraps(original)
        def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
            own = {k: v for k, v in kwargs.items() if k != "sanitize_inputs_outputs"}
            return record_tool_call_sync(
                str(self.name),
                arguments(self, args, own),
                lambda: original(self, *args, **kwargs),
                description=getattr(self, "description", None),
                function=getattr(self, "forward", None),
            )

        return __call__

    patches.replace(Tool, "__call__", make, expect=("self", "args", "sanitize_inputs_outputs"))
