"""Replay: session, pinned model, tool stubs, wire engine and its adapters.

``otel_replay.replay`` is both this package and the :func:`replay` function:
importing any module under it (``otel_replay.ReplayDivergence`` does) binds
the package to that name on ``otel_replay``, hiding the lazily exported
function.  So the package itself can be called, and calls the function.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The session (and what it imports) on the first call.
        from .session import replay

        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
