"""The answers of trace backends that hold OTLP inside an envelope: undone here.

- Grafana Tempo, ``GET /api/traces/<id>``: JSON ``{"batches": [...]}`` (the
  resource spans under another name; ids in base64, as protobuf's own JSON
  mapping writes them), or protobuf ``tempopb.Trace``, whose field 1 is the
  resource spans as in OTLP's ``TracesData``.
- Tempo, ``GET /api/v2/traces/<id>``: JSON ``{"trace": {"resourceSpans":
  [...]}, "metrics": ..., "status": "PARTIAL", "message": ...}``, or protobuf
  ``tempopb.TraceByIDResponse``, whose field 1 is that ``Trace``.  A trace
  Tempo does not hold is answered ``{"trace": {}, ...}``.
- Jaeger v2, ``GET /api/v3/traces/<id>`` and ``/api/v3/traces?query...``:
  ``{"result": {"resourceSpans": [...]}}`` (OTLP/JSON, hex ids); its errors
  are ``{"error": {"httpCode": 404, "message": ...}}`` with that status.

Shapes as in the backends' own sources: Tempo's ``pkg/tempopb/tempo.proto``
and ``modules/frontend/combiner``, Jaeger's ``api_v3/query_service.proto``
and its query service's ``http_gateway.go``.
"""

from __future__ import annotations

import functools
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["EmptyAnswer", "partial", "tempo_v2_trace", "unwrapped", "wraps_protobuf"]

#: The top-level keys of OTLP/JSON data: a document holding one is no envelope.
_OTLP_KEYS: Final = ("resourceSpans", "resource_spans", "resourceLogs", "resource_logs")
#: Where Tempo's v2 trace-by-id answers (protobuf: a ``TraceByIDResponse``).
_TEMPO_V2_PATH: Final = "/api/v2/traces/"


class EmptyAnswer(ValueError):
    """A backend's answer that holds no trace: it does not have the one asked for."""


def unwrapped(doc: Any) -> Any:
    """The OTLP traces inside a trace backend's JSON answer; any other document as it is.

    Raises :class:`EmptyAnswer` for an envelope with no trace in it.
    """
    for _ in range(3):  # an envelope inside an envelope, at most this deep
        if not isinstance(doc, Mapping) or any(k in doc for k in _OTLP_KEYS):
            return doc
        if isinstance(doc.get("batches"), list):
            return {"resourceSpans": doc["batches"]}
        inner = doc.get("trace", doc.get("result"))
        if not isinstance(inner, Mapping):
            return doc
        if not inner:
            message = doc.get("message")
            said = f": {message}" if isinstance(message, str) and message else ""
            raise EmptyAnswer(f"the backend answered with no trace (not found?){said}")
        doc = inner
    return doc


def partial(doc: Any) -> str | None:
    """Why a backend's JSON answer holds only part of its trace (Tempo v2's ``"status":
    "PARTIAL"``: past its size limit, or pruned), None for a whole one."""
    if not isinstance(doc, Mapping) or doc.get("status") != "PARTIAL":
        return None
    message = doc.get("message")
    said = message if isinstance(message, str) and message else "no reason given"
    return f"the backend answered with part of the trace only ({said})"


def wraps_protobuf(source: str) -> bool:
    """Whether the protobuf answer of URL ``source`` is a Tempo v2 ``TraceByIDResponse``."""
    if not source.startswith(("http://", "https://")):
        return False
    return _TEMPO_V2_PATH in urllib.parse.urlsplit(source).path


def tempo_v2_trace(data: bytes) -> tuple[bytes, str | None]:
    """The ``Trace`` (OTLP ``TracesData`` on the wire) of a Tempo ``TraceByIDResponse``, and
    why it is partial (None: whole).

    Parsed as a message of the fields read (a nested message is bytes on the
    wire, an enum a varint): the trace (1), its status (3: 1 is PARTIAL) and
    message (4); the metrics (2) are not needed.
    """
    answer = _trace_by_id_response().FromString(data)
    if answer.status != 1:
        return bytes(answer.trace), None
    return bytes(answer.trace), partial({"status": "PARTIAL", "message": answer.message})


@functools.cache
def _trace_by_id_response() -> Any:
    # lazy: only a file of this kind needs the descriptors
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="otel_replay/tempo_answer.proto", package="otel_replay.tempo", syntax="proto3"
    )
    message = file.message_type.add(name="TraceByIDResponse")
    for name, number, kind in (
        ("trace", 1, proto.TYPE_BYTES),
        ("status", 3, proto.TYPE_INT32),
        ("message", 4, proto.TYPE_STRING),
    ):
        message.field.add(name=name, number=number, type=kind, label=proto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("otel_replay.tempo.TraceByIDResponse")
    )
