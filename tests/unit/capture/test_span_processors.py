"""Each one-job span processor alone on a real SDK provider, and ReplaySpanProcessor as their sum.

Every processor is added alone to its own ``TracerProvider`` and sees real
spans; none may change the process's redactor, and one that fails on a span
leaves the span as it was and counts the failure.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import baggage, context
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from otel_replay import attributes as A
from otel_replay import redaction
from otel_replay.capture.processor import ReplaySpanProcessor
from otel_replay.capture.span_processors import (
    BAGGAGE_IDS,
    BaggageIdsProcessor,
    Base64BytesProcessor,
    FingerprintProcessor,
    PayloadOffloadProcessor,
    RedactionProcessor,
    SemconvProcessor,
)
from otel_replay.payload.store import PayloadStore
from otel_replay.redaction import PLACEHOLDER, Redactor, install_redactor, redactor

_SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(autouse=True)
def _process_redactor() -> Iterator[None]:
    before = install_redactor(None)
    install_redactor(before)
    yield
    install_redactor(before)


class _Provider:
    """A provider with ``processor`` alone, then an in-memory exporter."""

    def __init__(self, processor: SpanProcessor) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer: Tracer = self.provider.get_tracer("app")

    def one(self, name: str = "work", attributes: Mapping[str, Any] | None = None) -> ReadableSpan:
        self.exporter.clear()
        with self.tracer.start_as_current_span(name, attributes=dict(attributes or {})):
            pass
        (span,) = self.exporter.get_finished_spans()
        return span

    def close(self) -> None:
        self.provider.shutdown()


_IDS = st.dictionaries(
    st.sampled_from(sorted(BAGGAGE_IDS)),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12),
    min_size=1,
)
_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=10)


@_SETTINGS
@given(seed=st.integers(0, 2**31), flag=_WORDS, secret=_WORDS.map(lambda w: f"ACME-{w}-42"))
def test_fingerprint_alone_on_roots_only(seed: int, flag: str, secret: str) -> None:
    """Run roots carry the fingerprint, children none; the flags are hidden by the given
    redactor, and the process's redactor stays the one it was."""
    own = Redactor(patterns=[r"ACME-[a-z]+-42"])
    before = redactor()
    processor = FingerprintProcessor({flag: True, "token": secret}, seed, redactor=own)
    assert redactor() is before
    p = _Provider(processor)
    with p.tracer.start_as_current_span("root"), p.tracer.start_as_current_span("child"):
        pass
    spans = {s.name: s for s in p.exporter.get_finished_spans()}
    root, child = spans["root"].attributes or {}, spans["child"].attributes or {}
    assert root[A.FP_SEED] == seed
    assert flag in str(root[A.FP_FLAGS]) and secret not in str(root[A.FP_FLAGS])
    assert PLACEHOLDER in str(root[A.FP_FLAGS])
    assert not any(k.startswith(A.FP) for k in child)
    made = {k: list(v) if isinstance(v, list) else v for k, v in processor.fingerprint.items()}
    assert made == {
        k: list(v) if isinstance(v, tuple) else v for k, v in root.items() if k.startswith(A.FP)
    }
    assert processor.failures == 0
    p.close()


@_SETTINGS
@given(ids=_IDS)
def test_baggage_ids_alone(ids: dict[str, str]) -> None:
    """Each id in baggage is on every span, under its attribute's name."""
    p = _Provider(BaggageIdsProcessor())
    ctx = context.get_current()
    for key, value in ids.items():
        ctx = baggage.set_baggage(key, value, ctx)
    token = context.attach(ctx)
    try:
        attrs = p.one().attributes or {}
    finally:
        context.detach(token)
    expected = {BAGGAGE_IDS[k]: v for k, v in ids.items()}
    # Two baggage keys of one attribute (user.id, user_id): either value is kept.
    for attr in set(expected):
        assert attrs[attr] in {v for k, v in ids.items() if BAGGAGE_IDS[k] == attr}
    assert p.one().attributes == {}  # no baggage, no ids
    p.close()


@_SETTINGS
@given(model=_WORDS)
def test_semconv_alone(model: str) -> None:
    """A third-party span leaves with the GenAI attributes its instrumentation lacks; an
    excluded family stays out."""
    third_party = {
        "openinference.span.kind": "LLM",
        "llm.model_name": model,
        "llm.provider": "openai",
    }
    processor = SemconvProcessor()
    p = _Provider(processor)
    with p.provider.get_tracer("openinference.instrumentation.openai").start_as_current_span(
        "ChatCompletion", attributes=third_party
    ):
        pass
    (span,) = p.exporter.get_finished_spans()
    attrs = span.attributes or {}
    assert attrs["gen_ai.request.model"] == model
    assert attrs["gen_ai.provider.name"] == "openai"
    assert processor.normalizer.normalized == 1 and processor.failures == 0
    assert p.one("plain", {"k": "v"}).attributes == {"k": "v"}  # nothing to add to it
    p.close()


@_SETTINGS
@given(word=_WORDS, where=st.sampled_from(["name", "attribute", "event"]))
def test_redaction_alone_with_its_own_redactor(word: str, where: str) -> None:
    """The given redactor hides its own pattern in the span's name, attributes and events;
    the process's redactor neither changes nor learns the pattern."""
    secret = f"ACME-{word}-42"
    before = redactor()
    processor = RedactionProcessor(Redactor(patterns=[r"ACME-[a-z]+-42"]))
    p = _Provider(processor)
    p.exporter.clear()
    with p.tracer.start_as_current_span(
        f"call {secret}" if where == "name" else "call",
        attributes={"note": f"id {secret}"} if where == "attribute" else {},
    ) as span:
        if where == "event":
            span.add_event("said", {"text": secret})
    (done,) = p.exporter.get_finished_spans()
    written = f"{done.name} {dict(done.attributes or {})} {[dict(e.attributes or {}) for e in done.events]}"
    assert secret not in written and PLACEHOLDER in written
    assert redactor() is before and redactor().text(secret) == secret
    assert processor.failures == 0
    p.close()


def test_redaction_alone_follows_the_process_redactor() -> None:
    """Given no redactor, the processor hides with the one installed at each span."""
    processor = RedactionProcessor()
    p = _Provider(processor)
    assert p.one(attributes={"note": "ACME-abc-42"}).attributes == {"note": "ACME-abc-42"}
    install_redactor(Redactor(patterns=[r"ACME-[a-z]+-42"]))
    assert (p.one(attributes={"note": "ACME-abc-42"}).attributes or {})["note"] == PLACEHOLDER
    p.close()


class _Broken(Redactor):
    def text(self, text: str) -> str:
        raise RuntimeError("broken redactor")


def test_a_failing_processor_leaves_the_span_and_counts() -> None:
    """Trouble in a processor never reaches the app: the span ends as it was, the failure
    is counted."""
    processor = RedactionProcessor(_Broken())
    p = _Provider(processor)
    for n in range(3):
        assert p.one(f"work {n}", {"note": "x"}).attributes == {"note": "x"}
    assert processor.failures == 3
    p.close()


@_SETTINGS
@given(size=st.integers(0, 64), limit=st.integers(1, 32))
def test_payload_offload_alone(tmp_path: Path, size: int, limit: int) -> None:
    """A bytes payload over the limit leaves the span for the store, named by digest; one
    within it stays on the span."""
    root = tempfile.mkdtemp(dir=tmp_path)
    data = bytes(range(size))
    processor = PayloadOffloadProcessor(root, max_inline_bytes=limit)
    p = _Provider(processor)
    attrs = p.one(attributes={A.BYTES + "body": data}).attributes or {}
    assert processor.force_flush()
    if size > limit:
        assert A.BYTES + "body" not in attrs
        ref = attrs[A.REF + "body"]
        assert isinstance(ref, str) and ref == PayloadStore(root).ref(data)
        assert (Path(root) / ref.removeprefix("sha256:")).read_bytes() == data
    else:
        assert attrs[A.BYTES + "body"] == data and A.REF + "body" not in attrs
    assert processor.failures == 0 and processor.uploader.failed == 0
    p.close()


def test_payload_offload_needs_a_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_REPLAY_PAYLOAD_STORE", raising=False)
    with pytest.raises(ValueError, match="store"):
        PayloadOffloadProcessor()


@_SETTINGS
@given(data=st.binary(max_size=64), many=st.booleans())
def test_base64_bytes_alone(data: bytes, many: bool) -> None:
    """Every bytes value leaves as base64 text that decodes to it; text stays text."""
    p = _Provider(Base64BytesProcessor())
    value: Any = [data, data] if many else data
    attrs = p.one(attributes={A.BYTES + "body": value, "text": "kept"}).attributes or {}
    sent = attrs[A.BYTES + "body"]
    decoded = [base64.b64decode(t) for t in sent] if many else base64.b64decode(sent)
    assert decoded == value and attrs["text"] == "kept"
    p.close()


def test_replay_processor_is_their_sum(tmp_path: Path) -> None:
    """ReplaySpanProcessor runs the one-job processors in order; given redaction arguments
    it installs its redactor, and what it replaced can be put back."""
    before = redactor()
    processor = ReplaySpanProcessor(
        redact_patterns=[r"ACME-[a-z]+-42"],
        payload_store=str(tmp_path),
        base64_bytes=True,
        semconv=True,
    )
    assert [type(p) for p in processor.processors] == [
        FingerprintProcessor,
        BaggageIdsProcessor,
        SemconvProcessor,
        RedactionProcessor,
        PayloadOffloadProcessor,
        Base64BytesProcessor,
    ]
    assert processor.replaced_redactor is before
    assert redactor().text("ACME-abc-42") == PLACEHOLDER
    install_redactor(processor.replaced_redactor)
    assert redactor() is before and redactor().text("ACME-abc-42") == "ACME-abc-42"
    plain = ReplaySpanProcessor(semconv=False)
    assert redactor() is before and plain.replaced_redactor is None
    assert [type(p) for p in plain.processors] == [
        FingerprintProcessor,
        BaggageIdsProcessor,
        RedactionProcessor,
    ]
    assert plain.semconv is None
    processor.shutdown()


def test_install_redactor_is_reversible() -> None:
    own = redaction.redactor_from_settings(keys=["customer_ref"])
    before = install_redactor(own)
    assert redactor() is own and own.is_secret_key("customer_ref")
    assert install_redactor(before) is own
    assert not redactor().is_secret_key("customer_ref")
