"""A name's kind is told once, by open_source: what each kind stands for and reads."""

from __future__ import annotations

import os
import struct
import tempfile
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_replay
from otel_replay.otlp.records import Record
from otel_replay.sources import Source, open_source
from otel_replay.sources.files import expand, is_database, is_search, is_stream
from otel_replay.sources.reader import RecordReader
from otel_replay.sources.source import SearchFilter

#: Each scheme a name may start with, and the kind it makes.
SCHEMES = {
    "http://": "url",
    "https://": "url",
    "tempo://": "tempo",
    "tempos://": "tempo",
    "jaeger://": "jaeger",
    "jaegers://": "jaeger",
    "clickhouse://": "clickhouse",
    "clickhouses://": "clickhouse",
    "chdb://": "clickhouse",
}

_REST = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF, exclude_characters="#"))


@given(scheme=st.sampled_from(sorted(SCHEMES)), rest=_REST)
def test_a_name_with_a_scheme_is_of_its_scheme_s_kind(scheme: str, rest: str) -> None:
    name = scheme + rest
    source = open_source(name)
    assert source.kind == SCHEMES[scheme] and source.name == name
    assert not source.local and is_stream(name)
    assert is_database(name) == (source.kind == "clickhouse")
    assert is_search(name) == (source.kind in ("tempo", "jaeger"))
    assert source.holds_bytes == (source.kind != "clickhouse")


def test_stdin_is_its_own_kind() -> None:
    assert open_source("-").kind == "stdin" and is_stream("-")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30)
@given(name=st.text(st.characters(whitelist_categories=("L", "N")), min_size=1, max_size=12))
def test_a_path_is_a_file_a_folder_or_a_pattern(tmp_path: Path, name: str) -> None:
    top = Path(tempfile.mkdtemp(dir=tmp_path))
    (top / "dir").mkdir()
    (top / name).write_bytes(b"")
    assert open_source(top / name).kind == "file"
    assert open_source(str(top / "dir")).kind == "folder"
    assert open_source(str(top / f"{name}*")).kind == "glob"
    assert open_source(str(top / "missing" / name)).kind == "file"  # its read says why
    for path in (top / name, top / "dir"):
        assert open_source(path).local and not is_stream(str(path))


def _traces(count: int) -> list[ReadableSpan]:
    """``count`` traces of two spans each."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("sources")
    for i in range(count):
        with tracer.start_as_current_span(f"root {i}"), tracer.start_as_current_span("child"):
            pass
    return list(exporter.get_finished_spans())


def _be32(spans: list[ReadableSpan]) -> bytes:
    message = encode_spans(spans).SerializeToString()
    return struct.pack(">I", len(message)) + message


def _keys(records: list[Record]) -> list[tuple[str, str]]:
    return [(r.trace_id, getattr(r, "span_id", "")) for r in records]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=25)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    rotated=st.booleans(),
    data=st.data(),
)
def test_a_folder_or_pattern_reads_what_its_files_hold_in_their_order(
    tmp_path: Path, sizes: list[int], rotated: bool, data: st.DataObject
) -> None:
    top = Path(tempfile.mkdtemp(dir=tmp_path))
    names = [f"t{i}.otlp" for i in range(len(sizes))]
    if rotated:  # a live file and its backups: the backups first, oldest first
        names = ["t.otlp"] + [f"t-2024-01-0{i}T00-00-00.000.otlp" for i in range(1, len(sizes))]
    for name, size in zip(names, sizes, strict=True):
        (top / name).write_bytes(_be32(_traces(size)))
    (top / "notes.md").write_text("not traces")
    for named in (str(top), str(top / "*.otlp")):
        source = open_source(named)
        parts = source.parts()
        assert [p.name for p in parts] == expand([named])
        assert all(p.kind == "file" and p.found for p in parts)
        expected: list[Record] = [r for p in expand([named]) for r in RecordReader(p)]
        assert _keys(list(source.records())) == _keys(expected)
        assert source.problems == []
        traces = sorted({r.trace_id for r in expected})
        wanted = data.draw(st.sets(st.sampled_from(traces)), label="wanted")
        again = open_source(named)
        only = _keys(list(again.records(wanted)))
        assert only == [k for k in _keys(expected) if k[0] in wanted] and again.problems == []


@given(name=st.text(min_size=1, max_size=20).filter(lambda n: not set(n) & set("\x00*?[")))
def test_a_source_that_cannot_be_read_says_why_in_its_problems(name: str) -> None:
    missing = os.path.join(tempfile.gettempdir(), "no such folder", name.replace(os.sep, "_"))
    source = open_source(missing)
    assert list(source.records()) == []
    (problem,) = source.problems
    assert "cannot read" in problem.reason or "no known format" in problem.reason


_WORD = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=10)


@given(
    since=st.none() | _WORD, agent=st.none() | _WORD, tool=st.none() | _WORD, error=st.booleans()
)
def test_a_search_takes_the_filters_its_backend_searches_by(
    since: str | None, agent: str | None, tool: str | None, error: bool
) -> None:
    search = SearchFilter(since, agent, tool, error)
    filters = {"since": since, "agent": agent, "tool": tool, "error": "1" if error else None}
    given_filters = {k: v for k, v in filters.items() if v}

    def query(source: Source) -> dict[str, str]:
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(source.name).query))

    tempo = open_source("tempo://tempo:3200?limit=5").narrowed(search)
    assert tempo.kind == "tempo" and query(tempo) == {"limit": "5", **given_filters}
    jaeger = open_source("jaeger://jaeger:16686?service=s").narrowed(search)
    assert jaeger.kind == "jaeger"
    assert query(jaeger) == {"service": "s", **({"since": since} if since else {})}
    for name in ("-", "https://host/api/traces/1", "chdb:///db", "run.otlp"):
        source = open_source(name)
        assert source.narrowed(search) is source


def test_a_source_reads_as_its_name_does(tmp_path: Path) -> None:
    path = tmp_path / "t.otlp"
    path.write_bytes(_be32(_traces(3)))
    by_name, by_source = RecordReader(str(path)), RecordReader(open_source(path))
    assert _keys(list(by_name)) == _keys(list(by_source)) != []
    assert by_name.format == by_source.format == "be32"


@given(
    scheme=st.sampled_from(["http://", "https://", "tempo://", "jaeger://"]),
    rest=st.text(alphabet="[]:@/?x1.", max_size=12),
)
@pytest.mark.filterwarnings("ignore::otel_replay.LoadWarning")
def test_a_url_that_does_not_parse_is_a_problem_of_its_own(scheme: str, rest: str) -> None:
    """An unclosed IPv6 bracket and the like: the input's fault, said, never a traceback."""
    name = scheme + "[" + rest
    try:
        urllib.parse.urlsplit(name)
    except ValueError:
        pass
    else:
        assume(False)  # one that parses would be fetched
    assert open_source(name).name == name
    runs = otel_replay.load(name)
    assert not list(runs) and len(runs.problems) == 1
    if scheme.startswith("http"):
        assert "not a URL" in str(runs.problems[0])
