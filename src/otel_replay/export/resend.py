"""Re-send stored spans to any OTLP endpoint with the SDK's own exporters.

Stored records become SDK spans again (:mod:`.readable_spans`) and go out in
bounded batches through ``OTLPSpanExporter`` (http/protobuf or grpc), so what a
backend receives is exactly what the standard exporters send.  Secrets are
hidden first, as ``FileSpanExporter`` hides them in spans no processor saw,
our own bookkeeping and byte-exact payloads included: nothing read from a file
is trusted to be scrubbed, a file our processor wrote included (see
:mod:`otel_replay.export.convert`).  Whatever is not
given explicitly comes from the standard ``OTEL_EXPORTER_OTLP_TRACES_*`` /
``OTEL_EXPORTER_OTLP_*`` environment variables, read by the exporters
themselves where they do.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Final
from urllib.parse import unquote, urlsplit

from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .. import settings
from ..bytes_text import as_base64
from ..otlp.errors import FormatError
from ..otlp.records import SpanRecord
from ..sources.files import expand
from ..sources.reader import RecordReader
from .readable_spans import readable_spans
from .scrub import hidden_copy

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "PROTOCOLS",
    "ExportFailed",
    "ResendSummary",
    "bytes_as_base64",
    "otlp_exporter",
    "read_stored",
    "resend",
]

PROTOCOLS: Final = ("http/protobuf", "grpc")
#: Spans per request: the SDK's ``BatchSpanProcessor`` default.
DEFAULT_BATCH_SIZE: Final = 512
_DEFAULT_ENDPOINTS: Final = {
    "http/protobuf": "http://localhost:4318",
    "grpc": "http://localhost:4317",
}


class ExportFailed(Exception):
    """The endpoint did not take a batch; the message says which endpoint and why."""


@dataclasses.dataclass(frozen=True)
class ResendSummary:
    spans: int
    batches: int
    #: Where the spans went, as a message may name it (see :func:`shown`).
    endpoint: str
    #: Spans not sent because their secrets could not be hidden.
    left_out: int = 0


def shown(text: str, endpoint: str) -> str:
    """``text`` (a message naming ``endpoint``) with the endpoint's secrets hidden: its
    password wherever it stands (a gRPC error names the endpoint without its scheme), and
    what the redactor finds (an ``api_key`` in its query).  An endpoint may carry
    credentials; a message goes to a terminal or a CI log."""
    # The redactor (its patterns compiled) only for a message naming an endpoint.
    from ..redaction import PLACEHOLDER, redactor

    try:
        password = urlsplit(endpoint if "://" in endpoint else "//" + endpoint).password
    except ValueError:
        password = None
    for spelled in {password, unquote(password)} if password else ():
        text = text.replace(spelled, PLACEHOLDER)
    return redactor().text(text)


def resolve_protocol(protocol: str | None = None) -> str:
    """``protocol``, else ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``..._PROTOCOL``, else http."""
    env = settings.current()
    chosen = (
        protocol
        or env.value(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
        or env.value(OTEL_EXPORTER_OTLP_PROTOCOL)
        or "http/protobuf"
    ).strip()
    if chosen not in PROTOCOLS:
        raise ValueError(f"unsupported OTLP protocol {chosen!r} (use {' or '.join(PROTOCOLS)})")
    return chosen


def resolve_endpoint(protocol: str, endpoint: str | None = None) -> str:
    """The URL spans go to, as the specification resolves it.

    The signal-specific variable is used as is; the generic one gets
    ``/v1/traces`` appended for http/protobuf.
    """
    if endpoint:
        return endpoint
    env = settings.current()
    traces: str | None = env.value(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    if traces:
        return traces
    base = env.value(OTEL_EXPORTER_OTLP_ENDPOINT) or _DEFAULT_ENDPOINTS[protocol]
    return base if protocol == "grpc" else base.rstrip("/") + "/v1/traces"


def _env_headers() -> dict[str, str]:
    # lazy: only a request with headers needs it
    from opentelemetry.util.re import parse_env_headers

    env = settings.current()
    raw = (
        env.value(OTEL_EXPORTER_OTLP_TRACES_HEADERS) or env.value(OTEL_EXPORTER_OTLP_HEADERS) or ""
    )
    return dict(parse_env_headers(raw, liberal=True))


def otlp_exporter(
    endpoint: str | None = None,
    *,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    insecure: bool | None = None,
) -> tuple[SpanExporter, str]:
    """The standard OTLP span exporter for ``protocol``, and the endpoint it sends to.

    ``headers`` are added to those of the environment; ``insecure`` (grpc
    only) sends without TLS whatever the URL scheme says.  Raises
    ``ValueError`` for an unsupported protocol.
    """
    chosen = resolve_protocol(protocol)
    url = resolve_endpoint(chosen, endpoint)
    if chosen == "grpc":
        # lazy: only a resend needs an exporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        # The grpc exporter replaces the environment's headers with explicit
        # ones; the http exporter adds them.  Merge, so both behave alike.
        merged = {**_env_headers(), **headers} if headers else None
        return GrpcExporter(url, insecure=insecure, headers=merged, timeout=timeout), url
    # lazy: only a resend needs an exporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )

    return HttpExporter(url, headers=dict(headers) if headers else None, timeout=timeout), url


def read_stored(
    paths: Iterable[str | os.PathLike[str]],
    trace_ids: Iterable[str] | None = None,
    problems: list[FormatError] | None = None,
) -> Iterator[SpanRecord]:
    """Stored spans of every input ``paths`` names (see :class:`RecordReader`).

    Log records are passed over without complaint: a Collector dump directory
    holds a logs file beside the traces one.  Faults are appended to
    ``problems`` as the inputs are read; every good record before a fault is
    still yielded.
    """
    wanted = None if trace_ids is None else list(trace_ids)
    for name in expand(paths):
        reader = RecordReader(name, wanted)
        yield from (r for r in reader if isinstance(r, SpanRecord))
        if problems is not None:
            problems.extend(reader.problems)


class _ExporterLog(logging.Handler):
    """Keeps what the exporters log while they send: they report failures only there."""

    LOGGER: Final = "opentelemetry.exporter"

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> _ExporterLog:
        logger = logging.getLogger(self.LOGGER)
        self._propagate = logger.propagate
        logger.addHandler(self)
        logger.propagate = False  # the failure is raised once, not also logged
        return self

    def __exit__(self, *exc: object) -> None:
        logger = logging.getLogger(self.LOGGER)
        logger.removeHandler(self)
        logger.propagate = self._propagate

    def reason(self) -> str:
        # A connection error is only named in the "retrying" warnings (the final
        # error just says retrying gave up); an HTTP status or gRPC code is
        # named in the final error.
        for record in self.records:
            for arg in record.args if isinstance(record.args, tuple) else ():
                if isinstance(arg, BaseException):
                    return _innermost(arg)
        errors = [r for r in self.records if r.levelno >= logging.ERROR] or self.records
        return errors[0].getMessage() if errors else "the exporter gave no reason"


def _innermost(error: BaseException) -> str:
    """The root cause of a wrapped error (requests wraps urllib3 wraps the socket's)."""
    seen = {id(error)}
    while True:
        inner = getattr(error, "reason", None)
        if not isinstance(inner, BaseException) and error.args:
            inner = error.args[0]
        if not isinstance(inner, BaseException) or id(inner) in seen:
            return str(error)
        seen.add(id(inner))
        error = inner


def _unreachable(endpoint: str) -> str:
    """Why ``endpoint`` takes no connection, or "" when it does.

    When retrying runs out of time the exporters log only that; a failed
    connect says what the user needs to know.
    """
    try:
        url = urlsplit(endpoint if "://" in endpoint else "//" + endpoint)
        host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        return ""
    if not host:
        return ""
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError as exc:
        return exc.strerror or str(exc)
    return ""


def bytes_as_base64(records: Iterable[SpanRecord]) -> Iterator[SpanRecord]:
    """Records whose ``bytes`` attribute values are base64 strings instead.

    For backends that cannot store bytes: Arize Phoenix drops a whole span that
    carries one.  Reading such a backend back restores ``otel_replay.bytes.*``
    values, so byte-exact payloads still verify against their digests.
    """
    for r in records:
        yield dataclasses.replace(
            r,
            attributes=as_base64(r.attributes),
            events=[dataclasses.replace(e, attributes=as_base64(e.attributes)) for e in r.events],
        )


def resend(
    records: Iterable[SpanRecord],
    exporter: SpanExporter,
    *,
    endpoint: str = "",
    batch_size: int = DEFAULT_BATCH_SIZE,
    base64_bytes: bool = False,
) -> ResendSummary:
    """Send ``records`` through ``exporter`` in batches of at most ``batch_size`` spans.

    Records are read lazily: at most one batch is held in memory.  With
    ``base64_bytes`` bytes values go as base64 strings (see
    :func:`bytes_as_base64`).  Raises :class:`ExportFailed` at the first batch
    the endpoint does not take (after the exporter's own retries); the
    exporter is shut down either way.  Secrets are hidden before a span is sent
    (see the module docstring); a span whose secrets cannot be hidden is not sent,
    and counted in ``left_out``.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    left_out = 0

    def scrubbed(spans: Iterable[ReadableSpan]) -> Iterator[ReadableSpan]:
        nonlocal left_out
        for span in spans:
            try:
                yield hidden_copy(span, stored=True)
            except Exception:  # a span whose secrets cannot be hidden is not sent
                left_out += 1

    spans = scrubbed(readable_spans(bytes_as_base64(records) if base64_bytes else records))
    sent = batches = 0
    try:
        while batch := list(islice(spans, batch_size)):
            with _ExporterLog() as log:
                result = exporter.export(batch)
            if result is not SpanExportResult.SUCCESS:
                reason = log.reason()
                unreachable = _unreachable(endpoint)
                if unreachable and unreachable not in reason:
                    reason = f"{reason} ({unreachable})"
                raise ExportFailed(
                    f"{shown(endpoint, endpoint) or type(exporter).__name__}: export failed "
                    f"at batch {batches + 1} ({sent} spans sent before): " + shown(reason, endpoint)
                )
            sent += len(batch)
            batches += 1
    finally:
        exporter.shutdown()
    return ResendSummary(sent, batches, shown(endpoint, endpoint), left_out)
