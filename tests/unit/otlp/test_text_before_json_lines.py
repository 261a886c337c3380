"""A line of text before a JSON-lines dump (a shell's or a tool's words written
first) costs that line only: every run after it is read, and the line is named
with its byte offset.  A text file with a brace on its second line is still no
trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.otlp.sniff import sniff
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import TESTS

# Recorded by the openinference-openai corpus script (see tests/data/README.md).
DUMP = TESTS / "data/thirdparty_formats/openinference_openai/chat/sync/traces.otlp.jsonl"

#: One line of text as a terminal or a log would show it: no line break, not JSON.
_LINES = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="{["),
    min_size=1,
    max_size=200,
).filter(lambda t: t.strip() != "") | st.sampled_from(
    ["Exporting traces...", "+ otelcol --config c.yaml", "WARNING:root:x\r", "\tnote"]
)


@pytest.mark.filterwarnings("ignore::otel_replay.LoadWarning")
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(line=_LINES)
def test_a_text_line_first_costs_that_line(tmp_path: Path, line: str) -> None:
    clean = [(r.run_id, len(r.steps)) for r in otel_replay.load(DUMP)]
    path = tmp_path / "dump.jsonl"
    path.write_bytes(line.encode() + b"\n" + DUMP.read_bytes())
    reader = SpanReader(path)
    spans = list(reader)
    assert len(spans) == len(list(SpanReader(DUMP)))
    assert [p.offset for p in reader.problems] == [0]
    runs = otel_replay.load(path)
    assert [(r.run_id, len(r.steps)) for r in runs] == clean


@pytest.mark.filterwarnings("ignore::otel_replay.LoadWarning")
def test_a_line_of_one_character_first_costs_that_line(tmp_path: Path) -> None:
    """A line's first byte reads as a varint length (``U`` is 85, ``-`` is 45) that may
    chain through the JSON lines after it by chance: every printable character is tried."""
    expected = len(list(SpanReader(DUMP)))
    path = tmp_path / "dump.jsonl"
    wrong = []
    for line in (chr(c) for c in range(0x21, 0x7F)):
        if line in "{[":
            continue
        path.write_bytes(line.encode() + b"\n" + DUMP.read_bytes())
        reader = SpanReader(path)
        if len(list(reader)) != expected or [p.offset for p in reader.problems] != [0]:
            wrong.append(line)
    assert wrong == []


@given(line=_LINES, second=st.sampled_from(["{not json}", '{"a": 1}', "{", '{"resource": 2}']))
def test_text_with_a_brace_is_no_trace(line: str, second: str) -> None:
    head = (line + "\n" + second + "\n").encode()
    assert sniff(head, None, None) != "jsonl" or head.lstrip()[:1] in (b"{", b"[")
