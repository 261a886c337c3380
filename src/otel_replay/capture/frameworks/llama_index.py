"""LlamaIndex: a ``FunctionTool``'s function, called by ``FunctionTool.call`` / ``acall``.

``call`` / ``acall`` call the tool's function (``_fn``, or ``_async_fn``: the
same function run in a thread, or an async one) and wrap what it returns in
a ``ToolOutput``; LlamaIndex's agents turn a raised error into the error
output they tell the model.  The function is recorded and, in a replay,
answered: each tool's functions are wrapped the first time it is called (tools
are usually made before any setup).  The arguments recorded are the
model's: LlamaIndex's context parameter and the tool's ``partial_params``
are left out.
"""

from __future__ import annotations

import functools
from typing import Any

from ._patch import Patches
from ._record import recorded_function

MODULE = "llama_index.core.tools"


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from llama_index.core.tools import FunctionTool

    def make_call(original: Any) -> Any:
        @functools.wraps(original)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            _wrap_functions(patches, self)
            return original(self, *args, **kwargs)

        return call

    def make_acall(original: Any) -> Any:
        @functools.wraps(original)
        async def acall(self: Any, *args: Any, **kwargs: Any) -> Any:
            _wrap_functions(patches, self)
            return await original(self, *args, **kwargs)

        return acall

    patches.replace(FunctionTool, "call", make_call, expect=("self", "args", "kwargs"))
    patches.replace(FunctionTool, "acall", make_acall, expect=("self", "args", "kwargs"))


def _wrap_functions(patches: Patches, tool: Any) -> None:
    metadata = getattr(tool, "metadata", None)
    name = str(metadata.get_name() if metadata is not None else "tool")
    description = getattr(metadata, "description", None)
    hidden = {getattr(tool, "ctx_param_name", None), *(getattr(tool, "partial_params", {}) or {})}

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in kwargs.items() if k not in hidden}
        for i, value in enumerate(args):
            out[f"arg{i}"] = value
        return out

    def make(original: Any) -> Any:
        return recorded_function(original, name, arguments, description)

    for attribute in ("_fn", "_async_fn"):
        if callable(vars(tool).get(attribute)):
            patches.replace(tool, attribute, make)
