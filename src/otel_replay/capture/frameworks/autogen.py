"""AutoGen: ``FunctionTool.run``, which calls a function tool's function.

AutoGen's agents call ``tool.run_json(arguments, cancellation_token,
call_id)``, which opens AutoGen's own ``execute_tool`` span and calls
``run`` inside it with the validated arguments model: that span is enriched
with the byte-exact payloads (its call id is the model's).  A raised error
is what AutoGen's workbench tells the model.
"""

from __future__ import annotations

import functools
from typing import Any

from ._patch import Patches
from ._record import record_tool_call

MODULE = "autogen_core.tools"


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from autogen_core.tools import FunctionTool

    def make(original: Any) -> Any:
        @functools.wraps(original)
        async def run(self: Any, args: Any, cancellation_token: Any) -> Any:
            dump = getattr(args, "model_dump", None)
            arguments = dump() if callable(dump) else dict(args)
            return await record_tool_call(
                str(self.name),
                arguments,
                lambda: original(self, args, cancellation_token),
                description=getattr(self, "description", None),
                function=getattr(self, "_func", None),
            )

        return run

    patches.replace(FunctionTool, "run", make, expect=("self", "args", "cancellation_token"))
