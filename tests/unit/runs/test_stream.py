"""Reading a dump a window at a time gives the runs a whole load gives.

Every third-party case (spans and log records) is converted to one 4-byte
framed dump, then read with windows so small that each trace is a window of
its own: client-only traces must still be stitched into their conversation,
a call recorded twice still merged, log events still joined.  Compared as
``ls`` summaries (every field a listing shows) with ``load`` of the same
dump.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import otel_replay
from otel_replay.commands.check import check_run, check_runs
from otel_replay.export.convert import convert
from otel_replay.runs import stream
from otel_replay.runs.load import read_runs
from otel_replay.runs.summary import RunSummary, summarize
from otel_replay.sources.reader import trace_index
from tests.fixtures.agent import LOOKUP, record_run
from tests.fixtures.data import THIRDPARTY, THIRDPARTY_FORMATS, found

CASES = sorted(
    [p.parent for p in found(THIRDPARTY, "*/*/traces.otlp.jsonl")]
    + [p.parent for p in found(THIRDPARTY_FORMATS, "*/*/*/traces.otlp.jsonl")]
)


def framed(case: Path, out: Path) -> Path:
    inputs = [case / n for n in ("traces.otlp.jsonl", "logs.otlp.jsonl") if (case / n).exists()]
    convert(inputs, out)
    return out


def per_trace(dump: Path) -> list[bytes]:
    """The framed records of a dump of spans, re-cut into one record per trace."""
    data, offset, out = dump.read_bytes(), 0, []
    while offset < len(data):
        size = int.from_bytes(data[offset : offset + 4], "big")
        request = ExportTraceServiceRequest.FromString(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
        tids = {
            s.trace_id for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
        }
        for tid in sorted(tids):
            one = ExportTraceServiceRequest()
            one.CopyFrom(request)
            for rs in one.resource_spans:
                for ss in rs.scope_spans:
                    keep = [s for s in ss.spans if s.trace_id == tid]
                    del ss.spans[:]
                    ss.spans.extend(keep)
            body = one.SerializeToString()
            out.append(len(body).to_bytes(4, "big") + body)
    return out


def loaded(*paths: Path) -> list[RunSummary]:
    runs = otel_replay.load(*paths)
    return sorted((summarize(r) for r in runs), key=lambda s: (s.start_ns, s.run_id))


def windowed(*paths: Path, jobs: int = 1) -> list[RunSummary]:
    mapped = stream.map_runs([str(p) for p in paths], summarize, jobs=jobs, window_bytes=1)
    assert mapped.problems == []
    assert mapped.workers == (jobs if jobs > 1 else 0)
    return sorted(mapped.values, key=lambda s: (s.start_ns, s.run_id))


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_window_per_trace_gives_the_runs_of_a_whole_load(case: Path, tmp_path: Path) -> None:
    dump = framed(case, tmp_path / "dump.otlp")
    whole = loaded(dump)
    assert whole
    assert windowed(dump) == whole
    # check reads the same way: the same reports, in the same order.
    checks, others, problems = check_runs([str(dump)], jobs=1, window_bytes=1)
    assert [c.to_json() for c in checks] == [check_run(r).to_json() for r in otel_replay.load(dump)]
    assert others == [] and problems == []
    if (case / "logs.otlp.jsonl").exists() and stream.windows([str(dump)], window_bytes=1) is None:
        # Log records that name no span join one by time: the dump is read whole.
        spanless = [
            r
            for line in (case / "logs.otlp.jsonl").open()
            for rl in json.loads(line)["resourceLogs"]
            for sl in rl["scopeLogs"]
            for r in sl["logRecords"]
            if not r.get("spanId")
        ]
        assert spanless


def test_client_only_traces_of_other_windows_are_stitched(tmp_path: Path) -> None:
    """The calls of a conversation, one trace each, far apart in a dump of agent runs."""
    case = THIRDPARTY / "openllmetry_openai" / "chat_sync"
    pieces = per_trace(framed(case, tmp_path / "pieces.otlp"))
    assert len(pieces) == 3
    dump = tmp_path / "dump.otlp"
    for piece in pieces:
        record_run(dump, LOOKUP)
        with open(dump, "ab") as f:
            f.write(piece)
    record_run(dump, LOOKUP)
    planned = stream.windows([str(dump)], window_bytes=1)
    assert planned is not None and len(planned) == 7  # each call is a window of its own
    whole = loaded(dump)
    assert len(whole) == 5  # four agent runs, one conversation of three calls
    assert windowed(dump) == whole
    # Two worker processes give the same.
    assert windowed(dump, jobs=2) == whole
    checks, _, _ = check_runs([str(dump)], jobs=2, window_bytes=1)
    assert [c.run_id for c in checks] == [s.run_id for s in whole]
    assert [c.kit.verdict for c in checks] == [s.verdict for s in whole]


def test_only_client_only_traces_are_held_back(tmp_path: Path) -> None:
    dump = tmp_path / "dump.otlp"
    for _ in range(4):
        record_run(dump, LOOKUP)
    with open(dump, "ab") as f:
        f.write(
            framed(
                THIRDPARTY / "openllmetry_openai" / "chat_sync", tmp_path / "p.otlp"
            ).read_bytes()
        )
    planned = stream.windows([str(dump)], window_bytes=1)
    assert planned is not None
    pieces = [stream.read_window([str(dump)], ids) for ids in planned]
    kept = [run for p in pieces for run in p.runs]
    assert len(kept) == 4 and all(r.steps[0].kind == "agent" for r in kept)
    held = sorted(facts.run_id for p in pieces for facts, _ in p.held_back)
    whole = read_runs([str(dump)])
    assert held == sorted(tid for r in whole if r.steps[0].kind == "model" for tid in r.trace_ids)
    assert len(held) == 3


def test_a_trace_spread_over_files_and_windows_is_one_run(tmp_path: Path) -> None:
    """A trace whose spans are in two rotated files is read whole in its window."""
    one = tmp_path / "a.otlp"
    record_run(one, LOOKUP)
    data = one.read_bytes()
    # Split between records: the first half of the requests in one file, the rest in another.
    cut, offset = 0, 0
    while offset < len(data) // 2:
        offset += 4 + int.from_bytes(data[offset : offset + 4], "big")
        cut = offset
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "x.otlp").write_bytes(data[cut:])
    (tmp_path / "dir" / "w.otlp").write_bytes(data[:cut])
    whole = loaded(tmp_path / "dir")
    assert len(whole) == 1 and whole[0].steps == loaded(one)[0].steps
    assert windowed(tmp_path / "dir") == whole


def test_an_input_of_few_windows_is_read_whole(tmp_path: Path) -> None:
    """Loading it whole is faster, and it fits in memory: no index is made for it."""
    from otel_replay.otlp import index

    dump = tmp_path / "dump.otlp"
    for _ in range(3):
        record_run(dump, LOOKUP)
    size = dump.stat().st_size
    assert stream.windows([str(dump)], window_bytes=size // stream.MIN_WINDOWS + 1) is None
    assert not index.index_path(dump).exists()
    planned = stream.windows([str(dump)], window_bytes=size // stream.MIN_WINDOWS)
    assert planned is not None and len(planned) >= 2
    assert index.index_path(dump).exists()


def test_input_that_cannot_be_windowed_is_read_whole(tmp_path: Path) -> None:
    case = THIRDPARTY / "openllmetry_openai" / "chat_sync"
    jsonl = case / "traces.otlp.jsonl"
    assert stream.windows([str(jsonl)], window_bytes=1) is None
    assert windowed(jsonl) == loaded(jsonl)
    # A torn dump: no index, read whole, the fault reported and the good runs kept.
    dump = tmp_path / "torn.otlp"
    record_run(dump, LOOKUP)
    with open(dump, "ab") as f:
        f.write(b"\x00\x00\x10\x00partial")
    assert stream.windows([str(dump)], window_bytes=1) is None
    mapped = stream.map_runs([str(dump)], summarize, window_bytes=1)
    assert len(mapped.values) == 1
    assert [p.offset for p in mapped.problems] == [dump.stat().st_size - 11]


def test_iter_runs_hands_the_runs_over_in_batches(tmp_path: Path) -> None:
    dump = tmp_path / "dump.otlp"
    for piece in per_trace(framed(THIRDPARTY / "openllmetry_openai" / "chat_sync", tmp_path / "p")):
        record_run(dump, LOOKUP)
        with open(dump, "ab") as f:
            f.write(piece)
    batches = list(otel_replay.iter_runs(str(dump), window_bytes=1))
    assert len(batches) == 4  # three windows of an agent run each, then the conversation
    assert [len(b) for b in batches] == [1, 1, 1, 1]
    assert batches[-1][0].trace_ids == [t for r in batches[-1] for t in r.trace_ids]
    assert len(batches[-1][0].trace_ids) == 3
    got = sorted((r.run_id, [s.span_id for s in r.steps]) for b in batches for r in b)
    assert got == sorted((r.run_id, [s.span_id for s in r.steps]) for r in otel_replay.load(dump))


def test_a_dump_of_client_only_traces_is_grouped_into_conversations(tmp_path: Path) -> None:
    """Two conversations, their calls interleaved one trace per window: read back per conversation."""
    case = THIRDPARTY / "openllmetry_openai" / "chat_sync"
    first = per_trace(framed(case, tmp_path / "p"))
    dump = tmp_path / "dump.otlp"
    for piece in first:
        with open(dump, "ab") as f:
            f.write(piece)
    # The same conversation again, an hour later: another run.
    later = tmp_path / "later.otlp"
    lines = []
    for line in (case / "traces.otlp.jsonl").read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["traceId"] = "f" + span["traceId"][1:]
                    for key in ("startTimeUnixNano", "endTimeUnixNano"):
                        span[key] = str(int(span[key]) + 3600 * 10**9)
        lines.append(json.dumps(doc))
    (tmp_path / "later.jsonl").write_text("\n".join(lines) + "\n")
    convert([tmp_path / "later.jsonl"], later)
    with open(dump, "ab") as f:
        for piece in per_trace(later):
            f.write(piece)
    planned = stream.windows([str(dump)], window_bytes=1)
    assert planned is not None and len(planned) == 6
    pieces = [stream.read_window([str(dump)], ids) for ids in planned]
    assert all(not p.runs and len(p.held_back) == 1 for p in pieces)
    groups = stream.conversations([h for p in pieces for h in p.held_back])
    assert sorted(map(len, groups)) == [3, 3]
    whole = loaded(dump)
    assert len(whole) == 2 and [len(s.trace_ids) for s in whole] == [3, 3]
    assert windowed(dump) == whole
    assert windowed(dump, jobs=2) == whole


def test_log_records_that_name_no_span_keep_the_dump_whole(tmp_path: Path) -> None:
    """They join a span by time, maybe one of another window: the index counts them."""
    by_id = framed(THIRDPARTY / "openllmetry_openai" / "events_sync", tmp_path / "by_id.otlp")
    by_time = framed(
        THIRDPARTY / "anthropic_openllmetry" / "events_sync", tmp_path / "by_time.otlp"
    )
    for dump, spanless in ((by_id, False), (by_time, True)):
        idx = trace_index(str(dump))
        assert idx is not None and (idx.spanless_logs > 0) is spanless
        assert (stream.windows([str(dump)], window_bytes=1) is None) is spanless
        assert windowed(dump) == loaded(dump)


def test_a_twin_that_recorded_the_answer_lends_it_to_the_one_kept() -> None:
    """The kept copy of a call traced twice has no output; the next call continues the other's."""
    from otel_replay.runs.double_spans import TwinFacts
    from otel_replay.runs.stitch import PieceFacts

    def piece(run_id: str, start: int, **hashes: object) -> PieceFacts:
        fields = {"prefixes": (), "before_answer": None, "successors": (), "open": None}
        fields.update(hashes)
        return PieceFacts(run_id, start, "process", None, **fields)  # type: ignore[arg-type]

    def twin(answered: bool, richness: int) -> TwinFacts:
        outputs = ("answer",) if answered else None
        return TwinFacts(b"call", 10, 20, "m", outputs, answered, ((richness, 0), 10.0))

    held = [
        (piece("kept", 10, prefixes=(b"question",), open=b"question"), twin(False, 9)),
        (piece("twin", 11, prefixes=(b"question",), successors=(b"answered",)), twin(True, 1)),
        (piece("next", 30, prefixes=(b"question", b"answered")), None),
    ]
    assert stream.conversations(held, batch=1) == [["kept", "twin", "next"]]
    # Without the twin's answer the next call would continue the kept copy only by its input.
    alone = [(held[0][0], None), held[2]]
    assert stream.conversations(alone, batch=1) == [["kept"], ["next"]]


def test_a_dump_that_grows_while_it_is_read_is_read_as_planned(tmp_path: Path) -> None:
    """The agent goes on recording during a listing: no window indexes the dump again."""
    from otel_replay.otlp import index

    dump = tmp_path / "dump.otlp"
    for user in ("u_1", "u_2", "u_3"):
        record_run(dump, LOOKUP, user=user)
    batches = otel_replay.iter_runs(str(dump), window_bytes=1)
    first = next(batches)
    indexed = index.index_path(dump).read_bytes()
    record_run(dump, LOOKUP, user="u_4")  # appended: size and mtime change
    rest = list(batches)
    assert index.index_path(dump).read_bytes() == indexed  # not indexed again
    users = [r.fingerprint["user.id"] for b in [first, *rest] for r in b]
    assert users == ["u_1", "u_2", "u_3"]  # the dump as planned
    # A fresh read sees the new run.
    assert len(otel_replay.load(dump)) == 4


@pytest.mark.parametrize("fmt", ["proto", "json"])
def test_zstd_records_in_the_length_prefix_are_indexed_and_windowed(
    fmt: str, tmp_path: Path
) -> None:
    """The Collector's ``compression: zstd``: each record compressed inside its frame."""
    case = THIRDPARTY / "openllmetry_openai" / "events_sync"  # spans and log records
    inputs = [case / "traces.otlp.jsonl", case / "logs.otlp.jsonl"]
    dump = tmp_path / f"dump.{fmt}.zst"
    convert(inputs, dump, format=fmt, compression="zstd")
    assert dump.read_bytes()[4:8] == b"\x28\xb5\x2f\xfd"  # a zstd frame inside the prefix
    idx = trace_index(str(dump))
    assert idx is not None and len(idx.trace_ids()) == 3
    planned = stream.windows([str(dump)], window_bytes=1)
    assert planned is not None
    whole = loaded(dump)
    assert windowed(dump) == whole == loaded(framed(case, tmp_path / "plain.otlp"))
    (one,) = otel_replay.load(dump, trace_id=idx.trace_ids()[0])
    assert one.trace_ids == [idx.trace_ids()[0]]


def test_a_dump_whose_index_cannot_be_kept_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only place: every window would index the dump again, so it is read whole."""
    from otel_replay.otlp import index

    dump = tmp_path / "dump.otlp"
    record_run(dump, LOOKUP)
    record_run(dump, LOOKUP)
    monkeypatch.setattr(index, "save", lambda dump, idx: None)  # as when the write is refused
    assert stream.windows([str(dump)], window_bytes=1) is None
    assert windowed(dump) == loaded(dump)
    assert not index.index_path(dump).exists()


def test_commands_that_name_a_run_keep_only_that_run_of_a_big_dump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """show/diff/check --run on a dump read a window at a time give what a whole load gives."""
    from click.testing import CliRunner

    from otel_replay.cli.main import cli
    from tests.fixtures.agent import call, say

    dump = tmp_path / "dump.otlp"
    record_run(dump, LOOKUP, user="u_1")
    record_run(dump, [call("lookup_order", "c1", query="other"), say("Nope.")], user="u_2")
    record_run(dump, LOOKUP, user="u_3")
    whole = otel_replay.load(dump)

    def run(*args: str) -> tuple[int, str, str]:
        done = CliRunner().invoke(cli, list(args))
        return done.exit_code, done.stdout, done.stderr

    expected = {r.run_id: run("show", "--json", "--run", r.run_id, str(dump)) for r in whole}
    diff_expected = run("diff", "--json", f"{dump}#{whole[0].run_id}", f"{dump}#{whole[1].run_id}")

    read: list[list[str]] = []
    real = stream.read_window

    def read_window(paths: list[str], ids: list[str], *rest: object) -> stream.Piece:
        read.append(list(ids))
        return real(paths, ids, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(stream, "WINDOW_BYTES", 1)
    monkeypatch.setattr(stream, "read_window", read_window)
    for r in whole:
        code, out, err = run("show", "--json", "--run", r.run_id[:10], str(dump))
        assert (code, out, err) == expected[r.run_id]
        assert json.loads(out)["runs"][0]["run_id"] == r.run_id
    assert len(read) == 3 * 3  # every window (a run each), once per command
    assert (
        run("diff", "--json", f"{dump}#{whole[0].run_id}", f"{dump}#{whole[1].run_id}")
        == diff_expected
    )
    assert diff_expected[0] == 1  # they differ
    code, _, err = run("show", "--run", "nope", str(dump))
    assert code == 2 and all(r.run_id in err for r in whole)
