"""Secrets in stored spans never reach a converted file or a backend they are re-sent to.

A file from a third party (a Collector dump in JSON lines or protobuf, spans
and log records) holds secrets of every family the redactor knows at every
place one can be: span, event and scope names, scope versions, schema URLs,
trace states, status descriptions, log bodies and event names, attributes of
spans, events, links, resources, scopes and log records (text, bytes, nested
maps, secret-named keys), our own bookkeeping, and byte-exact payloads in
our layout, inline, as bytes and in a blob beside the file.  The real CLI
converts it (``convert``: protobuf, and JSON lines with zstd) and re-sends it
(``export``, bytes as bytes and as base64 text) to an OTLP/HTTP collector on
127.0.0.1.  Every byte written or
sent is grepped (compressed bytes decompressed first); each payload that was
scrubbed still verifies against its digest and is listed in
``otel_replay.redacted``.

Live spans too: an instrumentation scope named after a URL holding a key, or
with a token for its version or schema URL, goes out scrubbed through the
processor and every exporter.  A file our processor wrote converts to the
same requests (redaction is idempotent).
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import otel_replay
from otel_replay import attributes as A
from otel_replay.cli.main import cli
from otel_replay.export.convert import MessageReader
from otel_replay.otlp.json_reader import request_from_json
from otel_replay.otlp.proto_reader import records_from_proto
from otel_replay.otlp.records import SpanRecord
from otel_replay.payload import codec as payload
from otel_replay.payload.attributes import from_attributes
from otel_replay.payload.blobs import BlobStore
from otel_replay.redaction import configure_redaction
from otel_replay.sources.reader import SpanReader
from tests.fixtures.secrets import SECRET_SHAPES, WRITING, collector, decompressed, every_byte

#: Every place of a stored span or log record a secret is put.
SITES = (
    "span name",
    "span attribute",
    "secret-named span attribute",
    "nested map attribute",
    "bytes attribute",
    "event name",
    "event attribute",
    "link attribute",
    "trace state",
    "status description",
    "resource attribute",
    "resource schema URL",
    "scope name",
    "scope version",
    "scope attribute",
    "scope schema URL",
    "fingerprint",
    "redacted list",
    "payload shown",
    "payload bytes",
    "payload blob",
    "log body",
    "log attribute",
    "log event name",
)
#: Payloads in our layout (key -> how its exact bytes are kept).
PAYLOADS = {
    A.TOOL_CALL_ARGUMENTS: "payload shown",
    A.TOOL_CALL_RESULT: "payload bytes",
    A.INPUT_MESSAGES: "payload blob",
}

Planted = dict[str, tuple[str, str]]


@pytest.fixture(autouse=True)
def _default_redaction() -> Iterator[None]:
    configure_redaction()
    yield
    configure_redaction()


def _kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": _any(value)}


def _any(value: Any) -> dict[str, Any]:
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [_kv(k, v) for k, v in value.items()]}}
    return {"stringValue": value}


def _payloads(planted: Planted, blobs: BlobStore) -> dict[str, Any]:
    """Byte-exact payloads as our capture lays them out, each holding a secret."""
    shown = json.dumps({"note": f"use {planted['payload shown'][0]}"})
    exact = json.dumps({"result": f"got {planted['payload bytes'][0]}"}).encode()
    stored = json.dumps([{"role": "user", "content": f"key {planted['payload blob'][0]}"}])
    ref = blobs.put(stored.encode())
    return {
        A.TOOL_CALL_ARGUMENTS: shown,
        A.SHA256 + A.TOOL_CALL_ARGUMENTS: payload.sha256(shown.encode()),
        A.TYPE + A.TOOL_CALL_ARGUMENTS: payload.JSON,
        A.TOOL_CALL_RESULT: exact.decode(),
        A.SHA256 + A.TOOL_CALL_RESULT: payload.sha256(exact),
        A.TYPE + A.TOOL_CALL_RESULT: payload.JSON,
        A.BYTES + A.TOOL_CALL_RESULT: exact,
        A.INPUT_MESSAGES: stored[:20] + "… [preview]",
        A.SHA256 + A.INPUT_MESSAGES: payload.sha256(stored.encode()),
        A.TYPE + A.INPUT_MESSAGES: payload.JSON,
        A.REF + A.INPUT_MESSAGES: ref,
        A.SIZE + A.INPUT_MESSAGES: len(stored),
    }


def traces_doc(planted: Planted, blobs: BlobStore, n: int) -> dict[str, Any]:
    """One OTLP/JSON traces request: a span with a secret at every span site, and a
    clean span it links to."""
    p = {site: text for site, (text, _) in planted.items()}
    trace = f"{n + 1:032x}"
    attrs = {
        "http.url": f"called {p['span attribute']}",
        "api_key": planted["secret-named span attribute"][1],
        "request": {"headers": {"x-note": f"sent {p['nested map attribute']}"}},
        "raw": f"raw {p['bytes attribute']}".encode(),
        A.FP_FLAGS: f"beta=1,{p['fingerprint']}",
        A.REDACTED: ["earlier.path", f"note {p['redacted list']}"],
        **_payloads(planted, blobs),
    }
    span = {
        "traceId": trace,
        "spanId": "00000000000000a1",
        "traceState": f"acme={p['trace state']}",
        "name": f"GET {p['span name']}",
        "kind": 3,
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [_kv(k, v) for k, v in attrs.items()],
        "events": [
            {"timeUnixNano": "1500", "name": f"retry {p['event name']}", "attributes": []},
            {
                "timeUnixNano": "1600",
                "name": "detail",
                "attributes": [_kv("text", f"saw {p['event attribute']}")],
            },
        ],
        "links": [
            {
                "traceId": trace,
                "spanId": "00000000000000a2",
                "attributes": [_kv("peer", f"via {p['link attribute']}")],
            }
        ],
        "status": {"code": 2, "message": f"refused {p['status description']}"},
    }
    clean = {**span, "spanId": "00000000000000a2", "name": "plan", "attributes": []}
    for key in ("traceState", "events", "links", "status"):
        clean.pop(key)
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        _kv("service.name", "app"),
                        _kv("deploy.source", p["resource attribute"]),
                    ]
                },
                "schemaUrl": f"https://schemas.example/{p['resource schema URL']}",
                "scopeSpans": [
                    {
                        "scope": {
                            "name": f"acme.client {p['scope name']}",
                            "version": f"1.0+{p['scope version']}",
                            "attributes": [_kv("origin", f"from {p['scope attribute']}")],
                        },
                        "schemaUrl": f"https://schemas.example/{p['scope schema URL']}",
                        "spans": [clean, span],
                    }
                ],
            }
        ]
    }


def logs_doc(planted: Planted, n: int) -> dict[str, Any]:
    p = {site: text for site, (text, _) in planted.items()}
    record = {
        "timeUnixNano": "1700",
        "traceId": f"{n + 1:032x}",
        "spanId": "00000000000000a1",
        "eventName": f"gen_ai.choice {p['log event name']}",
        "severityText": "INFO",
        "body": {"kvlistValue": {"values": [_kv("message", f"answer {p['log body']}")]}},
        "attributes": [_kv("detail", f"with {p['log attribute']}")],
    }
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": [_kv("service.name", "app")]},
                "scopeLogs": [{"scope": {"name": "acme.logs"}, "logRecords": [record]}],
            }
        ]
    }


def write_input(root: Path, draws: list[Planted], fmt: str) -> tuple[Path, Path]:
    """A third party's dump of ``draws`` (one traces request each) and its logs file."""
    root.mkdir(parents=True, exist_ok=True)
    traces, logs = root / f"traces.{fmt}", root / f"logs.{fmt}"
    blobs = BlobStore(traces)
    docs = [traces_doc(p, blobs, n) for n, p in enumerate(draws)]
    log_docs = [logs_doc(p, n) for n, p in enumerate(draws)]
    for path, items in ((traces, docs), (logs, log_docs)):
        if fmt == "jsonl":
            path.write_text("".join(json.dumps(d) + "\n" for d in items))
        else:
            framed = [request_from_json(d).SerializeToString() for d in items]
            path.write_bytes(b"".join(struct.pack(">I", len(b)) + b for b in framed))
    return traces, logs


def _leaks(written: dict[str, bytes], draws: list[Planted]) -> list[str]:
    return [
        f"{where} (planted in the {site})"
        for planted in draws
        for site, (_, secret) in planted.items()
        for where, data in written.items()
        if secret.encode() in data
    ]


def _check_payloads(spans: list[SpanRecord], blobs: BlobStore | None) -> None:
    """Each scrubbed payload verifies against its digest and is listed as hidden."""
    planted = [s for s in spans if s.name != "plan"]
    assert planted
    for span in planted:
        hidden = span.attributes[A.REDACTED]
        for key, site in PAYLOADS.items():
            if site == "payload blob" and blobs is None:
                continue  # not sent with the span: the backend holds its scrubbed preview
            got = from_attributes(span.attributes, key, blobs.get if blobs else None)
            assert got is not None and got.status == "exact", (key, got and got.reason)
            assert A.REDACTED_VALUE.encode() in (got.data or b""), key
            assert key in hidden, (key, hidden)


def _draws(size: int) -> st.SearchStrategy[list[Planted]]:
    return st.lists(
        st.fixed_dictionaries({site: SECRET_SHAPES for site in SITES}),
        min_size=size,
        max_size=size,
    )


def test_converting_a_third_party_dump_writes_no_secret(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    @settings(WRITING, max_examples=6)
    @given(draws=_draws(4), fmt=st.sampled_from(["jsonl", "pb"]))
    def check(draws: list[Planted], fmt: str) -> None:
        root = tmp_path_factory.mktemp("convert")
        traces, logs = write_input(root / "in", draws, fmt)
        written: dict[str, bytes] = {}
        for name, args in (("out.pb", []), ("out.jsonl.zst", ["--format", "json", "--zstd"])):
            out = root / "out" / name
            result = CliRunner().invoke(cli, ["convert", str(traces), "-o", str(out), *args])
            assert result.exit_code == 0, result.output
            logs_out = root / "out" / ("logs." + name)
            result = CliRunner().invoke(cli, ["convert", str(logs), "-o", str(logs_out), *args])
            assert result.exit_code == 0, result.output
            _check_payloads(list(SpanReader(out)), BlobStore(out))
        written.update(every_byte(root / "out"))
        assert not _leaks(written, draws)
        # Scrubbed, not dropped: every span and log record is there.
        for name in ("out.pb", "out.jsonl.zst"):
            assert len(list(SpanReader(root / "out" / name))) == 2 * len(draws)
        assert b"".join(written.values()).count(A.REDACTED_VALUE.encode()) >= len(SITES)

    check()


def test_resending_a_third_party_dump_sends_no_secret(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with collector() as (endpoint, received):

        @settings(WRITING, max_examples=6)
        @given(draws=_draws(4), fmt=st.sampled_from(["jsonl", "pb"]), base64_bytes=st.booleans())
        def check(draws: list[Planted], fmt: str, base64_bytes: bool) -> None:
            received.clear()
            traces, _ = write_input(tmp_path_factory.mktemp("resend"), draws, fmt)
            flags = ["--base64-bytes"] if base64_bytes else []
            args = ["export", str(traces), "--endpoint", endpoint, *flags]
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 0, result.output
            assert f"sent {2 * len(draws)} spans" in result.output
            sent = {f"request {i}": decompressed(body) for i, body in enumerate(received)}
            assert not _leaks(sent, draws)
            spans = [
                r
                for body in received
                for r in records_from_proto(body, "collector", 0)
                if isinstance(r, SpanRecord)
            ]
            assert len(spans) == 2 * len(draws)
            _check_payloads(spans, None)

        check()


def test_live_scope_names_versions_and_schema_urls_are_scrubbed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with collector() as (endpoint, received):

        @settings(WRITING, max_examples=10)
        @given(name=SECRET_SHAPES, version=SECRET_SHAPES, schema=SECRET_SHAPES)
        def check(name: tuple[str, str], version: tuple[str, str], schema: tuple[str, str]) -> None:
            received.clear()
            root = tmp_path_factory.mktemp("scopes")
            resource = Resource({"service.name": "app"}, f"https://schemas.example/{schema[0]}")
            full = TracerProvider(resource=resource)
            full.add_span_processor(SimpleSpanProcessor(otel_replay.FileSpanExporter(root / "a")))
            full.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
            full.add_span_processor(otel_replay.ReplaySpanProcessor(semconv=False))
            bare = TracerProvider(resource=resource)
            bare.add_span_processor(
                SimpleSpanProcessor(otel_replay.FileSpanExporter(root / "b", format="json"))
            )
            for provider in (full, bare):
                tracer = provider.get_tracer(
                    f"acme {name[0]}", f"1.0+{version[0]}", f"https://schemas.example/{schema[0]}"
                )
                with tracer.start_as_current_span("work"):
                    pass
                provider.shutdown()
            written = every_byte(root)
            written["OTLP request"] = decompressed(b"".join(received))
            assert len(received) == 1
            assert not _leaks(
                written, [{"scope name": name, "scope version": version, "schema URL": schema}]
            )

        check()


def test_a_file_our_processor_wrote_converts_to_the_same_requests(tmp_path: Path) -> None:
    """Scrubbed again on the way, it comes out as it went in: redaction is idempotent."""
    key = "sk-proj-" + "Q7x" * 10
    provider = TracerProvider(resource=Resource({"service.name": "app", "db.password": key}))
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(tmp_path / "run.otlp"))
    )
    previous = otel_replay.use_tracer_provider(provider)
    try:

        @otel_replay.tool
        def login(api_key: str, note: str) -> dict[str, str]:
            return {"token": key, "note": note}

        with otel_replay.agent_run("agent"):
            login(key, f"the key is {key} " + "x" * 300_000)  # a blob too
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()
    out = tmp_path / "again.otlp"
    result = CliRunner().invoke(cli, ["convert", str(tmp_path / "run.otlp"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert list(MessageReader(out)) == list(MessageReader(tmp_path / "run.otlp"))
    assert sorted(BlobStore(out).digests()) == sorted(BlobStore(tmp_path / "run.otlp").digests())
    assert key.encode() not in b"".join(every_byte(tmp_path).values())


def test_everything_is_found_in_a_converted_zstd_file() -> None:
    """The grep decompresses what it finds: a key inside a zstd frame is found."""
    key = b"sk-proj-" + b"Z9y" * 8
    assert key in decompressed(struct.pack(">I", 9) + zstandard.ZstdCompressor().compress(key))
