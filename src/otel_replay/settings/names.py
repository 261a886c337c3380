"""The name of every environment variable otel-replay reads, its default, and the units.

Each name is a constant of its own text (``OTEL_REPLAY_FILE ==
"OTEL_REPLAY_FILE"``), so that a module says which variable it means by name;
:mod:`.variables` lists them all with their kinds and bounds.  Sizes are given
in binary units (:data:`KiB`, :data:`MiB`, :data:`GiB`) and shown in them by
:func:`size_text`.
"""

from __future__ import annotations

from typing import Final

# --- units ------------------------------------------------------------------------

KiB: Final = 1 << 10
MiB: Final = 1 << 20
GiB: Final = 1 << 30


def size_text(n: int) -> str:
    """``n`` bytes in the largest binary unit that divides it: ``256 MiB``, ``1536 KiB``."""
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n} bytes"


# --- the names --------------------------------------------------------------------

#: The file :class:`~otel_replay.export.file_exporter.FileSpanExporter` writes.
OTEL_REPLAY_FILE: Final = "OTEL_REPLAY_FILE"
#: The file's format: ``proto`` or ``json``.
OTEL_REPLAY_FORMAT: Final = "OTEL_REPLAY_FORMAT"
#: The file's compression: ``zstd`` or ``none``.
OTEL_REPLAY_COMPRESSION: Final = "OTEL_REPLAY_COMPRESSION"
#: Exact payloads larger than this many bytes go to the blob or payload store.
OTEL_REPLAY_MAX_INLINE_BYTES: Final = "OTEL_REPLAY_MAX_INLINE_BYTES"
#: Where payloads go instead of the blob store beside the file.
OTEL_REPLAY_PAYLOAD_STORE: Final = "OTEL_REPLAY_PAYLOAD_STORE"
#: Whether each export is made to survive a machine crash.
OTEL_REPLAY_FSYNC: Final = "OTEL_REPLAY_FSYNC"
#: Seconds an export waits for another writer's lock.
OTEL_REPLAY_LOCK_TIMEOUT: Final = "OTEL_REPLAY_LOCK_TIMEOUT"
#: Rotate the file before it grows past this many megabytes.
OTEL_REPLAY_ROTATE_MB: Final = "OTEL_REPLAY_ROTATE_MB"
#: How many rotated backups are kept.
OTEL_REPLAY_ROTATE_MAX_BACKUPS: Final = "OTEL_REPLAY_ROTATE_MAX_BACKUPS"
#: How many days rotated backups are kept.
OTEL_REPLAY_ROTATE_MAX_DAYS: Final = "OTEL_REPLAY_ROTATE_MAX_DAYS"
#: Whether rotated backups are named by local time.
OTEL_REPLAY_ROTATE_LOCALTIME: Final = "OTEL_REPLAY_ROTATE_LOCALTIME"
#: The most spans the recording processor queues.
OTEL_REPLAY_MAX_QUEUE: Final = "OTEL_REPLAY_MAX_QUEUE"
#: Whether ``opentelemetry-instrument`` adds the replay processor.
OTEL_REPLAY_PROCESSOR: Final = "OTEL_REPLAY_PROCESSOR"
#: Whether frameworks' tool calls are recorded under ``opentelemetry-instrument``.
OTEL_REPLAY_FRAMEWORK_TOOLS: Final = "OTEL_REPLAY_FRAMEWORK_TOOLS"
#: Whether pydantic-ai's own spans are turned on under ``opentelemetry-instrument``.
OTEL_REPLAY_PYDANTIC_AI_SPANS: Final = "OTEL_REPLAY_PYDANTIC_AI_SPANS"
#: Whether the processor adds current GenAI semconv attributes.
OTEL_REPLAY_SEMCONV: Final = "OTEL_REPLAY_SEMCONV"
#: GenAI attribute families not to add.
OTEL_REPLAY_SEMCONV_EXCLUDE: Final = "OTEL_REPLAY_SEMCONV_EXCLUDE"
#: ``repair`` or ``missing``: what semconv normalization may change.
OTEL_REPLAY_SEMCONV_MODE: Final = "OTEL_REPLAY_SEMCONV_MODE"
#: Whether ``bytes`` attribute values are sent as base64 text.
OTEL_REPLAY_BASE64_BYTES: Final = "OTEL_REPLAY_BASE64_BYTES"
#: Key patterns whose values are hidden, beside the built-in ones.
OTEL_REPLAY_REDACT_KEYS: Final = "OTEL_REPLAY_REDACT_KEYS"
#: Value patterns that are hidden, beside the built-in ones.
OTEL_REPLAY_REDACT_PATTERNS: Final = "OTEL_REPLAY_REDACT_PATTERNS"
#: Whether e-mail addresses and phone numbers are hidden too.
OTEL_REPLAY_REDACT_PERSONAL_DATA: Final = "OTEL_REPLAY_REDACT_PERSONAL_DATA"
#: The commit recorded in the fingerprint instead of asking git.
OTEL_REPLAY_COMMIT: Final = "OTEL_REPLAY_COMMIT"
#: Whether the working tree of :data:`OTEL_REPLAY_COMMIT` had changes.
OTEL_REPLAY_DIRTY: Final = "OTEL_REPLAY_DIRTY"
#: Feature flags recorded in the fingerprint.
OTEL_REPLAY_FLAGS: Final = "OTEL_REPLAY_FLAGS"
#: The random seed recorded in the fingerprint.
OTEL_REPLAY_SEED: Final = "OTEL_REPLAY_SEED"
#: The most a reader holds of one record.
OTEL_REPLAY_MAX_RECORD_BYTES: Final = "OTEL_REPLAY_MAX_RECORD_BYTES"
#: The most a blob may hold.
OTEL_REPLAY_MAX_BLOB_BYTES: Final = "OTEL_REPLAY_MAX_BLOB_BYTES"
#: The most a URL's answer may hold.
OTEL_REPLAY_MAX_URL_BYTES: Final = "OTEL_REPLAY_MAX_URL_BYTES"
#: Seconds a URL's answer may take.
OTEL_REPLAY_URL_TIMEOUT: Final = "OTEL_REPLAY_URL_TIMEOUT"
#: Headers sent with every URL read.
OTEL_REPLAY_HTTP_HEADERS: Final = "OTEL_REPLAY_HTTP_HEADERS"
#: Stores whose content references a reader may follow.
OTEL_REPLAY_CONTENT_REFS: Final = "OTEL_REPLAY_CONTENT_REFS"
#: The ClickHouse password, instead of one in the URL.
OTEL_REPLAY_CLICKHOUSE_PASSWORD: Final = "OTEL_REPLAY_CLICKHOUSE_PASSWORD"
#: Whether the pytest plugin runs the tests in a network namespace.
OTEL_REPLAY_ISOLATE: Final = "OTEL_REPLAY_ISOLATE"
#: Set in the child a network namespace runs in.
OTEL_REPLAY_ISOLATED: Final = "OTEL_REPLAY_ISOLATED"

#: The OpenTelemetry SDK's switch: ``true`` turns the SDK off.
OTEL_SDK_DISABLED: Final = "OTEL_SDK_DISABLED"
#: The exporters ``opentelemetry-instrument`` builds.
OTEL_TRACES_EXPORTER: Final = "OTEL_TRACES_EXPORTER"
#: The GenAI instrumentations' switch for message content.
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: Final = (
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)
OTEL_EXPORTER_OTLP_PROTOCOL: Final = "OTEL_EXPORTER_OTLP_PROTOCOL"
OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Final = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
OTEL_EXPORTER_OTLP_ENDPOINT: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Final = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
OTEL_EXPORTER_OTLP_HEADERS: Final = "OTEL_EXPORTER_OTLP_HEADERS"
OTEL_EXPORTER_OTLP_TRACES_HEADERS: Final = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
#: The base directory of user caches (the XDG specification).
XDG_CACHE_HOME: Final = "XDG_CACHE_HOME"

# --- the defaults -----------------------------------------------------------------

DEFAULT_OTEL_REPLAY_MAX_INLINE_BYTES: Final = 256 * KiB
DEFAULT_OTEL_REPLAY_LOCK_TIMEOUT: Final = 1.0
DEFAULT_OTEL_REPLAY_ROTATE_MB: Final = 0.0
DEFAULT_OTEL_REPLAY_ROTATE_MAX_BACKUPS: Final = 100
DEFAULT_OTEL_REPLAY_ROTATE_MAX_DAYS: Final = 0.0
DEFAULT_OTEL_REPLAY_MAX_QUEUE: Final = 1_000_000
DEFAULT_OTEL_REPLAY_SEMCONV_MODE: Final = "repair"
DEFAULT_OTEL_REPLAY_MAX_RECORD_BYTES: Final = 256 * MiB
DEFAULT_OTEL_REPLAY_MAX_BLOB_BYTES: Final = 256 * MiB
DEFAULT_OTEL_REPLAY_MAX_URL_BYTES: Final = 1 * GiB
DEFAULT_OTEL_REPLAY_URL_TIMEOUT: Final = 60.0
