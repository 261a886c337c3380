"""Every environment variable otel-replay reads: one list, one way to read each kind.

:data:`VARIABLES` lists them all, each with its type, default, bound and a
line saying what it does; the settings page's table is made from it
(``python -m otel_replay.settings --markdown``).  Standard variables
(OpenTelemetry's, XDG's) that the package reads itself are in the list too,
marked ``standard``: they keep the meaning their specification gives them.

One rule for flags: ``1``, ``true``, ``yes``, ``on`` (:data:`TRUE`) turn one
on and ``0``, ``false``, ``no``, ``off`` (:data:`FALSE`) turn it off, in any
case and with spaces around; unset or empty keeps the default.  Any other
value is said once (:func:`warn_once`) and keeps the default.  Numbers that
do not parse, or are out of their bound, are said once too, and are then
either brought within the bound or replaced by the default, as the list
says.  Reading never raises.

:func:`current` is the :class:`Settings` in force: read again whenever a
listed variable changed since the last call (an app or a test may set one
at run time), so callers read it where they used to read the environment.

Each idea has its module, and this package offers them all under one name:

- :mod:`.names`: each variable's name as a constant, the defaults, the units;
- :mod:`.variables`: the one list, :data:`VARIABLES` (and :data:`BY_NAME`);
- :mod:`.parsing`: the one rule, :class:`Variable` and :func:`parse_flag`;
- :mod:`.environment`: :class:`Settings` and :func:`current`;
- :mod:`.once`: :class:`Once` and :func:`warn_once`;
- :mod:`.readme`: the settings page's table, :func:`markdown` (loaded when first asked for:
  the traced app, which imports this package, never makes the table).

The package imports nothing of otel-replay: every other module may use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .environment import Settings, current, own_variables
from .names import (
    DEFAULT_OTEL_REPLAY_LOCK_TIMEOUT,
    DEFAULT_OTEL_REPLAY_MAX_BLOB_BYTES,
    DEFAULT_OTEL_REPLAY_MAX_INLINE_BYTES,
    DEFAULT_OTEL_REPLAY_MAX_QUEUE,
    DEFAULT_OTEL_REPLAY_MAX_RECORD_BYTES,
    DEFAULT_OTEL_REPLAY_MAX_URL_BYTES,
    DEFAULT_OTEL_REPLAY_ROTATE_MAX_BACKUPS,
    DEFAULT_OTEL_REPLAY_ROTATE_MAX_DAYS,
    DEFAULT_OTEL_REPLAY_ROTATE_MB,
    DEFAULT_OTEL_REPLAY_SEMCONV_MODE,
    DEFAULT_OTEL_REPLAY_URL_TIMEOUT,
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
    OTEL_REPLAY_BASE64_BYTES,
    OTEL_REPLAY_CLICKHOUSE_PASSWORD,
    OTEL_REPLAY_COMMIT,
    OTEL_REPLAY_COMPRESSION,
    OTEL_REPLAY_CONTENT_REFS,
    OTEL_REPLAY_DIRTY,
    OTEL_REPLAY_FILE,
    OTEL_REPLAY_FLAGS,
    OTEL_REPLAY_FORMAT,
    OTEL_REPLAY_FRAMEWORK_TOOLS,
    OTEL_REPLAY_FSYNC,
    OTEL_REPLAY_HTTP_HEADERS,
    OTEL_REPLAY_ISOLATE,
    OTEL_REPLAY_ISOLATED,
    OTEL_REPLAY_LOCK_TIMEOUT,
    OTEL_REPLAY_MAX_BLOB_BYTES,
    OTEL_REPLAY_MAX_INLINE_BYTES,
    OTEL_REPLAY_MAX_QUEUE,
    OTEL_REPLAY_MAX_RECORD_BYTES,
    OTEL_REPLAY_MAX_URL_BYTES,
    OTEL_REPLAY_PAYLOAD_STORE,
    OTEL_REPLAY_PROCESSOR,
    OTEL_REPLAY_PYDANTIC_AI_SPANS,
    OTEL_REPLAY_REDACT_KEYS,
    OTEL_REPLAY_REDACT_PATTERNS,
    OTEL_REPLAY_REDACT_PERSONAL_DATA,
    OTEL_REPLAY_ROTATE_LOCALTIME,
    OTEL_REPLAY_ROTATE_MAX_BACKUPS,
    OTEL_REPLAY_ROTATE_MAX_DAYS,
    OTEL_REPLAY_ROTATE_MB,
    OTEL_REPLAY_SEED,
    OTEL_REPLAY_SEMCONV,
    OTEL_REPLAY_SEMCONV_EXCLUDE,
    OTEL_REPLAY_SEMCONV_MODE,
    OTEL_REPLAY_URL_TIMEOUT,
    OTEL_SDK_DISABLED,
    OTEL_TRACES_EXPORTER,
    XDG_CACHE_HOME,
    GiB,
    KiB,
    MiB,
    size_text,
)
from .once import Once, warn_once
from .parsing import CONTENT_OFF, FALSE, TRUE, Kind, Variable, parse_flag
from .variables import BY_NAME, VARIABLES

if TYPE_CHECKING:
    from .readme import main, markdown

__all__ = [
    "BY_NAME",
    "CONTENT_OFF",
    "DEFAULT_OTEL_REPLAY_LOCK_TIMEOUT",
    "DEFAULT_OTEL_REPLAY_MAX_BLOB_BYTES",
    "DEFAULT_OTEL_REPLAY_MAX_INLINE_BYTES",
    "DEFAULT_OTEL_REPLAY_MAX_QUEUE",
    "DEFAULT_OTEL_REPLAY_MAX_RECORD_BYTES",
    "DEFAULT_OTEL_REPLAY_MAX_URL_BYTES",
    "DEFAULT_OTEL_REPLAY_ROTATE_MAX_BACKUPS",
    "DEFAULT_OTEL_REPLAY_ROTATE_MAX_DAYS",
    "DEFAULT_OTEL_REPLAY_ROTATE_MB",
    "DEFAULT_OTEL_REPLAY_SEMCONV_MODE",
    "DEFAULT_OTEL_REPLAY_URL_TIMEOUT",
    "FALSE",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "OTEL_REPLAY_BASE64_BYTES",
    "OTEL_REPLAY_CLICKHOUSE_PASSWORD",
    "OTEL_REPLAY_COMMIT",
    "OTEL_REPLAY_COMPRESSION",
    "OTEL_REPLAY_CONTENT_REFS",
    "OTEL_REPLAY_DIRTY",
    "OTEL_REPLAY_FILE",
    "OTEL_REPLAY_FLAGS",
    "OTEL_REPLAY_FORMAT",
    "OTEL_REPLAY_FRAMEWORK_TOOLS",
    "OTEL_REPLAY_FSYNC",
    "OTEL_REPLAY_HTTP_HEADERS",
    "OTEL_REPLAY_ISOLATE",
    "OTEL_REPLAY_ISOLATED",
    "OTEL_REPLAY_LOCK_TIMEOUT",
    "OTEL_REPLAY_MAX_BLOB_BYTES",
    "OTEL_REPLAY_MAX_INLINE_BYTES",
    "OTEL_REPLAY_MAX_QUEUE",
    "OTEL_REPLAY_MAX_RECORD_BYTES",
    "OTEL_REPLAY_MAX_URL_BYTES",
    "OTEL_REPLAY_PAYLOAD_STORE",
    "OTEL_REPLAY_PROCESSOR",
    "OTEL_REPLAY_PYDANTIC_AI_SPANS",
    "OTEL_REPLAY_REDACT_KEYS",
    "OTEL_REPLAY_REDACT_PATTERNS",
    "OTEL_REPLAY_REDACT_PERSONAL_DATA",
    "OTEL_REPLAY_ROTATE_LOCALTIME",
    "OTEL_REPLAY_ROTATE_MAX_BACKUPS",
    "OTEL_REPLAY_ROTATE_MAX_DAYS",
    "OTEL_REPLAY_ROTATE_MB",
    "OTEL_REPLAY_SEED",
    "OTEL_REPLAY_SEMCONV",
    "OTEL_REPLAY_SEMCONV_EXCLUDE",
    "OTEL_REPLAY_SEMCONV_MODE",
    "OTEL_REPLAY_URL_TIMEOUT",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "TRUE",
    "VARIABLES",
    "XDG_CACHE_HOME",
    "GiB",
    "KiB",
    "Kind",
    "MiB",
    "Once",
    "Settings",
    "Variable",
    "current",
    "main",
    "markdown",
    "own_variables",
    "parse_flag",
    "size_text",
    "warn_once",
]


def __getattr__(name: str) -> Any:
    """The settings page's table (:func:`markdown`, :func:`main`), imported on first use."""
    if name in ("main", "markdown"):
        # lazy: imported on first use, not with the package
        from . import readme

        return getattr(readme, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
