"""The interception point replay plugs into; capture never imports replay.

While a replay session is active it installs a :class:`ToolInterceptor`;
``@tool`` wrappers hand each call to it and obey the :class:`Resolution`
(return a recorded value, raise a recorded exception, or run the real
function).  Process-wide on purpose: tools run on worker threads too, and
the frozen clock is process-wide anyway.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

from ..payload import codec as payload


@dataclasses.dataclass(frozen=True)
class ToolInvocation:
    """A tool call as the replayer sees it (arguments already redacted)."""

    name: str
    call_id: str | None
    arguments: dict[str, Any]
    encoded: payload.Encoded
    #: The tool function itself, when known: its return annotation names the
    #: classes a replayed result may be rebuilt as.
    function: Callable[..., Any] | None = None


@dataclasses.dataclass
class Resolution:
    """What to do with one call: ``action`` is "return", "raise" or "live"."""

    action: str
    value: Any = None
    error: BaseException | None = None
    #: For "raise": the call also recorded an output (``value``).  A framework layer that
    #: catches its tools' errors and returns what it tells the model returns that.
    has_value: bool = False
    #: Opaque to capture: the replayer's handle for :meth:`ToolInterceptor.complete`.
    token: Any = None


class ToolInterceptor(Protocol):
    def resolve(self, invocation: ToolInvocation) -> Resolution: ...

    def complete(self, resolution: Resolution, outcome: Any, error: BaseException | None) -> None:
        """Called after the call ended (``outcome`` is the value returned to the caller)."""


_interceptor: ToolInterceptor | None = None


def install(interceptor: ToolInterceptor | None) -> ToolInterceptor | None:
    """Install ``interceptor`` (None removes); returns the previous one."""
    global _interceptor
    previous, _interceptor = _interceptor, interceptor
    return previous


def active() -> ToolInterceptor | None:
    return _interceptor
