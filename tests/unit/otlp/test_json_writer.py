"""The OTLP/JSON writer: the bytes the Collector's pdata JSONMarshaler writes.

The oracle is JSON the Collector wrote (tests/data/collector, see its README):
each line is read into a protobuf request and written again, and the bytes
must be the same.  Inputs pdata did not write are compared after a round trip
through our reader instead.  The SDK-span front end must write exactly what
the protobuf front end writes for the message our protobuf encoder makes.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.export.scrub import hidden_copy
from otel_replay.otlp.json_reader import OtherSignalError, request_from_json
from otel_replay.otlp.json_writer import encode_json_request, format_double, request_to_json
from otel_replay.otlp.proto_writer import encode_request
from otel_replay.otlp.sniff import iter_varint
from otel_replay.payload.blobs import BlobStore
from otel_replay.sources.reader import RecordReader
from tests.fixtures.data import COLLECTOR, DATA, THIRDPARTY_FORMATS, found


def rewrite(line: bytes, legacy: bool = False) -> bytes:
    return request_to_json(request_from_json(json.loads(line)), legacy=legacy)


def first_difference(a: bytes, b: bytes) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at byte {i}: ours {a[i - 60 : i + 60]!r} vs theirs {b[i - 60 : i + 60]!r}"


# --- byte-compatibility with what the Collector wrote ------------------------------------


def collector_lines() -> list[tuple[str, bytes]]:
    lines = [
        (f"file-exporter.md line {n}", line)
        for n, line in enumerate(
            (COLLECTOR / "file-exporter-md-traces-example.jsonl").read_bytes().splitlines(), 1
        )
    ]
    doc = yaml.safe_load((COLLECTOR / "otlpjsonconnector-input-trace.yaml").read_text())
    body = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["body"]["stringValue"]
    lines.append(("otlpjsonconnector log body", body.encode()))
    return lines


@pytest.mark.parametrize(("name", "line"), collector_lines(), ids=lambda v: str(v)[:30])
def test_collector_json_is_rewritten_byte_for_byte(name: str, line: bytes) -> None:
    # These lines come from pdata releases that marshaled through gogo/jsonpb.
    ours = rewrite(line, legacy=True)
    assert ours == line, first_difference(ours, line)


@pytest.mark.parametrize(("name", "line"), collector_lines(), ids=lambda v: str(v)[:30])
def test_current_pdata_leaves_empty_ids_out(name: str, line: bytes) -> None:
    # The one difference between the two pdata marshalers for these lines:
    # current pdata omits an empty id, as every other zero value.
    expected = line
    for field in (b'"traceId":"",', b'"spanId":"",', b'"parentSpanId":"",'):
        expected = expected.replace(field, b"")
    expected = expected.replace(b',"spanId":""', b"")  # a link's last id before "}"
    assert b'Id":""' not in expected
    assert rewrite(line) == expected


def test_the_collectors_metrics_dump_is_not_ours_to_write() -> None:
    # The one fileexporter `format: json` dump in the test data holds metrics,
    # written before pdata wrote enums as numbers: no traces or logs writer can
    # produce those bytes.  Reading it says so instead of writing something else.
    path = COLLECTOR / "filereceiver-metrics.json"
    first = path.read_bytes().splitlines()[0]
    assert b'"aggregationTemporality":"AGGREGATION_TEMPORALITY_CUMULATIVE"' in first
    with pytest.raises(OtherSignalError, match="metrics"):
        request_from_json(json.loads(first))


# --- JSON pdata did not write: the same records after a round trip ------------------------


def records(path: Path) -> list[Any]:
    reader = RecordReader(path)
    out = [dataclasses.replace(r, source="") for r in reader]
    assert not reader.problems, reader.problems
    return out


def not_pdata_json() -> list[Path]:
    return [
        COLLECTOR / "proto-examples-trace.json",
        COLLECTOR / "proto-examples-logs.json",
        COLLECTOR / "golden-traces-roundtrip.json",
        COLLECTOR / "countconnector-traces-input.json",
        *found(THIRDPARTY_FORMATS, "*/*/sync/traces.otlp.jsonl"),
        *found(DATA / "genai_logs", "*/*.otlp.jsonl"),
    ]


@pytest.mark.parametrize("path", not_pdata_json(), ids=lambda p: "/".join(p.parts[-3:]))
def test_other_json_reads_the_same_after_rewriting(path: Path, tmp_path: Path) -> None:
    text = path.read_bytes()
    docs = (
        [json.loads(line) for line in text.splitlines() if line.strip()]
        if path.suffix == ".jsonl"
        else [json.loads(text)]
    )
    out = tmp_path / "rewritten.jsonl"
    out.write_bytes(b"".join(request_to_json(request_from_json(d)) + b"\n" for d in docs))
    before, after = records(path), records(out)
    assert before and after == before


@pytest.mark.parametrize(
    "path",
    found(THIRDPARTY_FORMATS, "*/*/sync/traces.otlp.ldpb")
    + found(DATA / "genai_logs", "*/logs.otlp.ldpb"),
    ids=lambda p: "/".join(p.parts[-4:-1]),
)
def test_protobuf_requests_write_what_their_json_twin_holds(path: Path, tmp_path: Path) -> None:
    # The corpus wrote each request twice: protobuf (.ldpb) and JSON (.jsonl, by
    # protobuf's json_format with ids made hex).  Ours from the protobuf must read
    # back to the same records as theirs.
    out = tmp_path / "ours.jsonl"
    with open(path, "rb") as f:
        bodies = [body for _, body in iter_varint(f, str(path))]
    cls = ExportLogsServiceRequest if path.name.startswith("logs") else ExportTraceServiceRequest
    out.write_bytes(b"".join(request_to_json(cls.FromString(b)) + b"\n" for b in bodies))
    assert records(out) == records(path.with_suffix(".jsonl"))


# --- the SDK-span front end -----------------------------------------------------------------


def hexify(node: Any) -> Any:
    """json_format writes ids as base64; OTLP/JSON as hex."""
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex()
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str)
            else hexify(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [hexify(v) for v in node]
    return node


def check_against_protobuf(spans: list[ReadableSpan], **kwargs: Any) -> bytes:
    ours = encode_json_request(spans, **kwargs)
    message = ExportTraceServiceRequest.FromString(encode_request(spans, **kwargs))
    # Byte for byte what the message-walking writer makes of our protobuf bytes...
    assert ours == request_to_json(message), first_difference(ours, request_to_json(message))
    # ...and, as data, protobuf's own JSON mapping of that message.
    canonical = hexify(json_format.MessageToDict(message, use_integers_for_enums=True))
    assert json.loads(ours, parse_int=float) == canonical  # 1e16 is written 10000000000000000
    # ...and read back, the same message (compared as bytes: NaN != NaN; -0 keeps its sign).
    # JSON has one NaN: a NaN's sign and payload bits cannot come back.
    doc = json.loads(ours, parse_int=lambda t: -0.0 if t == "-0" else int(t))
    if b'"NaN"' not in ours:
        assert request_from_json(doc).SerializeToString() == message.SerializeToString()
    return ours


def test_varied_sdk_spans(varied_spans: list[ReadableSpan]) -> None:
    ours = check_against_protobuf(varied_spans)
    assert ours.startswith(b'{"resourceSpans":[{"resource":{"attributes":[')
    assert b"\n" not in ours
    text = ours.decode()
    # The shapes the Collector writes:
    assert '"intValue":"9223372036854775807"' in text
    assert '"doubleValue":1.5' in text and '"doubleValue":"Infinity"' in text
    assert '"doubleValue":-0}' in text
    assert '"boolValue":false' in text
    assert '"bytesValue":"AP/+bm9uLXV0Zjg="' in text
    assert '"arrayValue":{}' in text and '"kvlistValue":{}' in text
    assert '"kind":2' in text and '"flags":768' in text and '"flags":256' in text
    assert '"traceState":"k=v"' in text  # the SDK dropped the invalid vendor=a=b
    assert '"status":{}' in text and '"status":{"message":' in text
    assert '"schemaUrl":"https://s/1"' in text


def test_each_span_alone_and_in_reverse(varied_spans: list[ReadableSpan]) -> None:
    for span in varied_spans:
        check_against_protobuf([span])
    check_against_protobuf(varied_spans[::-1])


def test_redaction_and_large_payloads_as_the_protobuf_encoder(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("s") as span:
        span.set_attribute("otel_replay.bytes.tool.result", b"\x01" * 5000)
        span.set_attribute("api_key", "sk-live")
        span.add_event("e", {"otel_replay.bytes.x": b"\x02" * 5000, "password": "p"})
    spans = list(exporter.get_finished_spans())
    blobs = BlobStore(tmp_path / "t.otlp")
    spans = [hidden_copy(s) for s in spans]  # what FileSpanExporter encodes
    text = check_against_protobuf(spans, max_inline=100, blobs=blobs).decode()
    assert '"key":"otel_replay.ref.tool.result","value":{"stringValue":"sha256:' in text
    assert '"key":"otel_replay.ref.x"' in text
    assert "sk-live" not in text and '"stringValue":"[REDACTED]"' in text
    assert len(list(blobs.root.iterdir())) == 2


def test_unencodable_attributes_are_skipped_as_the_protobuf_encoder_skips_them() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("s") as span:
        span.set_attribute("ok", "fine")
        span.set_attribute("surrogate", "a\udc80b")
        span.set_attribute("nested", ["x", "\ud800"])
        span.set_attribute("huge", 2**64)
        span.set_attribute("after", 1)
    spans = list(exporter.get_finished_spans())
    text = check_against_protobuf(spans).decode()
    assert '"key":"ok"' in text and '"key":"after"' in text
    assert "surrogate" not in text and "nested" not in text and "huge" not in text


def test_a_span_name_that_cannot_be_written_raises_like_the_protobuf_encoder() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("bad \udc80"):
        pass
    spans = list(exporter.get_finished_spans())
    with pytest.raises(UnicodeEncodeError):
        encode_request(spans)
    with pytest.raises(UnicodeEncodeError):
        encode_json_request(spans)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.one_of(
            st.text(),
            st.booleans(),
            st.integers(min_value=-(2**63), max_value=2**63 - 1),
            st.floats(),
            st.binary(),
            st.lists(st.one_of(st.text(), st.integers(-5, 5), st.floats(), st.none()), max_size=4),
        ),
        max_size=6,
    )
)
def test_property_random_attributes(attributes: dict[str, Any]) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("p") as span:
        span.set_attributes(attributes)
    check_against_protobuf(list(exporter.get_finished_spans()))


# --- scalars --------------------------------------------------------------------------------

# What Go's strconv.AppendFloat(buf, v, 'f' or 'e', -1, 64) gives, with
# encoding/json's cut-offs (1e-6, 1e21) and its "e-07" -> "e-7" clean-up.
GO_DOUBLES = [
    (0.0, "0"),
    (-0.0, "-0"),
    (1.0, "1"),
    (-2.0, "-2"),
    (1.5, "1.5"),
    (0.1, "0.1"),
    (0.7, "0.7"),
    (100.0, "100"),
    (123456.789, "123456.789"),
    (1e-6, "0.000001"),
    (1.234e-5, "0.00001234"),
    (0.0001, "0.0001"),
    (1e-7, "1e-7"),
    (2.5e-8, "2.5e-8"),
    (-3.25e-9, "-3.25e-9"),
    (1e-10, "1e-10"),
    (5e-324, "5e-324"),
    (1e16, "10000000000000000"),
    (123456789012345680.0, "123456789012345680"),
    (1e20, "100000000000000000000"),
    (9.999999999999999e20, "999999999999999900000"),
    (1e21, "1e+21"),
    (1.5e21, "1.5e+21"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (math.nan, '"NaN"'),
    (math.inf, '"Infinity"'),
    (-math.inf, '"-Infinity"'),
]


@pytest.mark.parametrize(("value", "expected"), GO_DOUBLES, ids=str)
def test_doubles_as_go_writes_them(value: float, expected: str) -> None:
    assert format_double(value) == expected


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_double_reads_back_to_itself(value: float) -> None:
    text = format_double(value)
    assert float(text) == value and math.copysign(1, float(text)) == math.copysign(1, value)
    assert ("e" in text) == (value != 0 and not 1e-6 <= abs(value) < 1e21)
    assert not text.endswith(".0") and "e-0" not in text and "e+0" not in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", '"plain"'),
        ('q"b\\', '"q\\"b\\\\"'),
        ("\n\r\t", '"\\n\\r\\t"'),
        ("\b\f", '"\\u0008\\u000c"'),  # json-iterator names only \n, \r and \t
        ("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"'),
        ("\x7f<>&", '"\x7f<>&"'),  # no HTML escaping
        ("\u2028ü🚀", '"\u2028ü🚀"'),  # UTF-8 as is
        ("a\\b\\f", '"a\\\\b\\\\f"'),  # a backslash before b is not a backspace
    ],
)
def test_strings_as_json_iterator_writes_them(text: str, expected: str) -> None:
    message = ExportTraceServiceRequest()
    kv = message.resource_spans.add().resource.attributes.add()
    kv.key = "k"
    kv.value.string_value = text
    out = request_to_json(message).decode()
    assert (
        out
        == '{"resourceSpans":[{"resource":{"attributes":[{"key":"k","value":{"stringValue":'
        + expected
        + "}}]}}]}"
    )
    assert json.loads(out)["resourceSpans"][0]["resource"]["attributes"][0]["value"] == {
        "stringValue": text
    }


def json_iterator_string(text: str) -> str:
    """json-iterator's Stream.WriteString, one character at a time (its writeStringSlowPath)."""
    out = ['"']
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20:
            out.append(f"\\u00{ord(c):02x}")
        else:
            out.append(c)
    return "".join(out) + '"'


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.text(min_size=250, max_size=3000),
        st.text(alphabet='"\\\n\t\r\b\f\x01\x1f\x7fab{}ü\u2028🚀', min_size=200, max_size=600),
    )
)
def test_every_string_escapes_as_json_iterator_does(text: str) -> None:
    message = ExportTraceServiceRequest()
    kv = message.resource_spans.add().resource.attributes.add()
    kv.key = text
    kv.value.string_value = text
    expected = json_iterator_string(text)
    out = request_to_json(message).decode()
    assert out == (
        '{"resourceSpans":[{"resource":{"attributes":[{"key":'
        + expected
        + ',"value":{"stringValue":'
        + expected
        + "}}]}}]}"
        if text
        else '{"resourceSpans":[{"resource":{"attributes":[{"value":{"stringValue":""}}]}}]}'
    )


def test_empty_requests_and_empty_values() -> None:
    assert request_to_json(ExportTraceServiceRequest()) == b"{}"
    assert request_to_json(ExportLogsServiceRequest()) == b"{}"
    message = ExportLogsServiceRequest()
    record = message.resource_logs.add().scope_logs.add().log_records.add()
    record.severity_number = 9
    out = request_to_json(message)
    # resource, scope and body are always written, as pdata writes them
    assert (
        out
        == b'{"resourceLogs":[{"resource":{},"scopeLogs":[{"scope":{},"logRecords":[{"severityNumber":9,"body":{}}]}]}]}'
    )


def test_log_record_fields_in_proto_order() -> None:
    path = DATA / "genai_logs" / "event_only" / "logs.otlp.pb"
    message = ExportLogsServiceRequest.FromString(path.read_bytes())
    text = request_to_json(message).decode()
    order = [
        "timeUnixNano",
        "observedTimeUnixNano",
        "severityNumber",
        "body",
        "attributes",
        "flags",
        "traceId",
        "spanId",
        "eventName",
    ]
    record = text[text.index('"logRecords":[{') :]
    record = record[: record.index('"eventName":')]  # the first record's own fields
    positions = [record.find(f'"{name}":') for name in order[:-1]]
    present = [p for p in positions if p >= 0]
    assert len(present) >= 5 and present == sorted(present)
    canonical = hexify(json_format.MessageToDict(message, use_integers_for_enums=True))
    assert json.loads(text) == canonical


def test_be32_length_of_a_json_record_is_what_the_reader_takes(tmp_path: Path) -> None:
    # json + zstd in the Collector is length-prefixed: the reader must take JSON bodies
    # inside the 4-byte framing too (compressed or not).
    import zstandard

    line = collector_lines()[0][1]
    body = zstandard.ZstdCompressor().compress(line)
    path = tmp_path / "framed.bin"
    path.write_bytes(struct.pack(">I", len(body)) + body + struct.pack(">I", len(line)) + line)
    assert len(records(path)) == 4
