"""Every environment variable otel-replay reads: one list, one way to read each kind.

:data:`VARIABLES` lists them all, each with its type, default, bound and a
line saying what it does; the README's table is made from it
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

This module imports nothing of the package: every other module may use it.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import sys
import threading
from collections.abc import Hashable, Iterator, Mapping
from typing import Any, Final, Literal

logger = logging.getLogger("otel_replay")

__all__ = [
    "FALSE",
    "TRUE",
    "VARIABLES",
    "Once",
    "Settings",
    "Variable",
    "current",
    "markdown",
    "own_variables",
    "parse_flag",
    "warn_once",
]

# --- saying a thing once ----------------------------------------------------------


class Once:
    """Keys already said: each is logged the first time only.

    ``log`` is the logger it says them with; ``most`` bounds how many keys
    are remembered (and so said) when the keys come from input, such as
    attribute names.  No lock: a traced app's threads may call it, and must
    never wait on it (nor find it held in a forked child);
    ``dict.setdefault`` decides which caller is first.
    """

    def __init__(self, log: logging.Logger = logger, most: int | None = None) -> None:
        self._said: dict[Hashable, object] = {}
        self._log = log
        self._most = most

    def first(self, key: Hashable) -> bool:
        """Whether ``key`` is new (and is now remembered)."""
        if key in self._said or (self._most is not None and len(self._said) >= self._most):
            return False
        token = object()
        return self._said.setdefault(key, token) is token

    def warn(self, key: Hashable, message: str, *args: Any) -> bool:
        """Log ``message % args`` as a warning the first time ``key`` is seen; whether it did."""
        if not self.first(key):
            return False
        self._log.warning(message, *args)
        return True


_ONCE = Once()


def warn_once(key: Hashable, message: str, *args: Any) -> bool:
    """Log a warning once per ``key`` in this process: trouble is said, never flooded."""
    return _ONCE.warn(key, message, *args)


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

#: What turns a flag on (any case, spaces around ignored).
TRUE: Final = ("1", "true", "yes", "on")
#: What turns a flag off (any case, spaces around ignored).
FALSE: Final = ("0", "false", "no", "off")
#: Values of :data:`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` that turn
#: content off (any case); any other value, or none, keeps it on.
CONTENT_OFF: Final = ("no_content", "false", "0", "none", "off")

#: The largest size in bytes a bound accepts (a file offset's range).
_MAX_BYTES: Final = (1 << 63) - 1
#: The longest wait a thread's timer accepts.
_MAX_SECONDS: Final = float(threading.TIMEOUT_MAX)
#: A rotation size whose bytes still fit a file offset.
_MAX_MEGABYTES: Final = float(_MAX_BYTES // MiB)
#: A thousand years: older dates than now minus this do not exist.
_MAX_DAYS: Final = 365_000.0

Kind = Literal["flag", "int", "number", "bytes", "seconds", "text", "list", "choice", "standard"]


def parse_flag(name: str, raw: str | None, default: bool | None) -> bool | None:
    """``raw`` as a flag by the one rule (:data:`TRUE`, :data:`FALSE`); ``default`` when
    unset, empty or unknown (an unknown value is said once)."""
    if raw is None or not raw.strip():
        return default
    text = raw.strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    warn_once(
        (name, raw),
        "otel-replay: %s=%r is not one of %s (on) or %s (off); using %s",
        name,
        raw,
        ", ".join(TRUE),
        ", ".join(FALSE),
        _shown(default),
    )
    return default


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclasses.dataclass(frozen=True)
class Variable:
    """One environment variable: its name, how its text is read, its default and bound."""

    name: str
    kind: Kind
    default: Any
    doc: str
    #: Numbers: the least and most accepted (None: no bound).
    least: float | None = None
    most: float | None = None
    #: Numbers: the least is excluded (``> least``).
    above: bool = False
    #: Numbers out of bound: brought to it (``clamp``) or replaced by the default.
    outside: Literal["clamp", "default"] = "clamp"
    #: Choices: the values accepted (lower case).
    choices: tuple[str, ...] = ()
    #: Set by OpenTelemetry's or another specification, read with its meaning.
    standard: bool = False
    #: Its value is a secret: never shown.
    secret: bool = False

    @property
    def field(self) -> str:
        """The :class:`Settings` field holding it."""
        return self.name.removeprefix("OTEL_REPLAY_").lower()

    def parse(self, raw: str | None) -> Any:
        """The value ``raw`` (the variable's text, None when unset) stands for; never raises."""
        kind = self.kind
        if kind == "text" or kind == "standard":
            return raw or None
        if kind == "list":
            return tuple(p.strip() for p in (raw or "").split(",") if p.strip())
        if kind == "flag":
            return parse_flag(self.name, raw, self.default)
        if raw is None or not raw.strip():
            return self.default
        if kind == "choice":
            text = raw.strip().lower()
            if text in self.choices:
                return text
            return self._refuse(raw, f"not one of {', '.join(self.choices)}")
        return self._number(raw)

    def _number(self, raw: str) -> Any:
        value: float
        try:
            value = int(raw) if self.kind == "int" else float(raw)
        except (ValueError, OverflowError):
            return self._refuse(raw, "not an integer" if self.kind == "int" else "not a number")
        if isinstance(value, float) and not math.isfinite(value):  # an int is always finite
            return self._refuse(raw, "not a finite number")
        low, high = self.least, self.most
        below = low is not None and (value <= low if self.above else value < low)
        if not below and (high is None or value <= high):
            return value
        if self.outside == "default":
            return self._refuse(raw, f"not {self.bound()}")
        kept = low if below else high
        warn_once(
            (self.name, raw),
            "otel-replay: %s=%r is not %s; using %s",
            self.name,
            raw,
            self.bound(),
            _shown(kept),
        )
        return int(kept) if self.kind == "int" and kept is not None else kept

    def _refuse(self, raw: str, why: str) -> Any:
        warn_once(
            (self.name, raw),
            "otel-replay: %s=%r is %s; using %s",
            self.name,
            raw,
            why,
            _shown(self.default),
        )
        return self.default

    def bound(self) -> str:
        """The bound in words (``> 0``, ``≥ 1``, ``≥ 0, ≤ 365000``); empty when there is none.

        The largest sizes and waits the system takes are not shown: no one sets them.
        """
        parts = []
        if self.least is not None:
            parts.append(f"{'>' if self.above else '≥'} {_shown(self.least)}")
        if self.most is not None and self.most not in (_MAX_BYTES, _MAX_SECONDS, _MAX_MEGABYTES):
            parts.append(f"≤ {_shown(self.most)}")
        return ", ".join(parts)

    def type_text(self) -> str:
        """The type in words, for the table."""
        if self.kind == "choice":
            return " / ".join(f"`{c}`" for c in self.choices)
        return {
            "flag": "flag",
            "int": "integer",
            "number": "number",
            "bytes": "bytes",
            "seconds": "seconds",
            "text": "text",
            "list": "comma-separated list",
            "standard": "text",
        }[self.kind]

    def default_text(self) -> str:
        """The default in words, for the table."""
        value = self.default
        if value is None or value == ():
            return "unset"
        if self.kind == "bytes" or (self.kind == "int" and self.name.endswith("_BYTES")):
            return size_text(int(value))
        if self.kind == "flag":
            return _shown(value)
        return f"`{_shown(value)}`" if self.kind == "choice" else _shown(value)


def _flag(name: str, default: bool | None, doc: str) -> Variable:
    return Variable(name, "flag", default, doc)


def _limit(name: str, kind: Literal["bytes", "seconds"], default: float, doc: str) -> Variable:
    most = _MAX_BYTES if kind == "bytes" else _MAX_SECONDS
    return Variable(name, kind, default, doc, least=0, most=most, above=True, outside="default")


#: Every variable the package reads, in the order of the README's table.
VARIABLES: Final[tuple[Variable, ...]] = (
    # Recording to a file.
    Variable(
        OTEL_REPLAY_FILE,
        "text",
        None,
        "The file the exporter writes (unset: `otel-replay.otlp`, `otel-replay.jsonl` for JSON).",
    ),
    Variable(
        OTEL_REPLAY_FORMAT,
        "choice",
        None,
        "The file's format (unset: `json` when the file's name says so, else `proto`).",
        choices=("proto", "json"),
    ),
    Variable(
        OTEL_REPLAY_COMPRESSION,
        "choice",
        None,
        "The file's compression (unset: none).",
        choices=("zstd", "none"),
    ),
    Variable(
        OTEL_REPLAY_MAX_INLINE_BYTES,
        "int",
        DEFAULT_OTEL_REPLAY_MAX_INLINE_BYTES,
        "Exact payloads larger than this go to the blob store beside the file.",
        least=0,
    ),
    Variable(
        OTEL_REPLAY_PAYLOAD_STORE,
        "text",
        None,
        "A payload store of your own (an fsspec URL or a directory) instead of the blob store.",
        secret=True,
    ),
    _flag(OTEL_REPLAY_FSYNC, False, "Make each export survive a machine crash (costs a sync)."),
    Variable(
        OTEL_REPLAY_LOCK_TIMEOUT,
        "seconds",
        DEFAULT_OTEL_REPLAY_LOCK_TIMEOUT,
        "How long an export waits for another writer's lock before dropping its spans.",
        least=0,
        most=_MAX_SECONDS,
    ),
    Variable(
        OTEL_REPLAY_ROTATE_MB,
        "number",
        DEFAULT_OTEL_REPLAY_ROTATE_MB,
        "Rotate the file before it grows past this many megabytes (0: never).",
        least=0,
        most=_MAX_MEGABYTES,
    ),
    Variable(
        OTEL_REPLAY_ROTATE_MAX_BACKUPS,
        "int",
        DEFAULT_OTEL_REPLAY_ROTATE_MAX_BACKUPS,
        "Rotated files kept (0: all).",
        least=0,
    ),
    Variable(
        OTEL_REPLAY_ROTATE_MAX_DAYS,
        "number",
        DEFAULT_OTEL_REPLAY_ROTATE_MAX_DAYS,
        "Days rotated files are kept (0: any age).",
        least=0,
        most=_MAX_DAYS,
    ),
    _flag(OTEL_REPLAY_ROTATE_LOCALTIME, False, "Name rotated files by local time, not UTC."),
    Variable(
        OTEL_REPLAY_MAX_QUEUE,
        "int",
        DEFAULT_OTEL_REPLAY_MAX_QUEUE,
        "Spans the recording processor queues; past it spans are dropped and counted.",
        least=1,
    ),
    # Capture.
    _flag(
        OTEL_REPLAY_PROCESSOR,
        None,
        "Add the replay processor under `opentelemetry-instrument` (unset: when "
        "`OTEL_TRACES_EXPORTER` names `otel_replay_file`).",
    ),
    _flag(
        OTEL_REPLAY_FRAMEWORK_TOOLS,
        True,
        "Record agent frameworks' tool calls under `opentelemetry-instrument`.",
    ),
    _flag(
        OTEL_REPLAY_PYDANTIC_AI_SPANS,
        True,
        "Turn on pydantic-ai's own spans under `opentelemetry-instrument`.",
    ),
    _flag(
        OTEL_REPLAY_BASE64_BYTES,
        False,
        "Send `bytes` attribute values as base64 text (for backends that cannot store bytes).",
    ),
    _flag(OTEL_REPLAY_SEMCONV, True, "Add current GenAI semconv attributes to every span."),
    Variable(
        OTEL_REPLAY_SEMCONV_EXCLUDE,
        "list",
        (),
        "GenAI attribute families not to add.",
    ),
    Variable(
        OTEL_REPLAY_SEMCONV_MODE,
        "choice",
        DEFAULT_OTEL_REPLAY_SEMCONV_MODE,
        "`repair`: add what is missing and fix values known to be wrong; "
        "`missing`: only add what is missing.",
        choices=("repair", "missing"),
    ),
    Variable(
        OTEL_REPLAY_REDACT_KEYS,
        "list",
        (),
        "Regular expressions of keys whose values are hidden, beside the built-in ones.",
    ),
    Variable(
        OTEL_REPLAY_REDACT_PATTERNS,
        "list",
        (),
        "Regular expressions of values that are hidden, beside the built-in ones.",
    ),
    _flag(OTEL_REPLAY_REDACT_PERSONAL_DATA, False, "Also hide e-mail addresses and phone numbers."),
    Variable(
        OTEL_REPLAY_COMMIT,
        "text",
        None,
        "The commit recorded in the fingerprint (unset: asked of git).",
    ),
    _flag(OTEL_REPLAY_DIRTY, None, "Whether that commit's working tree had changes."),
    Variable(
        OTEL_REPLAY_FLAGS,
        "text",
        None,
        "Feature flags recorded in the fingerprint: a JSON object, or `a=1,b,c=off`.",
        secret=True,
    ),
    Variable(OTEL_REPLAY_SEED, "int", None, "The random seed recorded in the fingerprint."),
    # Reading.
    _limit(
        OTEL_REPLAY_MAX_RECORD_BYTES,
        "bytes",
        DEFAULT_OTEL_REPLAY_MAX_RECORD_BYTES,
        "The most a reader holds of one record, JSON line or document, decompressed.",
    ),
    _limit(
        OTEL_REPLAY_MAX_BLOB_BYTES,
        "bytes",
        DEFAULT_OTEL_REPLAY_MAX_BLOB_BYTES,
        "Blobs larger than this are refused rather than read.",
    ),
    _limit(
        OTEL_REPLAY_MAX_URL_BYTES,
        "bytes",
        DEFAULT_OTEL_REPLAY_MAX_URL_BYTES,
        "The most a URL's answer may hold.",
    ),
    _limit(
        OTEL_REPLAY_URL_TIMEOUT,
        "seconds",
        DEFAULT_OTEL_REPLAY_URL_TIMEOUT,
        "Seconds a URL's answer may take, from connecting to its last byte.",
    ),
    Variable(
        OTEL_REPLAY_HTTP_HEADERS,
        "text",
        None,
        "Headers sent with every URL read (`name=value,...`, as the OTLP exporters').",
        secret=True,
    ),
    Variable(
        OTEL_REPLAY_CONTENT_REFS,
        "list",
        (),
        "Stores whose content references a reader may follow (`BASE` or `BASE=WHERE`).",
        secret=True,
    ),
    Variable(
        OTEL_REPLAY_CLICKHOUSE_PASSWORD,
        "text",
        None,
        "The ClickHouse password (instead of one in the URL).",
        secret=True,
    ),
    # Replay.
    _flag(OTEL_REPLAY_ISOLATE, False, "The pytest plugin's `--replay-isolate` by default."),
    _flag(
        OTEL_REPLAY_ISOLATED,
        False,
        "Set by otel-replay in the child it runs in a network namespace.",
    ),
    # Standard variables read by the package itself.
    Variable(
        OTEL_SDK_DISABLED,
        "standard",
        None,
        "`true` (any case, as the SDK reads it): nothing is installed, patched or recorded.",
        standard=True,
    ),
    Variable(
        OTEL_TRACES_EXPORTER,
        "standard",
        None,
        "Naming `otel_replay_file` adds the replay processor under `opentelemetry-instrument`.",
        standard=True,
    ),
    Variable(
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
        "standard",
        None,
        f"{' / '.join(f'`{v.upper()}`' for v in CONTENT_OFF)} (any case): "
        "message content is not captured.",
        standard=True,
    ),
    Variable(
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
        "standard",
        None,
        "The protocol `export --to` sends with (then `OTEL_EXPORTER_OTLP_PROTOCOL`).",
        standard=True,
    ),
    Variable(
        OTEL_EXPORTER_OTLP_PROTOCOL,
        "standard",
        None,
        "The protocol `export --to` sends with when no traces one is set.",
        standard=True,
    ),
    Variable(
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
        "standard",
        None,
        "Where `export --to` sends, as it is.",
        standard=True,
        secret=True,
    ),
    Variable(
        OTEL_EXPORTER_OTLP_ENDPOINT,
        "standard",
        None,
        "Where `export --to` sends, with `/v1/traces` added for HTTP.",
        standard=True,
        secret=True,
    ),
    Variable(
        OTEL_EXPORTER_OTLP_TRACES_HEADERS,
        "standard",
        None,
        "Headers `export --to` sends (then `OTEL_EXPORTER_OTLP_HEADERS`).",
        standard=True,
        secret=True,
    ),
    Variable(
        OTEL_EXPORTER_OTLP_HEADERS,
        "standard",
        None,
        "Headers `export --to` sends when no traces ones are set.",
        standard=True,
        secret=True,
    ),
    Variable(
        XDG_CACHE_HOME,
        "standard",
        None,
        "Where the key sealing indexes and `ls` summaries lives (`otel-replay/key` in it; "
        "unset or relative: `~/.cache`).",
        standard=True,
    ),
)

#: Each variable by name.
BY_NAME: Final[Mapping[str, Variable]] = {v.name: v for v in VARIABLES}
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


# --- the README's table -----------------------------------------------------------


def markdown() -> str:
    """The table of :data:`VARIABLES` in Markdown, as the README holds it."""
    rows = [
        "| Variable | Type | Default | Bound | What it does |",
        "|---|---|---|---|---|",
    ]
    for v in VARIABLES:
        name = f"`{v.name}`" + (" (standard)" if v.standard else "")
        default = "—" if v.standard else v.default_text()
        rows.append(f"| {name} | {v.type_text()} | {default} | {v.bound() or '—'} | {v.doc} |")
    flags = (
        f"Flags are on with {', '.join(f'`{t}`' for t in TRUE)} and off with "
        f"{', '.join(f'`{f}`' for f in FALSE)} (any case); unset or empty keeps the "
        "default, and any other value is said once and keeps the default.  A number "
        "that does not parse or is out of bound is said once, then brought within the "
        "bound (or, for the reading limits, replaced by the default)."
    )
    return "\n".join([*rows, "", flags]) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m otel_replay.settings --markdown``: print the README's block."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["--markdown"]:
        print("usage: python -m otel_replay.settings --markdown", file=sys.stderr)
        return 2
    print("<!-- settings:start -->")
    print(markdown(), end="")
    print("<!-- settings:end -->")
    return 0


if __name__ == "__main__":
    sys.exit(main())
