"""Every environment variable the package reads, in one list: :data:`VARIABLES`.

Each :class:`~.parsing.Variable` has its name, kind, default, bound and a
line saying what it does; the settings page's table is made from the list
(:mod:`.readme`).  Standard variables (OpenTelemetry's, XDG's) that the
package reads itself are in the list too, marked ``standard``: they keep the
meaning their specification gives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from . import names
from .parsing import _MAX_BYTES, _MAX_DAYS, _MAX_MEGABYTES, _MAX_SECONDS, CONTENT_OFF, Variable

__all__ = ["BY_NAME", "VARIABLES"]


def _flag(name: str, default: bool | None, doc: str) -> Variable:
    return Variable(name, "flag", default, doc)


def _limit(name: str, kind: Literal["bytes", "seconds"], default: float, doc: str) -> Variable:
    most = _MAX_BYTES if kind == "bytes" else _MAX_SECONDS
    return Variable(name, kind, default, doc, least=0, most=most, above=True, outside="default")


def _standard(name: str, doc: str, *, secret: bool = False) -> Variable:
    return Variable(name, "standard", None, doc, standard=True, secret=secret)


#: Every variable the package reads, in the order of the settings page's table.
VARIABLES: Final[tuple[Variable, ...]] = (
    # Recording to a file.
    Variable(
        names.OTEL_REPLAY_FILE,
        "text",
        None,
        "The file the exporter writes (unset: `otel-replay.otlp`, `otel-replay.jsonl` for JSON).",
    ),
    Variable(
        names.OTEL_REPLAY_FORMAT,
        "choice",
        None,
        "The file's format (unset: `json` when the file's name says so, else `proto`).",
        choices=("proto", "json"),
    ),
    Variable(
        names.OTEL_REPLAY_COMPRESSION,
        "choice",
        None,
        "The file's compression (unset: none).",
        choices=("zstd", "none"),
    ),
    Variable(
        names.OTEL_REPLAY_MAX_INLINE_BYTES,
        "int",
        names.DEFAULT_OTEL_REPLAY_MAX_INLINE_BYTES,
        "Exact payloads larger than this go to the blob store beside the file.",
        least=0,
    ),
    Variable(
        names.OTEL_REPLAY_PAYLOAD_STORE,
        "text",
        None,
        "A payload store of your own (an fsspec URL or a directory) instead of the blob store.",
        secret=True,
    ),
    _flag(
        names.OTEL_REPLAY_FSYNC, False, "Make each export survive a machine crash (costs a sync)."
    ),
    Variable(
        names.OTEL_REPLAY_LOCK_TIMEOUT,
        "seconds",
        names.DEFAULT_OTEL_REPLAY_LOCK_TIMEOUT,
        "How long an export waits for another writer's lock before dropping its spans.",
        least=0,
        most=_MAX_SECONDS,
    ),
    Variable(
        names.OTEL_REPLAY_ROTATE_MB,
        "number",
        names.DEFAULT_OTEL_REPLAY_ROTATE_MB,
        "Rotate the file before it grows past this many megabytes (0: never).",
        least=0,
        most=_MAX_MEGABYTES,
    ),
    Variable(
        names.OTEL_REPLAY_ROTATE_MAX_BACKUPS,
        "int",
        names.DEFAULT_OTEL_REPLAY_ROTATE_MAX_BACKUPS,
        "Rotated files kept (0: all).",
        least=0,
    ),
    Variable(
        names.OTEL_REPLAY_ROTATE_MAX_DAYS,
        "number",
        names.DEFAULT_OTEL_REPLAY_ROTATE_MAX_DAYS,
        "Days rotated files are kept (0: any age).",
        least=0,
        most=_MAX_DAYS,
    ),
    _flag(names.OTEL_REPLAY_ROTATE_LOCALTIME, False, "Name rotated files by local time, not UTC."),
    Variable(
        names.OTEL_REPLAY_MAX_QUEUE,
        "int",
        names.DEFAULT_OTEL_REPLAY_MAX_QUEUE,
        "Spans the recording processor queues; past it spans are dropped and counted.",
        least=1,
    ),
    # Capture.
    _flag(
        names.OTEL_REPLAY_PROCESSOR,
        None,
        "Add the replay processor under `opentelemetry-instrument` (unset: when "
        "`OTEL_TRACES_EXPORTER` names `otel_replay_file`).",
    ),
    _flag(
        names.OTEL_REPLAY_FRAMEWORK_TOOLS,
        True,
        "Record agent frameworks' tool calls under `opentelemetry-instrument`.",
    ),
    _flag(
        names.OTEL_REPLAY_PYDANTIC_AI_SPANS,
        True,
        "Turn on pydantic-ai's own spans under `opentelemetry-instrument`.",
    ),
    _flag(
        names.OTEL_REPLAY_BASE64_BYTES,
        False,
        "Send `bytes` attribute values as base64 text (for backends that cannot store bytes).",
    ),
    _flag(names.OTEL_REPLAY_SEMCONV, True, "Add current GenAI semconv attributes to every span."),
    Variable(
        names.OTEL_REPLAY_SEMCONV_EXCLUDE,
        "list",
        (),
        "GenAI attribute families not to add.",
    ),
    Variable(
        names.OTEL_REPLAY_SEMCONV_MODE,
        "choice",
        names.DEFAULT_OTEL_REPLAY_SEMCONV_MODE,
        "`repair`: add what is missing and fix values known to be wrong; "
        "`missing`: only add what is missing.",
        choices=("repair", "missing"),
    ),
    Variable(
        names.OTEL_REPLAY_REDACT_KEYS,
        "list",
        (),
        "Regular expressions of keys whose values are hidden, beside the built-in ones.",
    ),
    Variable(
        names.OTEL_REPLAY_REDACT_PATTERNS,
        "list",
        (),
        "Regular expressions of values that are hidden, beside the built-in ones.",
    ),
    _flag(
        names.OTEL_REPLAY_REDACT_PERSONAL_DATA,
        False,
        "Also hide e-mail addresses and phone numbers.",
    ),
    Variable(
        names.OTEL_REPLAY_COMMIT,
        "text",
        None,
        "The commit recorded in the fingerprint (unset: asked of git).",
    ),
    _flag(names.OTEL_REPLAY_DIRTY, None, "Whether that commit's working tree had changes."),
    Variable(
        names.OTEL_REPLAY_FLAGS,
        "text",
        None,
        "Feature flags recorded in the fingerprint: a JSON object, or `a=1,b,c=off`.",
        secret=True,
    ),
    Variable(names.OTEL_REPLAY_SEED, "int", None, "The random seed recorded in the fingerprint."),
    # Reading.
    _limit(
        names.OTEL_REPLAY_MAX_RECORD_BYTES,
        "bytes",
        names.DEFAULT_OTEL_REPLAY_MAX_RECORD_BYTES,
        "The most a reader holds of one record, JSON line or document, decompressed.",
    ),
    _limit(
        names.OTEL_REPLAY_MAX_BLOB_BYTES,
        "bytes",
        names.DEFAULT_OTEL_REPLAY_MAX_BLOB_BYTES,
        "Blobs larger than this are refused rather than read.",
    ),
    _limit(
        names.OTEL_REPLAY_MAX_URL_BYTES,
        "bytes",
        names.DEFAULT_OTEL_REPLAY_MAX_URL_BYTES,
        "The most a URL's answer may hold.",
    ),
    _limit(
        names.OTEL_REPLAY_URL_TIMEOUT,
        "seconds",
        names.DEFAULT_OTEL_REPLAY_URL_TIMEOUT,
        "Seconds a URL's answer may take, from connecting to its last byte.",
    ),
    Variable(
        names.OTEL_REPLAY_HTTP_HEADERS,
        "text",
        None,
        "Headers sent with every URL read (`name=value,...`, as the OTLP exporters').",
        secret=True,
    ),
    Variable(
        names.OTEL_REPLAY_CONTENT_REFS,
        "list",
        (),
        "Stores whose content references a reader may follow (`BASE` or `BASE=WHERE`).",
        secret=True,
    ),
    Variable(
        names.OTEL_REPLAY_CLICKHOUSE_PASSWORD,
        "text",
        None,
        "The ClickHouse password (instead of one in the URL).",
        secret=True,
    ),
    # Replay.
    _flag(names.OTEL_REPLAY_ISOLATE, False, "The pytest plugin's `--replay-isolate` by default."),
    _flag(
        names.OTEL_REPLAY_ISOLATED,
        False,
        "Set by otel-replay in the child it runs in a network namespace.",
    ),
    # Standard variables read by the package itself.
    _standard(
        names.OTEL_SDK_DISABLED,
        "`true` (any case, as the SDK reads it): nothing is installed, patched or recorded.",
    ),
    _standard(
        names.OTEL_TRACES_EXPORTER,
        "Naming `otel_replay_file` adds the replay processor under `opentelemetry-instrument`.",
    ),
    _standard(
        names.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
        f"{' / '.join(f'`{v.upper()}`' for v in CONTENT_OFF)} (any case): "
        "message content is not captured.",
    ),
    _standard(
        names.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
        "The protocol `export --to` sends with (then `OTEL_EXPORTER_OTLP_PROTOCOL`).",
    ),
    _standard(
        names.OTEL_EXPORTER_OTLP_PROTOCOL,
        "The protocol `export --to` sends with when no traces one is set.",
    ),
    _standard(
        names.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
        "Where `export --to` sends, as it is.",
        secret=True,
    ),
    _standard(
        names.OTEL_EXPORTER_OTLP_ENDPOINT,
        "Where `export --to` sends, with `/v1/traces` added for HTTP.",
        secret=True,
    ),
    _standard(
        names.OTEL_EXPORTER_OTLP_TRACES_HEADERS,
        "Headers `export --to` sends (then `OTEL_EXPORTER_OTLP_HEADERS`).",
        secret=True,
    ),
    _standard(
        names.OTEL_EXPORTER_OTLP_HEADERS,
        "Headers `export --to` sends when no traces ones are set.",
        secret=True,
    ),
    _standard(
        names.XDG_CACHE_HOME,
        "Where the key sealing indexes and `ls` summaries lives (`otel-replay/key` in it; "
        "unset or relative: `~/.cache`).",
    ),
)

#: Each variable by name.
BY_NAME: Final[Mapping[str, Variable]] = {v.name: v for v in VARIABLES}
