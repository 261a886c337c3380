"""A run that may have lost records to a damaged file says so: not ``full``, and what is missing.

The file holding a cut or corrupt record is known; the traces that record
held are not.  So every run with spans in that file (and, in a rotated set,
in the member written next, where a cut trace goes on) says records may be
missing; runs read only from sound files keep their verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.export.file_exporter import FileSpanExporter
from otel_replay.otlp import rotation as rot
from otel_replay.otlp.proto_writer import encode_request
from otel_replay.sources.files import expand
from tests.fixtures.agent import LOOKUP, Scripted, identity, support_agent
from tests.fixtures.recording import in_memory


def agent_runs(n: int) -> list[list[ReadableSpan]]:
    """The spans of ``n`` runs of the support agent, each ``full``: a model call, a tool, an answer."""
    runs = []
    for i in range(n):
        with in_memory() as spans, identity(f"u_{i}", f"s_{i}"):
            support_agent("Where is my order?", Scripted(LOOKUP), agent=f"agent-{i}")
        runs.append(list(spans.get_finished_spans()))
    return runs


def check(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["check", *map(str, args)])


def by_agent(runs: Any) -> dict[str, Any]:
    return {r.steps[0].name.removeprefix("invoke_agent "): r for r in runs}


def rotated_set(tmp_path: Path) -> tuple[list[Path], list[bytes], list[list[ReadableSpan]]]:
    """Four runs written by a rotating exporter, run 1 split over two members:

    member 0: run 0, run 1 (first half) | member 1: run 1 (second half), run 2 | live: run 3
    """
    runs = agent_runs(4)
    batches = [runs[0], runs[1][:2], runs[1][2:], runs[2], runs[3]]
    records = [4 + len(encode_request(b)) for b in batches]
    member = max(records[0] + records[1], records[2] + records[3])
    assert member < records[0] + records[1] + records[2]  # so each member holds two records
    live = tmp_path / "dump" / "traces.otlp"
    live.parent.mkdir()
    exporter = FileSpanExporter(live, max_megabytes=member / rot.MEGABYTE)
    for batch in batches:
        assert exporter.export(batch) is SpanExportResult.SUCCESS
    exporter.shutdown()
    members = [Path(p) for p in expand([live.parent])]
    assert len(members) == 3 and members[-1] == live
    return members, [m.read_bytes() for m in members], runs


def test_a_truncated_member_of_a_rotated_set(tmp_path: Path) -> None:
    members, contents, _ = rotated_set(tmp_path)
    whole = otel_replay.load(members[0].parent, strict=True)
    assert [r.kit.verdict for r in whole] == ["full"] * 4

    # The first member is cut in the middle of its second record (run 1's first half).
    first_record = 4 + int.from_bytes(contents[0][:4], "big")
    members[0].write_bytes(contents[0][: first_record + 10])
    with pytest.warns(otel_replay.LoadWarning, match="truncated record"):
        runs = otel_replay.load(members[0].parent)
    (problem,) = runs.problems
    assert (problem.path, problem.offset) == (str(members[0]), first_record)
    lost = f"records: {members[0]} cut at byte {first_record}"

    found = by_agent(runs)
    assert sorted(found) == ["agent-0", "agent-1", "agent-2", "agent-3"]
    cut = found["agent-1"]  # lost its first half: model call and tool call
    assert len(cut.steps) < 4
    assert cut.kit.verdict != "full" and not cut.replayable
    assert lost in cut.kit.missing
    assert any(str(problem) in p for p in cut.kit.problems)
    # Conservative: run 0 has spans in the damaged member, run 2 in the member after it.
    for name in ("agent-0", "agent-2"):
        assert lost in found[name].kit.missing and found[name].kit.verdict != "full"
    assert found["agent-3"].kit.verdict == "full" and lost not in found["agent-3"].kit.missing

    done = check(members[0].parent)
    assert done.exit_code == 1, done.output  # the check fails for those runs; the fault is theirs
    assert done.stderr.splitlines() == [f"otel-replay: error: {problem}"]
    reports = json.loads(check("--json", members[0].parent).stdout)["runs"]
    assert [lost in r["missing"] for r in reports] == [True, True, True, False]


def test_a_corrupt_record_in_the_middle_of_a_dump(tmp_path: Path) -> None:
    runs = agent_runs(3)
    path = tmp_path / "t.otlp"
    exporter = FileSpanExporter(path)
    for batch in runs:
        exporter.export(batch)
    exporter.shutdown()
    data = bytearray(path.read_bytes())
    second = 4 + int.from_bytes(data[:4], "big")
    data[second + 4 : second + 12] = b"\xff" * 8  # the second record's body no longer parses
    path.write_bytes(bytes(data))

    with pytest.warns(otel_replay.LoadWarning):
        loaded = otel_replay.load(path)
    (problem,) = loaded.problems
    assert problem.offset == second
    found = by_agent(loaded)
    assert sorted(found) == ["agent-0", "agent-2"]  # run 1's only record is gone
    for run in found.values():  # which traces that record held is unknown: both may lack spans
        assert f"records: {path} cut at byte {second}" in run.kit.missing
        assert run.kit.verdict != "full"

    assert check(path).exit_code == 1


def test_a_damaged_file_costs_nothing_to_runs_read_from_sound_files(tmp_path: Path) -> None:
    runs = agent_runs(2)
    sound, torn = tmp_path / "sound.otlp", tmp_path / "torn.otlp"
    for path, batch in ((sound, runs[0]), (torn, runs[1])):
        exporter = FileSpanExporter(path)
        exporter.export(batch)
        exporter.shutdown()
    torn.write_bytes(torn.read_bytes()[:-5])  # its only record is cut: nothing read from it

    with pytest.warns(otel_replay.LoadWarning):
        loaded = otel_replay.load(sound, torn)
    (run,) = loaded
    assert run.kit.verdict == "full" and run.replayable
    assert not any(m.startswith("records:") for m in run.kit.missing)
    assert len(loaded.problems) == 1

    done = check(sound, torn)
    assert done.exit_code == 2  # an input that gave nothing is still unreadable input
