"""A framework's tool call, recorded as ``@otel_replay.tool`` records one, or replayed."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from ..tool import _Call, _framework_tool


class _Named:
    """What :class:`~otel_replay.capture.tool._Call` needs to know of a tool."""

    framework = True

    def __init__(
        self, name: str, description: str | None, fn: Callable[..., Any] | None = None
    ) -> None:
        self.name = name
        self.description = (description or "").strip().split("\n", 1)[0]
        #: The user's function the framework calls, when known: what it declares it
        #: returns tells a replay how to hand back a result a trace kept as text.
        self.fn = fn

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        return kwargs


async def record_tool_call(
    name: str,
    arguments: dict[str, Any],
    run: Callable[[], Awaitable[Any]],
    *,
    description: str | None = None,
    errors_caught: bool = False,
    replayed_error: Callable[[BaseException], BaseException] | None = None,
    function: Callable[..., Any] | None = None,
) -> Any:
    """Run ``run()`` (a framework's call of tool ``name``) recorded, or answered by a replay.

    ``errors_caught``: ``run()`` turns the tool's errors into an output of its own
    (what the framework tells the model); a recorded error that has one replays it.
    ``replayed_error``: the exception ``run()`` must raise for the recorded one
    (a framework that records an exception of its own in place of the tool's).
    ``function``: the user's tool function, when the framework says which.
    """
    if _framework_tool.get() == name:
        return await run()  # the framework's own layers of one call: recorded once, outermost
    call = _Call.begin(_Named(name, description, function), (), dict(arguments))  # type: ignore[arg-type]
    token = _framework_tool.set(name)
    try:
        if call is None:
            return await run()
        with call:
            if call.resolution is not None and call.resolution.action != "live":
                _translate(call, replayed_error)
                return call.finish_resolved(errors_caught)
            try:
                result = await run()
            except BaseException as exc:
                call.fail(exc)
                raise
            return call.succeed(result)
    finally:
        _framework_tool.reset(token)


def record_tool_call_sync(
    name: str,
    arguments: dict[str, Any],
    run: Callable[[], Any],
    *,
    description: str | None = None,
    errors_caught: bool = False,
    replayed_error: Callable[[BaseException], BaseException] | None = None,
    function: Callable[..., Any] | None = None,
) -> Any:
    """:func:`record_tool_call` for a framework that calls its tools synchronously."""
    if _framework_tool.get() == name:
        return run()
    call = _Call.begin(_Named(name, description, function), (), dict(arguments))  # type: ignore[arg-type]
    token = _framework_tool.set(name)
    try:
        if call is None:
            return run()
        with call:
            if call.resolution is not None and call.resolution.action != "live":
                _translate(call, replayed_error)
                return call.finish_resolved(errors_caught)
            try:
                result = run()
            except BaseException as exc:
                call.fail(exc)
                raise
            return call.succeed(result)
    finally:
        _framework_tool.reset(token)


def _translate(
    call: _Call,
    replayed_error: Callable[[BaseException], BaseException] | None,
) -> None:
    res = call.resolution
    if replayed_error is not None and res is not None and res.error is not None:
        res.error = replayed_error(res.error)


def json_arguments(text: Any) -> dict[str, Any]:
    """A model's tool-call arguments (a JSON object as text) as a dict; else ``{"input": text}``."""
    if isinstance(text, str):
        try:
            value = json.loads(text) if text.strip() else {}
        except ValueError:
            return {"input": text}
        return value if isinstance(value, dict) else {"input": value}
    if isinstance(text, dict):
        return dict(text)
    return {"input": text}
