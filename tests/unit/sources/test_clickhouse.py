"""Runs read from ClickHouse tables the Collector's clickhouseexporter fills.

The tables are the exporter's own, in embedded ClickHouse (chdb), filled with
the exporter's row mapping (``tests/fixtures/clickhouse.py``): every conformance case
must read back as the same runs as its files; a server is reached through
clickhouse-connect, over ClickHouse's HTTP interface on 127.0.0.1.  The chdb
tier: ``pytest -m chdb`` in the environment ``.ci/run`` makes (chdb and
clickhouse-connect beside the project).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.otlp.errors import FormatError
from otel_replay.sources.reader import RecordReader
from tests.conformance.checks import find_cases
from tests.fixtures.cli import cli_process
from tests.fixtures.clickhouse import Schema, create, fill, insert
from tests.fixtures.clickhouse_http import Seen, clickhouse_http
from tests.fixtures.data import ROOT
from tests.fixtures.example_replay import replays_alike

pytestmark = pytest.mark.chdb

RECORDING = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
CASES = find_cases()
#: One case a stack, for the other tables.
FIRST_OF_STACK = list({c.id.split("/")[0]: c for c in reversed(CASES)}.values())


def _same(a: Any, b: Any) -> bool:
    """Equal, a number equal to a number of the other type too (the exporter writes the
    double 1.0 as ``1``)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == b and not isinstance(b, bool)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def _runs(*sources: str | Path) -> list[dict[str, Any]]:
    runs = otel_replay.load(*sources, strict=True)
    return [{**r.to_json(), "sources": None} for r in runs]


def _read_alike(name: str, files: list[Path]) -> bool:
    """The runs of the table ``name`` are those of ``files``, but for the attribute types
    the table leaves ambiguous, which its runs say: each names a step attribute the files
    hold as the list it was read as."""
    table = otel_replay.load(name, strict=True)
    local = otel_replay.load(*files, strict=True)
    said = set()
    for run, same in zip(table, local, strict=True):
        for step, other in zip(run.steps, same.steps, strict=True):
            for note in step.notes:
                (attribute,) = re.findall(r"attribute '([^']+)'", note)
                assert type(other.attributes[attribute]) is list
                assert step.attributes[attribute] == other.attributes[attribute]
                said.add(f"{step.label()}: {note}")
    shown = [{**r.to_json(), "sources": None} for r in table]
    for run_json in shown:
        run_json["problems"] = [p for p in run_json["problems"] if p not in said]
    return _same(shown, _runs(*files))


def _records(*files: Path) -> list[Any]:
    return [r for f in files for r in RecordReader(str(f))]


#: Case id -> why the exporter's table reads it other than its files, one line.  Strict:
#: a fix makes the case pass, and the test fails until its entry is removed.
TABLE_GAPS: dict[str, str] = {
    "openai_agents_openinference/sync@plain_text": (
        "a tool's number result (42) recorded as a typed attribute reads back as its text: the "
        "exporter keeps every attribute value as a string, and output.value has no type a "
        "convention fixes (the int 42 and the text '42' are one text in the table)"
    ),
}


def _case(case: Any) -> Any:
    if case.id in TABLE_GAPS:
        mark = pytest.mark.xfail(strict=True, reason=TABLE_GAPS[case.id])
        return pytest.param(case, id=case.id, marks=[mark])
    return pytest.param(case, id=case.id)


@pytest.mark.parametrize("case", [_case(c) for c in CASES])
def test_every_conformance_case_reads_back_from_the_exporters_table_as_from_its_files(
    case: Any, tmp_path: Path
) -> None:
    files = case.trace_files()
    name = fill(tmp_path / "db", _records(*files))
    assert _read_alike(name, files)


@pytest.mark.parametrize("schema", ["2023", "json"])
@pytest.mark.parametrize("case", FIRST_OF_STACK, ids=lambda c: c.id)
def test_the_tables_of_older_exporters_and_of_json_true_read_back_alike(
    case: Any, schema: Schema, tmp_path: Path
) -> None:
    files = case.trace_files()
    name = fill(tmp_path / "db", _records(*files), schema)
    assert _read_alike(name, files)


def test_a_recorded_run_replays_from_clickhouse_as_from_its_file(tmp_path: Path) -> None:
    (local,) = otel_replay.load(RECORDING)
    (back,) = otel_replay.load(fill(tmp_path / "db", _records(RECORDING)), strict=True)
    assert back.kit.verdict == local.kit.verdict == "full" and back.replayable

    assert "#4421" in replays_alike(local, back)


def test_the_cli_lists_shows_and_converts_a_clickhouse_table(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "openai_agents_otel/two_runs")
    files = [str(f) for f in case.trace_files()]
    name = fill(tmp_path / "db", _records(*map(Path, files)))

    listed = cli_process("ls", name, "--json")
    assert listed.returncode == 0, listed.stderr
    want = cli_process("ls", *files, "--json")
    assert json.loads(listed.stdout) == json.loads(want.stdout)
    run_id = json.loads(want.stdout)["runs"][1]["run_id"]

    shown = cli_process("show", name, "--run", run_id[:8], "--json")
    assert shown.returncode == 0, shown.stderr
    (run,) = json.loads(shown.stdout)["runs"]
    assert run["run_id"] == run_id and run["verdict"] == "full"

    out = tmp_path / "exported.binpb"
    exported = cli_process("convert", name, "-o", str(out))
    assert exported.returncode == 0, exported.stderr
    assert _same(_runs(out), _runs(*files))


def test_a_run_asked_for_is_read_alone_within_its_days(tmp_path: Path) -> None:
    """Only the trace asked for comes back; the exporter's trace-id table bounds its time."""
    from otel_replay.sources.clickhouse.database import connect
    from otel_replay.sources.clickhouse.spans import _traces

    case = next(c for c in CASES if c.id == "openai_agents_otel/two_runs")
    files = case.trace_files()
    name = fill(tmp_path / "db", _records(*files))
    _, second = otel_replay.load(*files)
    (picked,) = otel_replay.load(name, trace_id=second.run_id[:10], strict=True)
    assert picked.to_json() | {"sources": None} == second.to_json() | {"sources": None}

    where, params = _traces(connect(name), [second.run_id])
    assert "Timestamp >=" in where
    assert params["start"] <= second.start_ns // 10**9 <= second.end_ns // 10**9 < params["end"]


def test_a_clickhouse_server_is_read_through_clickhouse_connect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(tmp_path / "db", _records(RECORDING))
    monkeypatch.setenv("OTEL_REPLAY_CLICKHOUSE_PASSWORD", "s3cret-pw")
    with clickhouse_http(str(tmp_path / "db"), password="s3cret-pw") as (host, seen):
        back = _runs(f"clickhouse://reader@{host}/otel")
    assert _same(back, _runs(RECORDING))
    assert set(seen.users) == {("reader", "s3cret-pw")}
    assert any("FROM otel.otel_traces" in q for q in seen.queries)


def test_a_refused_password_is_one_error_that_never_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(tmp_path / "db", _records(RECORDING))
    monkeypatch.setenv("OTEL_REPLAY_CLICKHOUSE_PASSWORD", "wrong-pw-123")
    with clickhouse_http(str(tmp_path / "db"), password="s3cret-pw") as (host, _):
        shown = cli_process(
            "show",
            f"clickhouse://reader:url-pw-456@{host}/otel",
            env={"OTEL_REPLAY_CLICKHOUSE_PASSWORD": "wrong-pw-123"},
        )
    assert shown.returncode == 2
    assert "Authentication failed" in shown.stderr
    assert "wrong-pw-123" not in shown.stderr and "url-pw-456" not in shown.stderr


def test_what_is_not_the_exporters_table_is_said_so(tmp_path: Path) -> None:
    held = create(tmp_path / "db")
    held.query("CREATE TABLE otel.other (x Int32) ENGINE = MergeTree ORDER BY x")
    held.close()
    base = f"chdb://{tmp_path / 'db'}?database=otel"
    for name, said in (
        (f"{base}&table=missing", "no table otel.missing"),
        (f"{base}&table=other", "not the clickhouseexporter's traces table"),
        (f"{base}&table=x;DROP", "is not a plain database or table name"),
    ):
        runs = otel_replay.load(name)
        assert len(runs.problems) == 1 and said in str(runs.problems[0]), name
    assert otel_replay.load(base, strict=True) == []  # the exporter's tables, empty


def test_a_row_that_is_no_span_costs_that_row_only(tmp_path: Path) -> None:
    held = create(tmp_path / "db")
    insert(held, _records(RECORDING))
    held.query(
        "INSERT INTO otel.otel_traces (Timestamp, TraceId, SpanId, SpanName)"
        " VALUES (now64(9), 'not-hex', 'zz', 'forged')"
    )
    held.close()
    (back,) = runs = otel_replay.load(f"chdb://{tmp_path / 'db'}?database=otel")
    (problem,) = runs.problems
    assert "not-hex" in problem.reason and str(problem).endswith(f"at row {problem.offset}")
    # The run is whole, and says that a record of its source was lost.
    (local,) = otel_replay.load(RECORDING)
    assert _same([s.to_json() for s in back.steps], [s.to_json() for s in local.steps])
    assert f"cut at row {problem.offset}" in " ".join(back.kit.missing)


# --- ls: summaries ClickHouse computes ---------------------------------------------------


@otel_replay.tool
def lookup(order: str) -> str:
    if order == "boom":
        raise RuntimeError("carrier down")
    if order == "cut":
        return '{"order": "4421", "status": "sh'
    return f'{{"order": "{order}", "status": "shipped"}}'


def _model_turn(text: str, orders: list[str], *, fail: bool = False) -> None:
    with otel_replay.model_call(
        provider="openai",
        model="gpt-4o",
        messages=[{"role": "user", "content": text}],
        system="You help.",
        temperature=0.0,
        seed=7,
    ) as call:
        if fail:
            raise TimeoutError("the model timed out")
        calls = [
            {"id": f"c{i}", "function": {"name": "lookup", "arguments": json.dumps({"order": o})}}
            for i, o in enumerate(orders)
        ]
        answer = {"role": "assistant", "content": f"about {text}"}
        call.record(
            {**answer, "tool_calls": calls} if calls else answer, input_tokens=12, output_tokens=3
        )


def _run(agent: str, user: str, orders: list[str], *, fail_model: bool = False) -> None:
    with otel_replay.agent_run(
        agent, input="where?", **{"user.id": user, "session.id": f"s-{user}"}
    ):
        _model_turn("where?", orders)
        for i, order in enumerate(orders):
            with otel_replay.tool_call_id(f"c{i}"), contextlib.suppress(RuntimeError):
                lookup(order)
        with contextlib.suppress(TimeoutError):
            _model_turn("and then?", [], fail=fail_model)


def _captured() -> list[Any]:
    """Runs captured as an application records them, sent as OTLP carries them (payloads
    inline), in the states ``ls`` tells apart: answered, a tool that raised, the same call
    made twice, a model call that failed, a cut-off JSON result, an HTTP 503 answer, a
    payload whose digest does not match."""
    from otel_replay.otlp.proto_reader import records_from_proto
    from otel_replay.otlp.proto_writer import encode_request
    from tests.fixtures.recording import in_memory

    with in_memory() as exporter:
        _run("support", "u1", ["4421"])
        _run("support", "u2", ["4421", "boom"])
        _run("billing", "u3", ["4421", "4421"])
        _run("support", "u4", ["4421"], fail_model=True)
        _run("support", "u5", ["cut"])
        _run("support", "u6", ["503"])
        _run("support", "u7", ["tampered"])
        spans = list(exporter.get_finished_spans())
    records = list(records_from_proto(encode_request(spans), "captured", 0))
    for r in records:
        order = json.loads(r.attributes.get("gen_ai.tool.call.arguments", "{}")).get("order")
        if order == "503":
            r.attributes["http.response.status_code"] = 503
        if order == "tampered":
            r.attributes["gen_ai.tool.call.result"] = '{"order": "4430", "status": "shipped"}'
    return records


def test_ls_lines_clickhouse_computes_are_those_of_the_runs(tmp_path: Path) -> None:
    """Every field of every line equals what the built run says; the anomalies counted are
    the candidates ClickHouse sees, marked so."""
    from otel_replay.commands.clickhouse_summary import sql_summaries, summaries
    from otel_replay.runs.anomalies import find_anomalies
    from otel_replay.runs.summary import Filter, summarize
    from otel_replay.runs.verdict import outcome

    records = _captured()
    name = fill(tmp_path / "db", records)
    got, left, problems = sql_summaries(name, Filter())
    assert not problems
    runs = {r.run_id: r for r in otel_replay.load(name, strict=True)}
    # The runs that do not replay, or whose agent raised, are left to the reader: why,
    # and the error, are said in its words.
    off = {i for i, r in runs.items() if not r.replayable or outcome(r).raised}
    assert off and {t for t, _ in left} == off
    assert [s.run_id for s in got] == sorted(set(runs) - off, key=lambda i: (runs[i].start_ns, i))
    for line in got:
        want = summarize(runs[line.run_id])
        assert dataclasses.replace(line, anomalies=want.anomalies, candidates=False) == want
        kinds = {f.kind for f in find_anomalies(runs[line.run_id])}
        assert line.candidates and (line.anomalies > 0) == bool(kinds - {"loop", "error_wording"})
    every, _ = summaries(name, Filter())
    assert {s.run_id: s.run_verdict for s in every} == {
        i: summarize(r).run_verdict for i, r in runs.items()
    }
    verdicts = {s.user_id: (s.verdict, s.replayable, s.errors) for s in every}
    assert verdicts["u1"] == ("full", True, 0)
    assert verdicts["u2"][2] == 1 and verdicts["u4"][:2] == ("model-only", False)
    assert verdicts["u7"][1] is False  # the tampered result: not byte-exact


@pytest.mark.parametrize(
    "filters",
    [
        [],
        ["--agent", "BILL"],
        ["--error"],
        ["--tool", "lookup"],
        ["--replayable"],
        ["--since", "1h"],
    ],
)
def test_ls_filters_run_in_clickhouse_and_keep_what_they_keep_on_a_file(
    filters: list[str], tmp_path: Path
) -> None:
    """The same runs listed, and in the same order, as from a file of the same spans; the
    third-party traces beside them (read by the reader) filtered alike."""
    case = next(c for c in CASES if c.id == "openai_agents_otel/two_runs")
    name = fill(tmp_path / "db", [*_captured(), *_records(*case.trace_files())])
    dump = tmp_path / "same.binpb"
    assert cli_process("convert", name, "-o", str(dump)).returncode == 0

    def listed(source: str) -> list[tuple[str, str]]:
        shown = cli_process("ls", source, "--json", *filters)
        assert shown.returncode == 0, shown.stderr
        return [(r["run_id"], r["verdict"]) for r in json.loads(shown.stdout)["runs"]]

    from_db = listed(name)
    assert from_db == listed(str(dump))
    # 7 captured runs (2 with an error, 2 not replayable: a failed model call, a tampered
    # result), 2 of the agent, older than an hour, each with a tool that raised.
    expected = {"--agent": 1, "--error": 4, "--tool": 7, "--replayable": 7, "--since": 7}
    assert len(from_db) == expected.get(filters[0] if filters else "", 9)


#: Attribute names of the GenAI conventions and of other dialects, and scopes, drawn into
#: span shapes.
_SHAPE_NAMES = (
    "gen_ai.operation.name",
    "gen_ai.request.model",
    "gen_ai.tool.name",
    "user.id",
    "openinference.span.kind",
    "llm.model_name",
    "input.value",
    "traceloop.span.kind",
    "ai.model.id",
)
_SHAPE_SCOPES = ("otel_replay", "gen_ai", "openinference.instrumentation.openai", "")


@settings(max_examples=12, deadline=None)
@given(
    drawn=st.lists(
        st.tuples(
            st.sampled_from(_SHAPE_SCOPES),
            st.lists(st.sampled_from(_SHAPE_NAMES), unique=True, max_size=6),
        ),
        min_size=1,
        max_size=12,
    ),
    schema=st.sampled_from(["current", "2023"]),
)
def test_the_shapes_left_to_other_dialects_are_those_of_each_span_whatever_its_names_order(
    drawn: list[tuple[str, list[str]]], schema: Schema, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Spans of drawn scopes and attribute names, each in a drawn order (one set of names
    in two orders among them): the shapes the listing leaves to other dialects are those
    found span by span, each span's names sorted and its dialect detected."""
    from otel_replay.commands.clickhouse_sql import SHAPE
    from otel_replay.commands.clickhouse_summary import _FOREIGN_SCOPES, _foreign_shapes
    from otel_replay.dialects.registry import detect
    from otel_replay.dialects.span import SpanView
    from otel_replay.sources.clickhouse.database import connect

    base = _captured()[0]
    records = [
        dataclasses.replace(
            base,
            trace_id=f"{n + 1:032x}",
            span_id=f"{n + 1:016x}",
            parent_span_id=None,
            attributes=dict.fromkeys(names, "x"),
            scope_name=scope,
        )
        for n, (scope, names) in enumerate([*drawn, (drawn[0][0], drawn[0][1][::-1])])
    ]
    name = fill(tmp_path_factory.mktemp("db"), records, schema)
    db = connect(name)
    has_scope = schema == "current"
    scope = "ScopeName" if has_scope else "SpanAttributes['otel.scope.name']"
    want = set()
    with db.session():
        for row in db.rows(
            f"SELECT {scope} AS scope, arraySort(mapKeys(SpanAttributes)) AS names,"
            f" toString({SHAPE.format(scope=scope, keys='mapKeys(SpanAttributes)')}) AS shape"
            " FROM otel.otel_traces"
        ):
            view = SpanView({str(n): "?" for n in row["names"]}, scope=str(row["scope"]))
            if row["scope"] in _FOREIGN_SCOPES or [d.name for d in detect(view)] != ["genai"]:
                want.add(str(row["shape"]))
        got = _foreign_shapes(db, "otel.otel_traces", has_scope)
    event(f"foreign shapes: {min(len(want), 3)}")
    assert sorted(got) == sorted(want)


@pytest.mark.parametrize("schema", ["current", "2023"])
@pytest.mark.parametrize(
    "flt",
    [{}, {"since_ns": 1}, {"agent": "SUPPORT", "errors_only": True}, {"tools": ("lookup",)}],
)
@pytest.mark.parametrize("draw", [None, {"sample": 3, "seed": 1}, {"limit": 2}])
def test_the_queries_of_a_listing_share_one_session_of_the_embedded_engine(
    schema: Schema,
    flt: dict[str, Any],
    draw: dict[str, Any] | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever the filters, the draw and the table's schema, the queries that make the
    lines ClickHouse computes (the table's columns, the span shapes, the logs table, the
    summary) run in one session: embedded ClickHouse opens the database anew for each."""
    import chdb.session

    from otel_replay.commands.clickhouse_summary import LINE, _summary, sorted_out
    from otel_replay.commands.draw import Draw
    from otel_replay.runs.summary import Filter

    name = fill(tmp_path / "db", _captured(), schema)
    opened: list[str] = []

    class Counted(chdb.session.Session):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            opened.append(str(args[:1]))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(chdb.session, "Session", Counted)
    taken, left, problems, _ = sorted_out(
        name, Filter(**flt), "plain", _summary, draw=Draw(**draw) if draw else None, output=LINE
    )
    assert not problems and taken and left
    assert len(opened) == 1


def _mixed(tmp_path: Path) -> tuple[str, list[str]]:
    """A table of captured runs, agent runs and client-only traces stitched into runs; and
    the files of the cases in it."""
    cases = [
        "openai_agents_otel/two_runs",
        "litellm_openinference/responses",
        "openai_otel_v2/sync",
    ]
    files = [str(f) for c in CASES if c.id in cases for f in c.trace_files()]
    return fill(tmp_path / "db", [*_captured(), *_records(*map(Path, files))]), files


def test_a_table_is_read_a_window_of_traces_at_a_time_into_the_same_runs(tmp_path: Path) -> None:
    from otel_replay.runs.stream import iter_runs, windows

    name, _ = _mixed(tmp_path)
    planned = windows([name], window_bytes=4 * 1024)
    assert planned is not None and len(planned) >= 4
    batches = list(iter_runs(name, window_bytes=4 * 1024))
    assert len(batches) > 1 and not any(b.problems for b in batches)
    windowed = sorted((r.to_json() for b in batches for r in b), key=lambda r: r["run_id"])
    whole = sorted((r.to_json() for r in otel_replay.load(name)), key=lambda r: r["run_id"])
    assert windowed == whole


def _run_json(run: Any) -> Any:
    return run.to_json()


@pytest.mark.parametrize("seed", range(3))
def test_the_traces_left_to_read_are_read_in_one_scan_into_the_runs_windows_give(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The traces left to the reader (random runs of every shape check tells apart, other
    stacks' traces with their log records, client-only traces stitched into runs), in
    windows of a few spans: read in one scan of the table (their ids sent to a temporary
    table, or, where ClickHouse makes none, one scan per so many ids named in the query),
    they build the runs each window's own query builds, with the same problems; the
    table is asked once for them all, and once more for the stitched traces."""
    import random

    from otel_replay.runs import stream
    from otel_replay.sources.clickhouse import database, spans
    from otel_replay.sources.clickhouse.spans import windows_of

    rng = random.Random(seed)
    _, files = _mixed(tmp_path / "cases")
    records = [*_captured(), *_records(*map(Path, files)), *_random_runs(seed, 12)]
    rng.shuffle(records)  # the order rows are written in
    table = fill(tmp_path / "db", records)
    traces = [
        (str(row["TraceId"]), int(row["spans"]))
        for row in database.connect(table).rows(
            "SELECT TraceId, count() AS spans, min(Timestamp) AS first FROM otel.otel_traces"
            " GROUP BY TraceId ORDER BY first, TraceId"
        )
    ]
    per_window = rng.choice([3, 10, 25])
    monkeypatch.setattr(stream, "WINDOW_BYTES", per_window * 1024)
    # No temporary table (a user without the right): a query per so many ids, or all.
    most = rng.choice([4, 9, 100_000, None])
    if most is not None:
        monkeypatch.setattr(spans, "SEND_IDS", most)
        monkeypatch.setattr(spans, "send_ids", _refused)
    asked: list[str] = []
    rows = database._Embedded.rows

    def counted(self: Any, sql: str, params: Any = None) -> Any:
        asked.append(sql)
        return rows(self, sql, params)

    monkeypatch.setattr(database._Embedded, "rows", counted)
    scanned = stream.map_table_runs(table, traces, _run_json)
    spans_asked = [q for q in asked if "SpanId" in q and "FROM otel.otel_traces WHERE" in q]
    planned = stream.Windows(windows_of(traces, per_window), {})
    windowed = stream._map_planned([table], _run_json, planned, 1)
    scans = len(spans_asked)
    assert len(planned) >= 4
    assert 1 <= scans <= 2 if most is None or most > len(traces) else scans > 2
    key = lambda r: r["run_id"]  # noqa: E731
    assert sorted(scanned.values, key=key) == sorted(windowed.values, key=key)
    assert sorted(map(str, scanned.problems)) == sorted(map(str, windowed.problems))


def _refused(*args: Any) -> None:
    raise FormatError.whole("db", "ClickHouse refused the query: not enough privileges")


@pytest.mark.parametrize(("server", "extra"), [(False, 0), (False, 70_000), (True, 70_000)])
def test_any_number_of_trace_ids_is_read_in_one_scan(
    server: bool, extra: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trace ids past what one query can name (about 2 MB of them, ids of no trace among
    them) are sent to a temporary table in pieces, embedded or to a server: the spans of
    every window are read in one query, as each window's own query reads them."""
    import random

    from otel_replay.sources.clickhouse import database
    from otel_replay.sources.clickhouse.spans import scanned_windows

    rng = random.Random(extra)
    _, files = _mixed(tmp_path / "cases")
    table = fill(tmp_path / "db", _records(*map(Path, files)))
    real = [
        str(r["TraceId"])
        for r in database.connect(table).rows("SELECT DISTINCT TraceId FROM otel.otel_traces")
    ]
    ids = real + [f"{rng.getrandbits(128):032x}" for _ in range(extra)]
    rng.shuffle(ids)
    windows = [ids[i : i + 5000] for i in range(0, len(ids), 5000)] if extra else [[t] for t in ids]
    one_by_one = [list(RecordReader(table, set(w))) if set(w) & set(real) else [] for w in windows]
    with contextlib.ExitStack() as stack:
        if server:
            # The test's server takes a URL (the parameters) of 64 KiB at most.
            monkeypatch.setattr(database, "SEND_IDS", 1000)
            host, seen = stack.enter_context(clickhouse_http(str(tmp_path / "db")))
            table = f"clickhouse://{host}/otel"
        else:
            seen = Seen()
            rows = database._Embedded.rows

            def counted(self: Any, sql: str, params: Any = None) -> Any:
                seen.queries.append(sql)
                return rows(self, sql, params)

            monkeypatch.setattr(database._Embedded, "rows", counted)
        scanned = list(scanned_windows(table, windows))
    assert len([q for q in seen.queries if "SpanId" in q and "otel.otel_traces WHERE" in q]) == 1
    assert len(scanned) == len(windows)
    for (got, problems), want in zip(scanned, one_by_one, strict=True):
        assert not problems
        assert sorted(repr(dataclasses.replace(r, source="")) for r in got) == sorted(
            repr(dataclasses.replace(r, source="")) for r in want
        )


@given(
    sizes=st.lists(st.integers(1, 30), min_size=1, max_size=30),
    piece=st.integers(5, 60),
    rng=st.randoms(use_true_random=False),
)
@settings(max_examples=50, deadline=None)
def test_every_sent_trace_id_is_tagged_with_its_own_window(
    engine: Any, sizes: list[int], piece: int, rng: Any
) -> None:
    """Windows of any sizes, their ids sent in pieces of any size (a table of many blocks,
    which ClickHouse reads in parallel, its rows in an order of no promise): every id is
    tagged with its own window, however often and with however many threads it is asked."""
    from unittest import mock

    from otel_replay.sources.clickhouse import database, spans

    windows = [[f"{rng.getrandbits(128):032x}" for _ in range(n)] for n in sizes]
    want = {t: n for n, w in enumerate(windows) for t in w}
    with mock.patch.object(database, "SEND_IDS", piece), engine.session():
        database.send_ids(engine, list(want), list(want.values()))
        for threads in (1, 2, 4, 8, 16) * 4:
            tagged = engine.rows(
                f"SELECT TraceId, {spans._HELD_WINDOW} AS window FROM {database.IDS_TABLE}"
                f" SETTINGS max_threads = {threads}"
            )
            assert {str(r["TraceId"]): int(r["window"]) for r in tagged} == want


def test_check_and_show_of_a_stitched_run_read_from_clickhouse_as_from_files(
    tmp_path: Path,
) -> None:
    name, files = _mixed(tmp_path)
    dump = tmp_path / "same.binpb"
    assert cli_process("convert", name, "-o", str(dump)).returncode == 0
    assert _checks_agree(name, str(dump))  # the captured run that went well is not read
    checked = cli_process("check", name)
    assert checked.returncode == cli_process("check", str(dump)).returncode == 1
    assert "not recorded: not listed (its spans were not read: check --run lists them)" in (
        checked.stdout
    )

    stitched = next(r for r in otel_replay.load(*files) if len(r.trace_ids) > 1)
    shown = cli_process("show", name, "--run", stitched.run_id[:12], "--json")
    assert shown.returncode == 0, shown.stderr
    (run,) = json.loads(shown.stdout)["runs"]
    assert run["trace_ids"] == stitched.trace_ids and len(run["steps"]) == len(stitched.steps)


def test_payloads_kept_in_a_store_beside_clickhouse_read_back_exactly(tmp_path: Path) -> None:
    """Spans in ClickHouse, their large bytes payloads in a payload store: exact with
    the store allowed, missing (and saying how to allow it) without."""
    from otel_replay.otlp.proto_reader import records_from_proto
    from otel_replay.otlp.proto_writer import encode_request
    from otel_replay.payload import references as content_refs
    from tests.fixtures.recording import in_memory
    from tests.unit.payload.test_payload_store import INVOICE, _billing_run

    store = tmp_path / "payloads"
    with in_memory(payload_store=str(store), max_inline_bytes=512) as exporter:
        _billing_run()
        spans = list(exporter.get_finished_spans())
    name = fill(tmp_path / "db", list(records_from_proto(encode_request(spans), "otlp", 0)))

    (run,) = otel_replay.load(name)
    (tool,) = run.tool_steps()
    assert tool.tool is not None and tool.tool.result_payload is not None
    assert "--refs" in tool.tool.result_payload.reason and not run.replayable
    content_refs.use_content_refs([str(store)])
    try:
        (run,) = otel_replay.load(name, strict=True)
    finally:
        content_refs.use_content_refs(None)
    (tool,) = run.tool_steps()
    assert tool.tool is not None and tool.tool.result_payload is not None
    assert tool.tool.result_payload.value() == INVOICE and run.replayable


@pytest.mark.parametrize("schema", ["current", "2023"])
def test_since_keeps_runs_that_started_since_with_or_without_the_trace_id_table(
    schema: Schema, tmp_path: Path
) -> None:
    """A run that started before --since and goes on after it is left out, whether the
    trace-id table narrows the read (the exporter's tables) or not (before 2024)."""
    import time

    from otel_replay.commands.clickhouse_summary import summaries
    from otel_replay.runs.summary import Filter

    records = [r for r in _captured() if hasattr(r, "kind")]
    first = min(records, key=lambda r: r.start_ns).trace_id
    hour = 3600 * 10**9
    for r in records:
        if r.trace_id == first:  # its root two hours ago, its last steps just now
            shift = 2 * hour if r.parent_span_id is None else 0
            r.start_ns -= shift
    name = fill(tmp_path / "db", records, schema)
    found, problems = summaries(name, Filter(since_ns=time.time_ns() - hour))
    assert not problems
    assert first not in {s.run_id for s in found} and len(found) == 6


def test_ls_of_a_json_true_table_lists_what_a_file_of_the_same_spans_lists(
    tmp_path: Path,
) -> None:
    name = fill(tmp_path / "db", _captured(), "json")
    dump = tmp_path / "same.binpb"
    assert cli_process("convert", name, "-o", str(dump)).returncode == 0
    listed = cli_process("ls", name, "--json", "--error")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == json.loads(
        cli_process("ls", str(dump), "--json", "--error").stdout
    )
    assert len(json.loads(listed.stdout)["runs"]) == 2


# --- check: the runs ClickHouse shows clean are not read -------------------------------

#: Spellings of tool arguments: the first three are one JSON value.
_ARGUMENTS = [
    '{"order": "{id}", "qty": 1.5}',
    '{"qty":1.50,"order":"{id}"}',
    '{ "order" : "{id}" , "qty" : 15e-1 }',
    '{"order": "{id}", "qty": 2}',
    '{"order": "\\u0034{id}", "qty": 1.5}',
]
#: Tool results: plain ones, and the shapes check warns of (or nearly).
_RESULTS = [
    '{"order": "4421", "status": "shipped"}',
    '{"order": "4421", "status": "shipped"}',
    '{"status": 503}',
    '{"status_code": 429.0}',
    '{"status": "503"}',
    '{"http_status": 502, "http_status": 200}',
    '{"http_status": 200, "http_status": 502}',
    '{"st\\u0061tus": 500}',
    "HTTP/1.1 503 Service Unavailable",
    '\u00a0{"order": "44',
    "  [1, 2",
    "see [1] and {2}",
    "shipped",
    '"shipped"',
    "NaN",
    "[" * 70 + "]" * 70,
]
#: Final answers: plain ones, error wording (or nearly), escapes, folding letters.
_ANSWERS = [
    "Order 4421 has shipped.",
    "Order 4421 has shipped.",
    "I\u2019m sorry, I can\u2019t find it.",
    "The terrorist plot thickens.",
    "We were UNABLE TO ship.",
    'It said "no" to the order.',
    "n/a",
    "Shipped \u2014 today",
    "Ta\u0131led",
    "\u212aeep calm, it shipped",
]


def _agent(rng: Any, n: int, plan: dict[str, tuple[str, str]]) -> None:
    """One agent run with random turns, tool calls, results and answers; ``plan`` gets the
    arguments and result text each tool span is given afterwards."""
    history: list[dict[str, Any]] = [{"role": "user", "content": f"where is order {n}?"}]
    turns = rng.randint(1, 3)
    earlier: list[str] = []
    with otel_replay.agent_run("support", input="where?", **{"user.id": f"u{n}"}):
        for turn in range(turns):
            k = rng.choice([1, 1, 2, 3])
            calls = []
            for i in range(k):
                call_id = f"c{n}-{turn}-{i}"
                same = earlier and rng.random() < 0.15
                order = rng.choice(earlier) if same else f"{n}{turn}{i}"
                earlier.append(order)
                args = rng.choice(_ARGUMENTS[:3] if same else _ARGUMENTS).replace("{id}", order)
                calls.append((call_id, order, args))
            with otel_replay.model_call(
                provider="openai", model="gpt-4o", messages=list(history), system="You help."
            ) as call:
                call.record(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"id": c, "function": {"name": "lookup", "arguments": a}}
                            for c, _, a in calls
                        ],
                    }
                )
            lost = rng.random() < 0.1
            if not lost:
                history.append({"role": "assistant", "content": f"calling {k} tools"})
            for call_id, order, args in calls:
                key = f"{call_id}/{order}"
                plan[key] = (args, rng.choice(_RESULTS) if rng.random() < 0.2 else _RESULTS[0])
                with otel_replay.tool_call_id(call_id), contextlib.suppress(RuntimeError):
                    lookup(key if rng.random() > 0.05 else "boom")
                if not lost:
                    history.append({"role": "tool", "content": "ok", "tool_call_id": call_id})
        answers = 4 if rng.random() < 0.1 else 1 if rng.random() < 0.8 else 2
        answer = rng.choice(_ANSWERS) if rng.random() < 0.4 else _ANSWERS[0]
        for _ in range(answers):
            with otel_replay.model_call(
                provider="openai", model="gpt-4o", messages=list(history), system="You help."
            ) as call:
                call.record({"role": "assistant", "content": answer})


def _random_runs(seed: int, count: int) -> list[Any]:
    """``count`` captured runs of every shape ``_agent`` makes, sent as OTLP carries them;
    the tool spans' arguments and results respelled as planned (their digests dropped:
    the text is what another instrumentation would have written)."""
    import random

    from otel_replay.otlp.proto_reader import records_from_proto
    from otel_replay.otlp.proto_writer import encode_request
    from tests.fixtures.recording import in_memory

    rng = random.Random(seed)
    plan: dict[str, tuple[str, str]] = {}
    with in_memory() as exporter:
        for n in range(count):
            _agent(rng, n, plan)
        spans = list(exporter.get_finished_spans())
    records = list(records_from_proto(encode_request(spans), "captured", 0))
    for r in records:
        text = r.attributes.get("gen_ai.tool.call.arguments")
        if text is None or "boom" in text:
            continue
        args, result = plan[json.loads(text)["order"]]
        for attr, value in (("arguments", args), ("result", result)):
            key = f"gen_ai.tool.call.{attr}"
            for prefix in ("otel_replay.sha256.", "otel_replay.bytes.", "otel_replay.type."):
                r.attributes.pop(prefix + key, None)
            r.attributes[key] = value
    return records


#: A run's note that the table left an attribute's type open and it was read as a list.
_AMBIGUOUS = re.compile(r"the type of attribute '[^']+' is ambiguous: .*; read as the list")


def _checks_agree(name: str, dump: str, config: Any = None) -> list[str]:
    """``check`` of the table says what ``check`` of the dump of the same spans says: the
    runs read, word for word; a run ClickHouse shows clean, one the dump's check finds
    full and replayable with no problem or warning.  The ids of the runs shown clean."""
    from otel_replay.commands.check import check_runs

    got, _, problems = check_runs([name], config)
    want, _, _ = check_runs([dump], config)
    assert not problems
    assert [c.run_id for c in got] == [c.run_id for c in want]
    for mine, theirs in zip(got, want, strict=True):
        if mine.read:
            # The table says which attributes it read as lists though their type is
            # ambiguous; the dump written from it holds them as lists and has no such doubt.
            shown = mine.to_json()
            doubts = [p for p in shown["problems"] if _AMBIGUOUS.search(p)]
            assert all(_AMBIGUOUS.fullmatch(p.split(": ", 1)[1]) for p in doubts)
            shown["problems"] = [p for p in shown["problems"] if p not in doubts]
            assert _same(shown, theirs.to_json())
        else:
            # Not read: its optional fields and its count of calls are not known.
            shown = mine.to_json()
            said = {**theirs.to_json(), "missing": None, "not_set": None}
            said["outcome"] = {**said["outcome"], "tool_calls": None, "model_calls": None}
            assert said == shown
    return [c.run_id for c in got if not c.read]


@pytest.mark.parametrize("seed", range(4))
def test_check_reads_only_the_runs_clickhouse_cannot_show_clean(seed: int, tmp_path: Path) -> None:
    """Random runs in every shape check tells apart (repeated calls spelled differently,
    status codes in results, cut-off JSON, error wording, loops, lost history, tools that
    raise...): what ClickHouse shows clean, the dump's check finds clean; the rest is
    read and checked as the dump's runs are.  With the default warnings and others."""
    from otel_replay.runs.anomalies import Config

    name = fill(tmp_path / "db", _random_runs(seed, 40))
    dump = tmp_path / "same.binpb"
    assert cli_process("convert", name, "-o", str(dump)).returncode == 0
    clean = _checks_agree(name, str(dump))
    assert 5 <= len(clean) <= 35  # both kinds, in every seed
    other = Config(max_tool_calls=2, error_phrases=("shipped", "n/a", 'said "no"'))
    assert len(_checks_agree(name, str(dump), other)) < len(clean)


# --- the conditions of a clean run err one way only: properties -----------------------

_PLAIN_TEXT = st.text(
    st.characters(blacklist_characters='"\\', blacklist_categories=("Cc", "Cs")), max_size=6
)
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _PLAIN_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_PLAIN_TEXT, inner, max_size=3),
    max_leaves=10,
)


def _respelled(value: Any, rng: Any) -> str:
    """``value`` as JSON another writer might spell it: keys in another order, other
    spacing, floats with other digits."""
    space = lambda: rng.choice(["", " ", "\n  ", "\t"])  # noqa: E731
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        inner = ",".join(
            f"{space()}{json.dumps(k, ensure_ascii=False)}{space()}:{space()}{_respelled(v, rng)}"
            for k, v in items
        )
        return "{" + inner + space() + "}"
    if isinstance(value, list):
        return "[" + ",".join(space() + _respelled(v, rng) for v in value) + space() + "]"
    if isinstance(value, float):
        text = repr(value)
        spellings = [text, f"{value:.17e}"]
        if "e" not in text and "." in text:
            spellings.append(text + "00")
        return str(rng.choice(spellings))
    return json.dumps(value, ensure_ascii=False)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from otel_replay.sources.clickhouse.database import connect

    return connect(f"chdb://{tmp_path_factory.mktemp('engine')}")


def _value_of(engine: Any, expression: str, **params: Any) -> Any:
    """``expression`` computed by ClickHouse, with the query's patterns and ``params``."""
    from otel_replay.commands.clickhouse_summary import PATTERNS

    given = {k: v for k, v in params.items() if k in ("said", "result_text", "t")}
    columns = "".join(f"{{{k}:String}} AS {k}, " for k in given if k != "t")
    (row,) = engine.rows(f"SELECT {columns}{expression} AS v", {**PATTERNS, **params})
    return row["v"]


@given(value=_JSON_VALUES, rng=st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_two_spellings_of_one_json_value_share_their_key(engine: Any, value: Any, rng: Any) -> None:
    """Tool calls whose arguments are one value, however spelled, are "the same call" to
    ClickHouse too (so a repeated call is never missed)."""
    from otel_replay.commands.clickhouse_summary import KEY
    from otel_replay.payload import codec as payload

    a, b = json.dumps(value, ensure_ascii=False), _respelled(value, rng)
    assert payload.canonical(json.loads(a)) == payload.canonical(json.loads(b))
    key = KEY.format(text="{t:String}")
    assert _value_of(engine, key, t=a) == _value_of(engine, key, t=b)


_PHRASES = st.lists(
    st.sampled_from(["I'm sorry", "unable to", "error", "can't", 'said "no"', "n/a", "x\\y"])
    | st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=5),
    min_size=1,
    max_size=3,
)


@given(phrases=_PHRASES, data=st.data())
@settings(max_examples=200, deadline=None)
def test_an_answer_holding_an_error_phrase_is_never_shown_clean(
    engine: Any, phrases: list[str], data: Any
) -> None:
    """Whatever the answer and however JSON spells it, when Python's check finds an error
    phrase in it, ClickHouse's condition holds."""
    from otel_replay.commands.clickhouse_check import wording_params
    from otel_replay.commands.clickhouse_summary import WORDING
    from otel_replay.runs.anomalies import error_phrase

    phrase = data.draw(st.sampled_from(phrases))
    cased = "".join(c.upper() if data.draw(st.booleans()) else c for c in phrase)
    cased = cased.replace("'", data.draw(st.sampled_from(["'", "\u2019"])))
    around = st.text(max_size=8)
    answer = data.draw(around) + data.draw(st.sampled_from([cased, ""])) + data.draw(around)
    said = json.dumps(
        [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}],
        ensure_ascii=data.draw(st.booleans()),
    )
    if error_phrase(answer, phrases) is not None:
        event("the answer holds a phrase")
        assert _value_of(engine, WORDING, said=said, **wording_params(phrases))


@given(
    result=st.one_of(
        st.text(max_size=12),
        st.sampled_from(["{", "[", " {", "\u00a0[1", "\u2003{}", "HTTP/1.1 503 x", "{} x"]),
        st.builds(
            lambda key, value, extra: json.dumps({key: value, **extra}),
            st.sampled_from(["status", "status_code", "http_status"]),
            st.integers(400, 600) | st.sampled_from([429, 503, 429.0, "503", True]),
            st.dictionaries(st.sampled_from(["a", "status"]), st.integers(0, 600), max_size=2),
        ),
        _JSON_VALUES.map(json.dumps),
        st.integers(60, 70).map(lambda n: "[" * n + "]" * n),
    ),
    prefix=st.sampled_from(["", " ", "\n", "\u00a0", "\u2028", "\x1c", "\x85"]),
)
@settings(max_examples=300, deadline=None)
def test_a_result_python_warns_of_is_never_shown_clean(
    engine: Any, result: str, prefix: str
) -> None:
    """A tool result Python's check warns of (as text, or as the object it parses to),
    ClickHouse's condition flags."""
    from otel_replay.commands.clickhouse_summary import RESULT_WARNS
    from otel_replay.runs.anomalies import result_warning

    text = prefix + result
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if result_warning(text) is not None or result_warning(parsed) is not None:
        event("Python warns")
        assert _value_of(engine, RESULT_WARNS, result_text=text)


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.id.startswith("anthropic_openllmetry/events")],
    ids=lambda c: c.id,
)
def test_ls_and_check_of_a_table_whose_log_records_name_no_span(case: Any, tmp_path: Path) -> None:
    """Log records that name no span join a run by their time: the table is read whole
    for the traces ClickHouse leaves to the reader, not a window at a time (which made
    a run of each record)."""
    files = [str(f) for f in case.trace_files()]
    name = fill(tmp_path / "db", _records(*map(Path, files)))

    def listed(*sources: str) -> Any:
        shown = cli_process("ls", *sources, "--json")
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)["runs"]

    assert listed(name) == listed(*files) and len(listed(name)) == 1
    dump = tmp_path / "same.binpb"
    assert cli_process("convert", name, "-o", str(dump)).returncode == 0
    _checks_agree(name, str(dump))
