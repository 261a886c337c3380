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

__all__ = ["EmptyAnswer", "tempo_v2_trace", "unwrapped", "wraps_protobuf"]

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


def wraps_protobuf(source: str) -> bool:
    """Whether the protobuf answer of URL ``source`` is a Tempo v2 ``TraceByIDResponse``."""
    if not source.startswith(("http://", "https://")):
        return False
    return _TEMPO_V2_PATH in urllib.parse.urlsplit(source).path


def tempo_v2_trace(data: bytes) -> bytes:
    """The ``Trace`` (OTLP ``TracesData`` on the wire) of a Tempo ``TraceByIDResponse``.

    Parsed as a message whose field 1 is bytes: a nested message is those
    bytes on the wire, and the other fields (metrics, status) are not needed.
    """
    return bytes(_trace_by_id_response().FromString(data).trace)


@functools.cache
def _trace_by_id_response() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="otel_replay/tempo_answer.proto", package="otel_replay.tempo", syntax="proto3"
    )
    message = file.message_type.add(name="TraceByIDResponse")
    message.field.add(name="trace", number=1, type=proto.TYPE_BYTES, label=proto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("otel_replay.tempo.TraceByIDResponse")
    )
