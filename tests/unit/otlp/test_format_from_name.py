"""A file named for JSON holds JSON: ``convert -o runs.json`` and ``FileSpanExporter("runs.jsonl")``.

A newcomer ran ``otel-replay convert runs.otlp -o runs.json`` and found
protobuf in the ``.json`` file.  Unless a format is given, the output's name
says it: ``.json``, ``.jsonl`` and ``.ndjson`` (any case, a ``.zst`` after
them too) are JSON lines, anything else protobuf; a format given against the
name is refused.  Drawn over names of both kinds, through the CLI and the
exporter; every file written reads back to the same runs.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.export.file_exporter import format_for
from tests.fixtures.data import ROOT

EXAMPLE = ROOT / "examples/order_support/recordings/wrong_order.otlp"

STEMS = st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True)
JSON_NAMES = st.tuples(
    STEMS, st.sampled_from([".json", ".jsonl", ".ndjson", ".JSON", ".JsonL"])
).map("".join)
OTHER_NAMES = st.tuples(
    STEMS, st.sampled_from([".otlp", ".binpb", ".pb", ".proto", "", ".json.bak", ".data"])
).map("".join)
_numbers = itertools.count()


def is_json_lines(path: Path) -> bool:
    data = path.read_bytes()
    return data[:1] == b"{" and data.endswith(b"\n")


def run_ids(path: Path) -> list[str]:
    return sorted(r.run_id for r in otel_replay.load(path))


SETTINGS = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(name=st.one_of(JSON_NAMES, OTHER_NAMES))
def test_convert_writes_the_format_the_output_is_named_for(tmp_path: Path, name: str) -> None:
    out = tmp_path / str(next(_numbers)) / name
    out.parent.mkdir()
    done = CliRunner().invoke(cli, ["convert", str(EXAMPLE), "-o", str(out)])
    assert done.exit_code == 0, done.output
    wants_json = format_for(name) == "json"
    assert is_json_lines(out) == wants_json
    assert ("(json" if wants_json else "(proto") in done.output
    assert run_ids(out) == run_ids(EXAMPLE)


@SETTINGS
@given(name=JSON_NAMES)
def test_a_format_given_against_the_name_is_refused(tmp_path: Path, name: str) -> None:
    out = tmp_path / str(next(_numbers)) / name
    out.parent.mkdir()
    done = CliRunner().invoke(cli, ["convert", str(EXAMPLE), "-o", str(out), "--format", "proto"])
    assert done.exit_code == 2 and "not --format proto" in done.output
    assert not out.exists()


def test_the_newcomers_command(tmp_path: Path) -> None:
    out = tmp_path / "runs.json"
    done = CliRunner().invoke(cli, ["convert", str(EXAMPLE), "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert is_json_lines(out) and run_ids(out) == run_ids(EXAMPLE)


@SETTINGS
@given(name=st.one_of(JSON_NAMES, OTHER_NAMES), zstd=st.booleans())
def test_the_exporter_writes_the_format_its_file_is_named_for(
    tmp_path: Path, name: str, zstd: bool
) -> None:
    path = tmp_path / str(next(_numbers)) / (name + (".zst" if zstd else ""))
    path.parent.mkdir()
    exporter = otel_replay.FileSpanExporter(path, compression="zstd" if zstd else None)
    assert exporter.format == (format_for(name) or "proto")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("chat gpt-4o-mini"):
        pass
    provider.shutdown()
    if not zstd:
        assert is_json_lines(path) == (format_for(name) == "json")
    (run,) = otel_replay.load(path)
    assert run.steps[0].name == "chat gpt-4o-mini"
    explicit = otel_replay.FileSpanExporter(path, format="proto")
    assert explicit.format == "proto"  # a format given is kept: the app is never refused
