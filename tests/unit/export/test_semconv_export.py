"""GenAI semconv on export: third-party spans leave with current ``gen_ai.*`` added.

Each recorded third-party case (data/thirdparty/, spans written by
OpenInference, OpenLLMetry, the OTel GenAI instrumentations, pydantic-ai, the
openai-agents bridges, the Anthropic SDK) is played again through a real SDK
``TracerProvider`` (same ids, scopes, times, attributes, events) with
``ReplaySpanProcessor`` and our real exporters, and the written file is read
back: every span carries the GenAI attributes the loader's dialects derive
from the original, its own attributes untouched, and loads as the same run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)

import otel_replay
from otel_replay.attributes import READER_HINTS
from otel_replay.dialects.registry import genai_attributes
from otel_replay.dialects.span import SpanView, loads
from otel_replay.export import semconv
from otel_replay.export.readable_spans import readable_spans
from otel_replay.otlp.records import SpanRecord
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import TESTS, found

DATA = TESTS / "data" / "thirdparty"
CASES = [p.parent.relative_to(DATA).as_posix() for p in found(DATA, "*/*/traces.otlp.jsonl")]
_LIMITS = SpanLimits(max_span_attributes=100_000, max_event_attributes=100_000)
_STATUS = {0: StatusCode.UNSET, 1: StatusCode.OK, 2: StatusCode.ERROR}


class _Ids(IdGenerator):
    """Hands the SDK the recorded ids, so the replayed spans keep them."""

    span_id = 0
    trace_id = 0

    def generate_span_id(self) -> int:
        return self.span_id

    def generate_trace_id(self) -> int:
        return self.trace_id


def originals(case: str) -> list[SpanRecord]:
    return list(SpanReader(DATA / case / "traces.otlp.jsonl"))


def view(r: SpanRecord) -> SpanView:
    events = [{"name": e.name, "attributes": dict(e.attributes)} for e in r.events]
    return SpanView(r.attributes, name=r.name, scope=r.scope_name, events=events)


def emit(records: Sequence[SpanRecord], provider: TracerProvider, ids: _Ids) -> None:
    """Play ``records`` through ``provider`` as the instrumentation did: attributes set while live."""
    live = []
    for r in sorted(records, key=lambda r: r.start_ns):
        tracer = provider.get_tracer(r.scope_name, r.scope_version or None)
        ids.span_id, ids.trace_id = int(r.span_id, 16), int(r.trace_id, 16)
        context = None
        if r.parent_span_id:
            parent = SpanContext(
                int(r.trace_id, 16), int(r.parent_span_id, 16), False, TraceFlags(1)
            )
            context = trace.set_span_in_context(NonRecordingSpan(parent))
        span = tracer.start_span(
            r.name, context=context, kind=SpanKind(max(r.kind - 1, 0)), start_time=r.start_ns
        )
        span.set_attributes(r.attributes)
        for e in r.events:
            span.add_event(e.name, dict(e.attributes), e.time_ns)
        status = _STATUS.get(r.status_code, StatusCode.UNSET)
        if status is not StatusCode.UNSET:
            span.set_status(Status(status, r.status_message or None))
        live.append((r.end_ns, span))
    for end, span in sorted(live, key=lambda x: x[0]):
        span.end(end)


def record_through_sdk(case: str, out: Path, **processor_kwargs: Any) -> list[SpanRecord]:
    records = originals(case)
    ids = _Ids()
    provider = TracerProvider(
        resource=Resource(records[0].resource), id_generator=ids, span_limits=_LIMITS
    )
    provider.add_span_processor(otel_replay.ReplaySpanProcessor(**processor_kwargs))
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(out))
    )
    emit(records, provider, ids)
    provider.shutdown()
    return records


def by_id(records: Sequence[SpanRecord]) -> dict[str, SpanRecord]:
    return {r.span_id: r for r in records}


def valid_attribute(value: Any) -> bool:
    scalar = (str, bool, int, float, bytes)
    if isinstance(value, scalar):
        return True
    return (
        isinstance(value, (list, tuple))
        and all(isinstance(v, scalar) for v in value)
        and len({type(v) for v in value}) <= 1
    )


def fingerprint_keys() -> set[str]:
    return set(otel_replay.ReplaySpanProcessor(semconv=False).fingerprint)


@pytest.mark.parametrize("case", CASES)
def test_exported_spans_carry_what_the_loader_derives(case: str, tmp_path: Path) -> None:
    out = tmp_path / "out.otlp"
    records = record_through_sdk(case, out)
    written = by_id(SpanReader(out))
    assert set(written) == {r.span_id for r in records}
    extra_ok = fingerprint_keys()
    added_any = False
    for r in records:
        got = written[r.span_id].attributes
        derived = genai_attributes(view(r))
        for key, value in derived.items():
            if key in r.attributes and f"otel_replay.sha256.{key}" in r.attributes:
                continue
            if key in READER_HINTS:
                continue  # what a reader derives again from the originals, never written
            expected = semconv.attribute_value(value)
            if expected is None:
                continue
            assert got[key] == expected, (r.name, key)
            if isinstance(expected, str) and not isinstance(value, str):
                assert loads(got[key]) == json.loads(json.dumps(value, default=str))
            added_any = added_any or key not in r.attributes
        for key, value in r.attributes.items():
            if key not in derived:
                assert got[key] == value, (r.name, key)  # the original, untouched
        assert set(got) - set(r.attributes) - set(derived) <= extra_ok
        assert all(valid_attribute(v) for v in got.values()), r.name
    # Stacks that do not write current semconv get it (the others already carry it all).
    assert added_any == any(
        k not in r.attributes and k not in READER_HINTS
        for r in records
        for k in genai_attributes(view(r))
    )


@pytest.mark.parametrize("case", CASES)
def test_normalized_recording_loads_as_the_same_run(case: str, tmp_path: Path) -> None:
    out = tmp_path / "out.otlp"
    record_through_sdk(case, out)
    before = otel_replay.load(DATA / case / "traces.otlp.jsonl")
    after = otel_replay.load(out)
    assert [r.kit.verdict for r in after] == [r.kit.verdict for r in before]
    for a, b in zip(after, before, strict=True):
        assert [s.span_id for s in a.steps] == [s.span_id for s in b.steps]
        for sa, sb in zip(a.steps, b.steps, strict=True):
            assert sa.kind == sb.kind
            if sb.model is not None:
                assert sa.model is not None
                for field in (
                    "provider",
                    "request_model",
                    "input_messages",
                    "output_messages",
                    "system_instructions",
                    "tool_definitions",
                    "usage",
                ):
                    assert getattr(sa.model, field) == getattr(sb.model, field), field
            if sb.tool is not None:
                assert sa.tool is not None
                assert (sa.tool.tool_name, sa.tool.arguments, sa.tool.result) == (
                    sb.tool.tool_name,
                    sb.tool.arguments,
                    sb.tool.result,
                )


def test_openinference_spans_gain_semconv_messages(tmp_path: Path) -> None:
    out = tmp_path / "out.otlp"
    record_through_sdk("openinference_openai/chat_sync", out)
    spans = [s for s in SpanReader(out) if "llm.input_messages.0.message.role" in s.attributes]
    assert spans
    for s in spans:
        a = s.attributes
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.provider.name"] == "openai"
        assert a["gen_ai.request.model"] == "gpt-4o-mini"
        messages = json.loads(a["gen_ai.input.messages"])
        assert messages[0]["role"] in ("system", "user") and messages[0]["parts"]
        assert json.loads(a["gen_ai.output.messages"])[0]["role"] == "assistant"
        assert json.loads(a["gen_ai.tool.definitions"])[0]["name"] == "lookup_order"


@pytest.mark.parametrize(
    "case", ["openai_agents_openinference/chat_sync", "openinference_openai/chat_sync"]
)
def test_missing_mode_leaves_every_original_value(case: str, tmp_path: Path) -> None:
    out = tmp_path / "out.otlp"
    records = record_through_sdk(case, out, semconv_mode="missing")
    written = by_id(SpanReader(out))
    added = 0
    for r in records:
        got = written[r.span_id].attributes
        for key, value in r.attributes.items():
            assert got[key] == value, (r.name, key)
        added += len(set(got) - set(r.attributes) - fingerprint_keys())
    assert added > 0


def test_repair_mode_replaces_known_bad_values(tmp_path: Path) -> None:
    # The openai-agents OTel bridge writes tool results twice and SDK reprs as text.
    case = "openai_agents_otel/chat_sync"
    out = tmp_path / "out.otlp"
    records = record_through_sdk(case, out)
    written = by_id(SpanReader(out))
    repaired = [
        (r, k)
        for r in records
        for k in ("gen_ai.input.messages", "gen_ai.output.messages")
        if k in r.attributes and written[r.span_id].attributes[k] != r.attributes[k]
    ]
    assert repaired
    for r, k in repaired:
        assert json.loads(written[r.span_id].attributes[k]) == genai_attributes(view(r))[k]


def test_excluded_families_are_not_added(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_REPLAY_SEMCONV_EXCLUDE", "messages, tool_definitions")
    out = tmp_path / "out.otlp"
    records = record_through_sdk("openinference_openai/chat_sync", out)
    written = by_id(SpanReader(out))
    for r in records:
        got = written[r.span_id].attributes
        for key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions"):
            assert (key in got) == (key in r.attributes)
    assert any("gen_ai.request.model" in s.attributes for s in written.values())


@pytest.mark.parametrize("how", ["argument", "env"])
def test_switched_off_writes_spans_as_they_were(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kwargs: dict[str, Any] = {}
    if how == "argument":
        kwargs["semconv"] = False
    else:
        monkeypatch.setenv("OTEL_REPLAY_SEMCONV", "false")
    out = tmp_path / "out.otlp"
    records = record_through_sdk("openinference_openai/chat_sync", out, **kwargs)
    written = by_id(SpanReader(out))
    for r in records:
        assert set(written[r.span_id].attributes) - set(r.attributes) <= fingerprint_keys()


def test_without_the_processor_our_exporter_changes_nothing(tmp_path: Path) -> None:
    records = originals("openllmetry_openai/chat_sync")
    out = tmp_path / "out.otlp"
    exporter = otel_replay.FileSpanExporter(out)
    exporter.export(list(readable_spans(records)))
    exporter.shutdown()
    for r in SpanReader(out):
        assert r.attributes == by_id(records)[r.span_id].attributes


def test_wrapper_normalizes_for_any_exporter() -> None:
    records = originals("openinference_openai/chat_sync")
    inner = InMemorySpanExporter()
    wrapper = otel_replay.GenAISemconvExporter(inner)
    assert wrapper.export(list(readable_spans(records))) is SpanExportResult.SUCCESS
    got = {format(s.context.span_id, "016x"): s for s in inner.get_finished_spans()}
    for r in records:
        span = got[r.span_id]
        derived = genai_attributes(view(r))
        for key, value in derived.items():
            assert span.attributes[key] == semconv.attribute_value(value)
        assert span.dropped_attributes == 0
    assert wrapper.normalizer.normalized > 0 and wrapper.normalizer.failures == 0


def test_wrapper_under_the_sdk_batch_processor(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    records = originals("openinference_openai/chat_sync")
    ids = _Ids()
    provider = TracerProvider(id_generator=ids, span_limits=_LIMITS)
    inner = InMemorySpanExporter()
    provider.add_span_processor(BatchSpanProcessor(otel_replay.GenAISemconvExporter(inner)))
    emit(records, provider, ids)
    provider.shutdown()
    spans = inner.get_finished_spans()
    assert len(spans) == len(records)
    assert sum("gen_ai.input.messages" in (s.attributes or {}) for s in spans) >= 2


class _Boom(Exception):
    pass


def test_a_failing_span_leaves_as_it_was_counted_and_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(span: SpanView) -> dict[str, Any]:
        raise _Boom("dialect bug")

    monkeypatch.setattr(semconv, "genai_attributes", boom)
    records = originals("openinference_openai/chat_sync")
    inner = InMemorySpanExporter()
    wrapper = otel_replay.GenAISemconvExporter(inner)
    with caplog.at_level(logging.WARNING, logger="otel_replay"):
        assert wrapper.export(list(readable_spans(records))) is SpanExportResult.SUCCESS
        assert wrapper.export(list(readable_spans(records))) is SpanExportResult.SUCCESS
    assert len(inner.get_finished_spans()) == 2 * len(records)
    for span, r in zip(inner.get_finished_spans(), records + records, strict=True):
        assert dict(span.attributes or {}) == r.attributes
    assert wrapper.normalizer.failures == 2 * len(records)
    assert len([m for m in caplog.messages if "GenAI attributes" in m]) == 1


def test_our_own_capture_spans_are_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "out.otlp"
    provider = TracerProvider()
    processor = otel_replay.ReplaySpanProcessor()
    provider.add_span_processor(processor)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(out))
    )
    previous = otel_replay.use_tracer_provider(provider)
    try:

        @otel_replay.tool
        def lookup(order_id: str) -> dict[str, Any]:
            return {"id": order_id, "rows": [1, 2]}

        with otel_replay.agent_run("a", input="q") as run:
            lookup("ORD-1")
            run.record("done")
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()
    plain = {
        format(s.context.span_id, "016x"): {
            k: list(v) if isinstance(v, tuple) else v for k, v in (s.attributes or {}).items()
        }
        for s in exporter.get_finished_spans()
    }
    assert processor.semconv is not None and processor.semconv.normalized == 0
    for r in SpanReader(out):
        assert r.attributes == plain[r.span_id]


@pytest.mark.parametrize("exporter_first", [False, True], ids=["processor-first", "exporter-first"])
def test_every_exporter_of_the_provider_gets_them(exporter_first: bool) -> None:
    """The README setup: the SDK's own processor and exporter, beside ours, in either order."""
    case = "openinference_openai/chat_sync"
    records = originals(case)
    ids = _Ids()
    provider = TracerProvider(
        resource=Resource(records[0].resource), id_generator=ids, span_limits=_LIMITS
    )
    exporter = InMemorySpanExporter()
    processors = [otel_replay.ReplaySpanProcessor(), SimpleSpanProcessor(exporter)]
    for processor in reversed(processors) if exporter_first else processors:
        provider.add_span_processor(processor)
    emit(records, provider, ids)
    provider.shutdown()
    sent = {format(s.context.span_id, "016x"): s for s in exporter.get_finished_spans()}
    assert sent.keys() == by_id(records).keys()
    added = 0
    for r in records:
        attrs = sent[r.span_id].attributes or {}
        for key, value in r.attributes.items():
            assert plain(attrs[key]) == plain(value), (r.span_id, key)
        for key, value in genai_attributes(view(r)).items():
            assert plain(attrs[key]) == plain(semconv.attribute_value(value)), (r.span_id, key)
            added += 1
    assert added and any("gen_ai.input.messages" in (s.attributes or {}) for s in sent.values())


def test_an_added_attribute_past_the_limit_is_left_out_and_counted() -> None:
    """The span's own attributes are never pushed out by added ones."""
    case = "openinference_openai/chat_sync"
    records = [r for r in originals(case) if genai_attributes(view(r))]
    record = max(records, key=lambda r: len(genai_attributes(view(r))))
    ids = _Ids()
    # A run root also carries the fingerprint, set as it starts.
    own = len(record.attributes) + (0 if record.parent_span_id else len(fingerprint_keys()))
    limit = own + 1
    provider = TracerProvider(id_generator=ids, span_limits=SpanLimits(max_span_attributes=limit))
    exporter = InMemorySpanExporter()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    emit([record], provider, ids)
    provider.shutdown()
    (span,) = exporter.get_finished_spans()
    attrs = span.attributes or {}
    assert len(attrs) == limit
    assert all(key in attrs for key in record.attributes)
    assert fingerprint_keys() <= set(attrs) or record.parent_span_id
    assert span.dropped_attributes == len(genai_attributes(view(record))) - 1


def plain(value: Any) -> Any:
    """An attribute value as JSON would spell it (SDK tuples as lists, JSON text parsed)."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def test_attribute_values_are_valid_otel_types() -> None:
    assert semconv.attribute_value({"a": 1}) == '{"a": 1}'
    assert semconv.attribute_value(["a", "b"]) == ["a", "b"]
    assert semconv.attribute_value(["a", 1]) == '["a", 1]'
    assert semconv.attribute_value([{"role": "user"}]) == '[{"role": "user"}]'
    assert semconv.attribute_value([]) is None
    assert semconv.attribute_value(3) == 3
