"""A secret in a protobuf field OTLP does not name is never written again by ``convert``.

protobuf keeps the fields of a record it does not know (a newer protocol's, or
bytes planted in a dump) as raw bytes, and serializing the record writes them
out as they came: the scrubbing of the fields it knows never sees them.  The
class: a length-delimited field of any number no OTLP message of that kind uses,
holding a secret of any family, planted on any message of a real recording
(the order-support example's spans, the GenAI log records of
``tests/data/genai_logs``), at every depth the request has: the request, its
resource groups, resources, scope groups, scopes, spans, events, links,
statuses, log records, attributes and their values.  Converted to ``proto`` and to
zstd ``json`` lines, every byte written is grepped for the secret.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.cli.main import cli
from otel_replay.otlp.sniff import iter_records
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import ROOT
from tests.fixtures.protobuf import varint
from tests.fixtures.secrets import SECRET_SHAPES, WRITING, every_byte

EXAMPLE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
LOGS = ROOT / "tests" / "data" / "genai_logs" / "event_only" / "logs.otlp.pb"


TRACES = [body for _, body in iter_records(EXAMPLE)]  # a framed dump
LOG_REQUESTS = [LOGS.read_bytes()]  # one request, as the Collector's OTLP receiver got it


def _messages(message: Any) -> Iterator[Any]:
    """``message`` and every message inside it, at any depth (set fields only)."""
    yield message
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if isinstance(value, Sequence):  # a repeated field (OTLP has no maps)
            for item in value:
                yield from _messages(item)
        else:
            yield from _messages(value)


def _plant(message: Any, number: int, text: str) -> None:
    """An unknown length-delimited field ``number`` holding ``text`` on ``message``."""
    assert message.DESCRIPTOR.fields_by_number.get(number) is None
    data = text.encode()
    message.MergeFromString(varint(number << 3 | 2) + varint(len(data)) + data)


def _framed(requests: list[Any]) -> bytes:
    return b"".join(
        struct.pack(">I", len(b)) + b for b in (r.SerializeToString() for r in requests)
    )


#: Field numbers no OTLP message uses (theirs stop well below 100).
_NUMBERS = st.integers(100, 2**29 - 1).filter(lambda n: not 19000 <= n < 20000)


@pytest.mark.parametrize("signal", ["traces", "logs"])
def test_an_unknown_field_is_never_written_again(
    tmp_path_factory: pytest.TempPathFactory, signal: str
) -> None:
    kind = ExportTraceServiceRequest if signal == "traces" else ExportLogsServiceRequest
    seeds = TRACES if signal == "traces" else LOG_REQUESTS

    @WRITING
    @given(data=st.data(), secrets=st.lists(SECRET_SHAPES, min_size=1, max_size=6))
    def check(data: st.DataObject, secrets: list[tuple[str, str]]) -> None:
        requests = [kind.FromString(body) for body in seeds]
        every = [m for r in requests for m in _messages(r)]
        for text, _ in secrets:
            where = data.draw(st.sampled_from(every), "message")
            _plant(where, data.draw(_NUMBERS, "field number"), f"x {text} y")
        root = tmp_path_factory.mktemp("unknown")
        source = root / "in.otlp"
        source.write_bytes(_framed(requests))
        for name, args in (("out.pb", []), ("out.jsonl.zst", ["--format", "json", "--zstd"])):
            out = root / "out" / name
            result = CliRunner().invoke(cli, ["convert", str(source), "-o", str(out), *args])
            assert result.exit_code == 0, result.output
        written = b"".join(every_byte(root / "out").values())
        for text, part in secrets:
            assert part.encode() not in written, (text, signal)
        if signal == "traces":  # nothing else is lost: every span is there
            assert len(list(SpanReader(root / "out" / "out.pb"))) == len(
                [
                    s
                    for r in requests
                    for rs in r.resource_spans
                    for ss in rs.scope_spans
                    for s in ss.spans
                ]
            )

    check()
