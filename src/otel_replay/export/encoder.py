"""Spans to a serialized OTLP ``ExportTraceServiceRequest``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from .. import attributes as A
from ..blobs import BlobStore


def encode_request(
    spans: Sequence[ReadableSpan],
    *,
    max_inline: int | None = None,
    blobs: BlobStore | None = None,
    redact_key: Callable[[str], bool] | None = None,
) -> bytes:
    """Encode ``spans``; large exact payloads go to ``blobs``, secret-looking keys are hidden."""
    request = encode_spans(spans)
    if (max_inline is not None and blobs is not None) or redact_key is not None:
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    for kv in span.attributes:
                        key = kv.key
                        if (
                            redact_key is not None
                            and redact_key(key)
                            and not key.startswith(A.PREFIX)
                        ):
                            kv.value.Clear()
                            kv.value.string_value = A.REDACTED_VALUE
                        elif (
                            blobs is not None
                            and max_inline is not None
                            and key.startswith(A.BYTES)
                            and kv.value.WhichOneof("value") == "bytes_value"
                            and len(kv.value.bytes_value) > max_inline
                        ):
                            ref = blobs.put(kv.value.bytes_value)
                            kv.key = A.REF + key[len(A.BYTES) :]
                            kv.value.Clear()
                            kv.value.string_value = ref
    return request.SerializeToString()  # type: ignore[no-any-return]
