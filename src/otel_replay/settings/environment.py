"""The settings in force: the frozen :class:`Settings` read from the environment.

:func:`current` is the :class:`Settings` in force: read again whenever a
listed variable changed since the last call (an app or a test may set one
at run time), so callers read it where they used to read the environment.
This is the one module of the package that reads ``os.environ``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from typing import Any, Final

from .parsing import CONTENT_OFF
from .variables import BY_NAME, VARIABLES

__all__ = ["Settings", "current", "own_variables"]

#: The listed names, in the list's order: what a change is looked for in.
_NAMES: Final = tuple(BY_NAME)


@dataclasses.dataclass(frozen=True)
class Settings:
    """The value of every variable of :data:`VARIABLES`, read at one time.

    Fields are named after the variables (``OTEL_REPLAY_MAX_INLINE_BYTES`` is
    :attr:`max_inline_bytes`, ``OTEL_SDK_DISABLED`` is
    :attr:`otel_sdk_disabled`); secrets are left out of the ``repr``.
    """

    file: str | None
    format: str | None
    compression: str | None
    max_inline_bytes: int
    payload_store: str | None = dataclasses.field(repr=False)
    fsync: bool
    lock_timeout: float
    rotate_mb: float
    rotate_max_backups: int
    rotate_max_days: float
    rotate_localtime: bool
    max_queue: int
    processor: bool | None
    framework_tools: bool
    pydantic_ai_spans: bool
    base64_bytes: bool
    semconv: bool
    semconv_exclude: tuple[str, ...]
    semconv_mode: str
    redact_keys: tuple[str, ...]
    redact_patterns: tuple[str, ...]
    redact_personal_data: bool
    commit: str | None
    dirty: bool | None
    flags: str | None = dataclasses.field(repr=False)
    seed: int | None
    max_record_bytes: float
    max_blob_bytes: float
    max_url_bytes: float
    url_timeout: float
    http_headers: str | None = dataclasses.field(repr=False)
    content_refs: tuple[str, ...] = dataclasses.field(repr=False)
    clickhouse_password: str | None = dataclasses.field(repr=False)
    isolate: bool
    isolated: bool
    otel_sdk_disabled: str | None
    otel_traces_exporter: str | None
    otel_instrumentation_genai_capture_message_content: str | None
    otel_exporter_otlp_traces_protocol: str | None
    otel_exporter_otlp_protocol: str | None
    otel_exporter_otlp_traces_endpoint: str | None = dataclasses.field(repr=False)
    otel_exporter_otlp_endpoint: str | None = dataclasses.field(repr=False)
    otel_exporter_otlp_traces_headers: str | None = dataclasses.field(repr=False)
    otel_exporter_otlp_headers: str | None = dataclasses.field(repr=False)
    xdg_cache_home: str | None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every variable from ``environ`` (``os.environ`` when None); never raises."""
        source = os.environ if environ is None else environ
        return cls._made(tuple(source.get(name) for name in _NAMES))

    @classmethod
    def _made(cls, raw: tuple[str | None, ...]) -> Settings:
        return cls(**{v.field: v.parse(text) for v, text in zip(VARIABLES, raw, strict=True)})

    def value(self, name: str) -> Any:
        """The value of the variable ``name`` (one of :data:`VARIABLES`)."""
        return getattr(self, BY_NAME[name].field)

    # Standard variables, read with the meaning their specification gives them.

    @property
    def sdk_disabled(self) -> bool:
        """``OTEL_SDK_DISABLED=true`` (any case, spaces around): only ``true``, as the SDK."""
        return (self.otel_sdk_disabled or "").strip().lower() == "true"

    @property
    def capture_message_content(self) -> bool:
        """Content is captured unless the GenAI switch says :data:`CONTENT_OFF`."""
        value = self.otel_instrumentation_genai_capture_message_content
        return value is None or value.strip().lower() not in CONTENT_OFF


# --- the settings in force --------------------------------------------------------

_cached: tuple[tuple[Any, ...], Settings] | None = None


def _snapshot() -> tuple[Any, ...]:
    """The listed variables' values as the process holds them, compared to see a change.

    The mapping behind ``os.environ`` is looked into directly when there is
    one (each ``os.environ.get`` encodes its key and may raise inside): it
    keeps :func:`current` cheap enough to call on every record.
    """
    environ = os.environ
    data = getattr(environ, "_data", None)
    encode = getattr(environ, "encodekey", None)
    if isinstance(data, dict) and encode is not None:
        keys = _encoded.get(encode)
        if keys is None:
            keys = _encoded[encode] = tuple(encode(name) for name in _NAMES)
        return tuple(map(data.get, keys))
    return tuple(map(environ.get, _NAMES))


_encoded: dict[Any, tuple[Any, ...]] = {}


def current() -> Settings:
    """The settings in force: read again when a listed variable changed since the last call."""
    global _cached
    raw = _snapshot()
    cached = _cached
    if cached is not None and cached[0] == raw:
        return cached[1]
    made = Settings.from_env(os.environ)
    _cached = (raw, made)
    return made


def own_variables(environ: Mapping[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """Every ``OTEL_REPLAY_*`` variable set, listed or not (a child process is handed them)."""
    source = os.environ if environ is None else environ
    for name, value in list(source.items()):
        if name.startswith("OTEL_REPLAY_"):
            yield name, value
