"""Small helpers the capture helpers share: tracer, limits, payloads, errors."""

from __future__ import annotations

import functools
import logging
import traceback
from typing import Any

from opentelemetry import context, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .. import attributes as A
from .. import settings
from .._version import __version__
from ..payload import codec as payload
from ..payload.attributes import to_attributes
from ..redaction import Redactor, redactor

logger = logging.getLogger("otel_replay")


def warn_once(key: str, message: str, *args: Any) -> None:
    """Log a capture problem once: tracing trouble must never flood or crash the app."""
    settings.warn_once(("capture", key), message, *args)


def sdk_disabled() -> bool:
    """``OTEL_SDK_DISABLED=true``: the SDK records nothing, and we patch and install nothing.

    Read as the SDK reads it, at each call (the variable may be set after import).
    """
    return settings.current().sdk_disabled


_provider: trace.TracerProvider | None = None


def use_tracer_provider(provider: trace.TracerProvider | None) -> trace.TracerProvider | None:
    """Send the capture helpers' spans to ``provider`` instead of the global one.

    For apps and tests that keep several providers (the global one can be set
    only once per process).  ``None`` goes back to the global provider.
    Returns the previous setting.
    """
    global _provider
    previous, _provider = _provider, provider
    return previous


def tracer_provider() -> trace.TracerProvider:
    return _provider if _provider is not None else trace.get_tracer_provider()


def tracing_on() -> bool:
    """Is an SDK configured?  With none nothing is recorded: helpers skip all encoding work."""
    return not isinstance(tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


class CurrentSpan:
    """A span of ours, started and made current until :meth:`end`.

    What ``start_as_current_span`` does, without its two generator context
    managers (4% of a small ``model_call``): the helpers record their
    exceptions themselves, so nothing is recorded on the way out.
    """

    __slots__ = ("_token", "span")

    def __init__(self, name: str, kind: SpanKind, attributes: dict[str, Any] | None) -> None:
        self.span = tracer().start_span(
            name,
            kind=kind,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        self._token = context.attach(trace.set_span_in_context(self.span))

    def end(self) -> None:
        """No longer current, then ended (as ``start_as_current_span`` leaves it)."""
        try:
            context.detach(self._token)
        finally:
            self.span.end()


_tracer: tuple[trace.TracerProvider, trace.Tracer] | None = None


def tracer() -> trace.Tracer:
    """Our tracer from the current provider (a provider set after import is honoured)."""
    global _tracer
    provider = tracer_provider()
    cached = _tracer
    if cached is not None and cached[0] is provider:
        return cached[1]
    # The SDK builds a new Tracer per get_tracer() call: worth caching per provider.
    made = provider.get_tracer(A.SCOPE_NAME, __version__)
    if not isinstance(provider, trace.ProxyTracerProvider):
        _tracer = (provider, made)
    return made


def length_limit(span_or_tracer: Any) -> int | None:
    """The SDK's attribute value length limit for a span or tracer (None: unlimited)."""
    limits = getattr(span_or_tracer, "_limits", None) or getattr(
        span_or_tracer, "_span_limits", None
    )
    value = getattr(limits, "max_span_attribute_length", None)
    return value if isinstance(value, int) else None


@functools.lru_cache(maxsize=1)
def max_inline() -> int:
    """``OTEL_REPLAY_MAX_INLINE_BYTES``, read once per process."""
    return settings.current().max_inline_bytes


#: Lists at least this long (a conversation) are scrubbed item by item, remembering clean ones.
_ITEM_BY_ITEM = 8


def scrubbed_payload(value: Any, key: str, hidden: list[str]) -> tuple[Any, payload.Encoded]:
    """``value`` with its secrets hidden, and its encoding: the digest is of what is written.

    A value kept only as its ``repr`` has the repr text scrubbed (a class's
    ``__repr__`` may print a field the walk could not reach).
    """
    r = redactor()
    t = type(value)
    if (t is dict or t is list) and not r.hooked:
        # A hook is owed a list whole under its own path: never item by item, nor
        # answered from memory.  A short list costs less walked whole than item by item.
        if payload.is_plain_json(value):
            if t is list and len(value) >= _ITEM_BY_ITEM:
                return _scrubbed_items(value, key, hidden)
            clean, text = _scrubbed_text(r, value, key, hidden)
            return clean, payload.Encoded(payload.JSON, text.encode("utf-8", "surrogatepass"))
        clean, plain = r.scrub_json(value, key, hidden)
        if plain:
            return clean, payload.Encoded(payload.JSON, payload.plain_json_bytes(clean))
    else:
        clean = r.scrub(value, key, hidden)
    encoded = payload.encode(clean)
    if encoded.type == payload.REPR:
        text = encoded.data.decode("utf-8", "surrogatepass")
        safe = r.text(text)
        if safe is not text:
            hidden.append(key)
            return safe, payload.Encoded(payload.REPR, safe.encode("utf-8", "surrogatepass"))
        return text, encoded
    return clean, encoded


def _scrubbed_items(
    items: list[Any], key: str, hidden: list[str]
) -> tuple[list[Any], payload.Encoded]:
    """A plain JSON list scrubbed and encoded item by item, as :func:`scrubbed_payload` would.

    An agent's every model call records the whole conversation so far: an
    item whose text was scrubbed before and hid nothing is not walked again
    (the cost of a call no longer grows with the conversation's length).
    """
    r = redactor()
    clean: list[Any] = []
    texts: list[str] = []
    for i, item in enumerate(items):
        item, text = _scrubbed_text(r, item, f"{key}[{i}]", hidden)
        clean.append(item)
        texts.append(text)
    # What encoding the whole list writes: its items' texts, comma-separated, in brackets.
    data = ("[" + ",".join(texts) + "]").encode("utf-8", "surrogatepass")  # as plain_json_bytes
    same = all(c is v for c, v in zip(clean, items, strict=True))
    return (items if same else clean), payload.Encoded(payload.JSON, data)


def _scrubbed_text(r: Redactor, value: Any, path: str, hidden: list[str]) -> tuple[Any, str]:
    """A plain JSON ``value`` scrubbed, and its JSON text: what ``r.scrub`` and
    :func:`~otel_replay.payload.codec.plain_json_text` give, without the walk when
    that text was found to hide nothing before.

    Tool schemas, system instructions and earlier messages are recorded again
    with every call: encoding them is needed anyway, and a text's hash costs a
    fraction of walking the value (equal texts, equal plain values: equal verdicts).
    """
    text = payload.plain_json_text(value)
    if r.known_clean(text):
        return value, text
    clean = r.scrub(value, path, hidden)
    if clean is value:
        r.remember_clean(text)
        return value, text
    return clean, payload.plain_json_text(clean)


def payload_attributes(
    limits_from: Any,
    key: str,
    value: Any,
    hidden: list[str],
    *,
    encoded: payload.Encoded | None = None,
) -> dict[str, Any]:
    """Attributes recording ``value`` under ``key`` byte-exactly, after redaction.

    ``limits_from`` is the span or tracer whose attribute length limit applies.
    A caller passing ``encoded`` has already scrubbed ``value`` and encoded it
    (see :func:`scrubbed_payload`).
    """
    if encoded is None:
        value, encoded = scrubbed_payload(value, key, hidden)
    return to_attributes(
        key, value, length_limit=length_limit(limits_from), max_inline=max_inline(), encoded=encoded
    )


def set_payload(span: Span, key: str, value: Any, hidden: list[str]) -> None:
    """Record ``value`` under ``key`` on ``span`` byte-exactly, after redaction."""
    span.set_attributes(payload_attributes(span, key, value, hidden))


def record_error(span: Span, exc: BaseException, content: bool, hidden: list[str]) -> None:
    """Exception event, ``error.type`` and ERROR status; args byte-exact when content is on.

    The message and stack trace are scrubbed as any recorded text is (the
    SDK's ``record_exception`` would write them as they are).
    """
    cls = type(exc)
    qualified = (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )
    span.set_attribute(A.ERROR_TYPE, qualified)
    if not content:
        span.set_status(Status(StatusCode.ERROR, qualified))
        span.add_event("exception", {"exception.type": qualified})
        return
    r = redactor()
    message = r.text(_text_of(exc))
    stack = r.text("".join(traceback.format_exception(cls, exc, exc.__traceback__)))
    span.set_status(Status(StatusCode.ERROR, message))
    span.add_event(
        "exception",
        {
            "exception.type": cls.__qualname__,
            "exception.message": message,
            "exception.stacktrace": stack,
            "exception.escaped": "False",
        },
    )
    set_payload(span, A.EXCEPTION_ARGS, tuple(exc.args), hidden)


def _text_of(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ must not break recording
        return type(exc).__qualname__
