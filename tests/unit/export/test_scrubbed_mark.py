"""A span our processor scrubbed as it ended is not scrubbed again by our exporters;
a span of another provider that has the same id is not that span.

The class: providers without the processor beside one with it, in a process that
seeds ``random`` (the SDK draws span ids from it, so ids come again: an agent seeding
for reproducible runs, a test framework seeding each example).  The span of the
provider without the processor must be scrubbed by the exporter, whatever id it has.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider

import otel_replay
from tests.fixtures.secrets import SECRET_SHAPES


@settings(max_examples=25, deadline=None)
@given(
    secret=SECRET_SHAPES,
    seed=st.integers(0, 2**32),
    where=st.sampled_from(["attribute", "name", "event"]),
)
def test_a_span_with_the_id_of_a_scrubbed_one_is_scrubbed_too(
    secret: tuple[str, str], seed: int, where: str
) -> None:
    text, body = secret
    root = Path(tempfile.mkdtemp())
    scrubbing = TracerProvider()
    scrubbing.add_span_processor(otel_replay.ReplaySpanProcessor())
    ours = otel_replay.FileSpanExporter(root / "ours.jsonl", format="json")
    scrubbing.add_span_processor(otel_replay.RecordingSpanProcessor(ours))
    bare = TracerProvider()  # no processor: the exporter scrubs alone
    theirs = otel_replay.FileSpanExporter(root / "bare.jsonl", format="json")
    bare.add_span_processor(otel_replay.RecordingSpanProcessor(theirs))
    ids = []
    for provider in (scrubbing, bare):
        random.seed(seed)  # the same span id, drawn again
        tracer = provider.get_tracer("acme")
        name = f"call {text}" if where == "name" else "call"
        with tracer.start_as_current_span(name) as span:
            ids.append(span.get_span_context().span_id)
            if where == "attribute":
                span.set_attribute("http.request.body", f"token: {text}")
            elif where == "event":
                span.add_event("sent", {"text": f"key {text}"})
    scrubbing.shutdown()
    bare.shutdown()
    assert ids[0] == ids[1], "the seed draws the same span id twice"
    for written in ("ours.jsonl", "bare.jsonl"):
        data = (root / written).read_bytes()
        assert data, written
        assert body.encode() not in data, f"{where}: the secret is in {written}"
