"""Readers on inputs anyone may hand over: long lines, bombs, deep nesting.

Whatever the file holds, reading it costs bounded memory and time; a bad
record is reported with the file and its byte offset and costs only itself.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.store.reader import RecordReader


def record_agent_runs(path: Path, runs: int, spans_per_run: int, pad: int, **exporter: Any) -> None:
    """``runs`` agent runs recorded as users do, one export batch (one line or record) per run."""
    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path, **exporter))
    )
    previous = otel_replay.use_tracer_provider(provider)
    tracer = provider.get_tracer("bounds")
    try:
        for n in range(runs):
            with otel_replay.agent_run(f"agent-{n}", input="go") as run:
                for i in range(spans_per_run):
                    with tracer.start_as_current_span(f"step-{i}") as span:
                        span.set_attribute("pad", "x" * pad)
                run.record("done")
            provider.force_flush()
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()


def show_json(*paths: Path) -> tuple[int, list[dict[str, Any]], str]:
    result = CliRunner().invoke(cli, ["show", "--json", *map(str, paths)])
    runs = json.loads(result.stdout)["runs"] if result.stdout.strip() else []
    return result.exit_code, runs, result.stderr


# --- JSON lines are told by what they hold, not by how much fits in a buffer ----------


def test_json_lines_longer_than_the_sniffer_reads(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    record_agent_runs(path, runs=3, spans_per_run=300, pad=10_000, format="json")
    lines = path.read_bytes().splitlines()
    assert len(lines) == 3 and all(len(line) > 2_000_000 for line in lines)

    runs = otel_replay.load(path, strict=True)
    assert [r.steps[0].name for r in runs] == [f"invoke_agent agent-{n}" for n in range(3)]
    assert all(len(r.steps) == 301 for r in runs)

    code, shown, stderr = show_json(path)
    assert code == 0, stderr
    assert len(shown) == 3

    # The same file gzip-compressed: read as a stream, the first line is not in the buffer either.
    zipped = tmp_path / "big.jsonl.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes(), compresslevel=1))
    reader = RecordReader(zipped)
    assert sum(1 for _ in reader) == 3 * 301 and reader.problems == []
    assert reader.format == "gzip+jsonl"


def test_a_long_bad_first_line_costs_only_that_line(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    record_agent_runs(good, runs=2, spans_per_run=30, pad=10_000, format="json")
    bad_line = b'{"resourceSpans": [' + b'"x",' * 100_000 + b"\n"  # cut short: not JSON
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(bad_line + good.read_bytes())
    reader = RecordReader(path)
    assert sum(1 for _ in reader) == 2 * 31
    assert reader.format == "jsonl"
    (problem,) = reader.problems
    assert problem.offset == 0 and "bad JSON line" in problem.reason
