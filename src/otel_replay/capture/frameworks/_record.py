"""A framework's tool call, recorded as ``@otel_replay.tool`` records one, or replayed."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Iterator
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
    with _framework_call(name, arguments, description, function) as call:
        answered, value = _replayed(call, errors_caught, replayed_error)
        if answered:
            return value
        try:
            result = await run()
        except BaseException as exc:
            if call is not None:
                call.fail(exc)
            raise
        return result if call is None else call.succeed(result)


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
    with _framework_call(name, arguments, description, function) as call:
        answered, value = _replayed(call, errors_caught, replayed_error)
        if answered:
            return value
        try:
            result = run()
        except BaseException as exc:
            if call is not None:
                call.fail(exc)
            raise
        return result if call is None else call.succeed(result)


@contextlib.contextmanager
def _framework_call(
    name: str,
    arguments: dict[str, Any],
    description: str | None,
    function: Callable[..., Any] | None,
) -> Iterator[_Call | None]:
    """The call being recorded (or replayed), or None when nothing records or replays it.

    A call inside a call of the same tool (the framework's own layers of one call:
    a sync ``_run`` under an async ``_arun``) is recorded once, outermost.
    """
    if _framework_tool.get() == name:
        yield None
        return
    call = _Call.begin(_Named(name, description, function), (), dict(arguments))  # type: ignore[arg-type]
    token = _framework_tool.set(name)
    try:
        if call is None:
            yield None
        else:
            with call:
                yield call
    finally:
        _framework_tool.reset(token)


def _replayed(
    call: _Call | None,
    errors_caught: bool,
    replayed_error: Callable[[BaseException], BaseException] | None,
) -> tuple[bool, Any]:
    """``(True, value)`` when the replay answers the call (or raises), else ``(False, None)``."""
    res = call.resolution if call is not None else None
    if call is None or res is None or res.action == "live":
        return False, None
    if replayed_error is not None and res.error is not None:
        res.error = replayed_error(res.error)
    return True, call.finish_resolved(errors_caught)


def recorded_function(
    original: Callable[..., Any],
    name: str,
    arguments: Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]],
    description: str | None,
) -> Callable[..., Any]:
    """``original`` (a user's tool function a framework calls) recorded, or answered by a
    replay; async when it is.  ``arguments(args, kwargs)``: the call's arguments by name."""
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            return await record_tool_call(
                name,
                arguments(args, kwargs),
                lambda: original(*args, **kwargs),
                description=description,
                function=original,
            )

        return call_async

    @functools.wraps(original)
    def call(*args: Any, **kwargs: Any) -> Any:
        return record_tool_call_sync(
            name,
            arguments(args, kwargs),
            lambda: original(*args, **kwargs),
            description=description,
            function=original,
        )

    return call


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
