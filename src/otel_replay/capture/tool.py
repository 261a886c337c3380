"""``@otel_replay.tool``: record each tool execution byte-exactly.

Each call becomes an ``execute_tool <name>`` span with the GenAI tool
attributes plus exact payloads of the arguments and of the result (see
:mod:`otel_replay.payload.codec` for which types round-trip).  An exception is
recorded (event, ``error.type``, ERROR status, its constructor arguments) and
re-raised untouched.  When an agent framework already opened an
``execute_tool`` span for this call, that span is enriched instead of nesting
a second one.

During a replay session the call is handed to the replayer (see
:mod:`otel_replay.capture.hooks`), which answers from the recording.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ParamSpec, TypeVar, overload

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from .. import attributes as A
from . import hooks
from .content import capture_content
from .spans import (
    CurrentSpan,
    payload_attributes,
    record_error,
    scrubbed_payload,
    tracer,
    tracing_on,
    warn_once,
)

P = ParamSpec("P")
R = TypeVar("R")

_call_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "otel_replay_tool_call_id", default=None
)
#: The tool a framework integration records (an @tool of that name inside is not recorded twice).
_framework_tool: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "otel_replay_framework_tool", default=None
)


@contextlib.contextmanager
def tool_call_id(call_id: str | None) -> Iterator[None]:
    """Tell the ``@tool`` calls made inside the block which model tool call they answer.

    Replay then matches them to the recording by id before falling back to
    tool name and arguments.
    """
    token = _call_id.set(call_id)
    try:
        yield
    finally:
        _call_id.reset(token)


@overload
def tool(fn: Callable[P, R], /) -> Callable[P, R]: ...


@overload
def tool(
    *, name: str | None = None, ignore: Iterable[str] = ()
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    ignore: Iterable[str] = (),
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Record a tool function (sync or async) as an ``execute_tool`` span.

    ``name`` overrides the tool name (default: the function's name);
    ``ignore`` names parameters left out of the recorded arguments (a
    framework context object, a client handle).  ``self`` and ``cls`` are
    always left out.
    """

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        return _ToolWrapper(func, name or func.__name__, frozenset(ignore)).build()

    return decorate(fn) if fn is not None else decorate


class _ToolWrapper:
    def __init__(self, fn: Callable[..., Any], name: str, ignore: frozenset[str]) -> None:
        self.fn = fn
        self.name = name
        self.description = (inspect.getdoc(fn) or "").split("\n", 1)[0]
        try:
            self.signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self.signature = None
        params = list(self.signature.parameters.values()) if self.signature else []
        skip = set(ignore)
        if params and params[0].name in ("self", "cls"):
            skip.add(params[0].name)
        self.skip = frozenset(skip)
        self.var_keyword = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
        #: (name, default) of each parameter when all can be given by position or
        #: keyword: such calls are bound without ``Signature.bind`` (a tenth of a call).
        self.plain_params: tuple[tuple[str, Any], ...] | None = None
        if self.signature is not None and all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params):
            self.plain_params = tuple((p.name, p.default) for p in params)

    def build(self) -> Callable[..., Any]:
        fn = self.fn
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                call = _Call.begin(self, args, kwargs)
                if call is None:
                    return await fn(*args, **kwargs)
                with call:
                    if call.resolution is not None and call.resolution.action != "live":
                        return call.finish_resolved()
                    try:
                        result = await fn(*args, **kwargs)
                    except BaseException as exc:
                        call.fail(exc)
                        raise
                    return call.succeed(result)

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = _Call.begin(self, args, kwargs)
            if call is None:
                return fn(*args, **kwargs)
            with call:
                if call.resolution is not None and call.resolution.action != "live":
                    return call.finish_resolved()
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    call.fail(exc)
                    raise
                return call.succeed(result)

        return wrapper

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments by parameter name, in the signature's order, defaults applied."""
        if self.plain_params is not None:
            plain = self._bind_plain(self.plain_params, args, kwargs)
            if plain is not None:
                return plain
        if self.signature is None:
            return {"args": list(args), "kwargs": kwargs}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError:  # the real call will raise the real error
            return {"args": list(args), "kwargs": kwargs}
        bound.apply_defaults()
        out: dict[str, Any] = {}
        for key, value in bound.arguments.items():
            if key in self.skip:
                continue
            if key == self.var_keyword:
                out.update(value)
            else:
                out[key] = value
        return out

    def _bind_plain(
        self, params: tuple[tuple[str, Any], ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> dict[str, Any] | None:
        """What ``Signature.bind`` then ``apply_defaults`` give; None where they would raise."""
        if len(args) > len(params):
            return None
        out: dict[str, Any] = {}
        by_keyword = 0
        for i, (name, default) in enumerate(params):
            if i < len(args):
                if name in kwargs:
                    return None
                value = args[i]
            elif name in kwargs:
                value = kwargs[name]
                by_keyword += 1
            elif default is not inspect.Parameter.empty:
                value = default
            else:
                return None
            if name not in self.skip:
                out[name] = value
        return out if by_keyword == len(kwargs) else None


class _Call:
    """One in-flight tool call: its span, resolution and recording."""

    __slots__ = ("content", "hidden", "interceptor", "own_span", "resolution", "scope", "span", "w")

    def __init__(self, wrapper: _ToolWrapper) -> None:
        self.w = wrapper
        self.span: Span | None = None
        self.own_span = False
        self.scope: CurrentSpan | None = None
        self.content = capture_content()
        self.hidden: list[str] = []
        self.resolution: hooks.Resolution | None = None
        self.interceptor: hooks.ToolInterceptor | None = None

    @classmethod
    def begin(cls, w: _ToolWrapper, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Call | None:
        """Start recording; None when there is nothing to record or replay."""
        if _framework_tool.get() == w.name and not getattr(w, "framework", False):
            return None  # recorded (and replayed) by the framework integration around it
        interceptor = hooks.active()
        try:
            current = trace.get_current_span()
            enrich = _framework_tool_span(current, w.name)
            if interceptor is None and not enrich and not tracing_on():
                return None
            call = cls(w)
            call.interceptor = interceptor
            call_id = _call_id.get()
            if call_id is None and enrich:
                found = getattr(current, "attributes", {}).get(A.TOOL_CALL_ID)
                call_id = found if isinstance(found, str) else None
            arguments = w.arguments(args, kwargs)
            hidden: list[str] = []
            clean_args, encoded = scrubbed_payload(arguments, A.TOOL_CALL_ARGUMENTS, hidden)
        except Exception as exc:  # never let recording break the tool
            warn_once("tool-begin", "otel-replay could not record tool %s: %r", w.name, exc)
            if interceptor is not None:
                raise
            return None
        if interceptor is not None:
            call.resolution = interceptor.resolve(
                hooks.ToolInvocation(w.name, call_id, clean_args, encoded, w.fn)
            )
        try:
            # One attribute dict, given at span start: far cheaper in the SDK
            # than several set_attribute calls.
            attrs: dict[str, Any] = {
                A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                A.TOOL_NAME: w.name,
                A.TOOL_TYPE: "function",
            }
            if w.description:
                attrs[A.TOOL_DESCRIPTION] = w.description
            if call_id is not None:
                attrs[A.TOOL_CALL_ID] = call_id
            t = current if enrich else tracer()
            if call.content:
                key = A.TOOL_CALL_ARGUMENTS
                attrs.update(payload_attributes(t, key, clean_args, hidden, encoded=encoded))
                if enrich:
                    _keep_bytes(attrs, key)
                call.hidden.extend(hidden)
            else:
                attrs[A.CONTENT] = "NO_CONTENT"
            if enrich:
                call.span = current
                current.set_attributes(attrs)
            else:
                call.scope = CurrentSpan(f"{A.OP_EXECUTE_TOOL} {w.name}", SpanKind.INTERNAL, attrs)
                call.span = call.scope.span
                call.own_span = True
        except Exception as exc:
            warn_once("tool-span", "otel-replay could not record tool %s: %r", w.name, exc)
        return call

    def __enter__(self) -> _Call:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self.own_span and self.scope is not None:
            self.scope.end()

    def finish_resolved(self, errors_caught: bool = False) -> Any:
        """Obey the replay's resolution.  ``errors_caught``: the wrapped layer turns its
        tool's errors into an output, so a recorded error with its output returns that."""
        res = self.resolution
        assert res is not None
        if res.action == "raise" and not (errors_caught and res.has_value):
            assert res.error is not None
            self.fail(res.error)
            raise res.error
        return self.succeed(res.value)

    def succeed(self, result: Any) -> Any:
        span = self.span
        try:
            if span is not None and span.is_recording():
                attrs = (
                    payload_attributes(span, A.TOOL_CALL_RESULT, result, self.hidden)
                    if self.content
                    else {}
                )
                if attrs and not self.own_span:
                    _keep_bytes(attrs, A.TOOL_CALL_RESULT)
                if self.hidden:
                    attrs[A.REDACTED] = self.hidden
                span.set_attributes(attrs)
        except Exception as exc:
            warn_once("tool-result", "otel-replay could not record a tool result: %r", exc)
        if self.interceptor is not None and self.resolution is not None:
            self.interceptor.complete(self.resolution, result, None)
        return result

    def fail(self, exc: BaseException) -> None:
        span = self.span
        try:
            if span is not None and span.is_recording():
                record_error(span, exc, self.content, self.hidden)
                if self.hidden:
                    span.set_attribute(A.REDACTED, self.hidden)
        except Exception as err:
            warn_once("tool-error", "otel-replay could not record a tool error: %r", err)
        if self.interceptor is not None and self.resolution is not None:
            self.interceptor.complete(self.resolution, None, exc)


def _keep_bytes(attrs: dict[str, Any], key: str) -> None:
    """Add the exact bytes: a framework's span gets its own display of the value afterwards.

    (pydantic-ai sets ``gen_ai.tool.call.result`` after the tool returns; the
    bytes, checked against the digest on load, win over that display.)
    """
    display = attrs.get(key)
    if isinstance(display, str) and A.BYTES + key not in attrs:
        attrs[A.BYTES + key] = display.encode("utf-8", "surrogatepass")


def _framework_tool_span(span: Span, name: str) -> bool:
    """True when ``span`` is a live ``execute_tool`` span some framework opened for ``name``."""
    if not span.is_recording():
        return False
    attrs = getattr(span, "attributes", None)
    if not attrs:
        return False
    if attrs.get(A.OPERATION_NAME) != A.OP_EXECUTE_TOOL:
        # OpenInference's TOOL span (its openai-agents bridge) is named after the tool
        # and gets its other attributes only when it ends.
        return attrs.get("openinference.span.kind") == "TOOL" and (
            getattr(span, "name", None) == name or attrs.get("tool.name") == name
        )
    if A.SHA256 + A.TOOL_CALL_ARGUMENTS in attrs or A.TOOL_CALL_RESULT in attrs:
        return False  # one of ours (a tool calling a tool), or already finished: nest
    other = attrs.get(A.TOOL_NAME)
    return other is None or other == name
