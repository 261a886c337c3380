"""``otel-replay ls`` (or ``check``) of millions of GenAI spans in ClickHouse, against a
bare aggregate of the same columns, or against the same spans in a file.

    .cache/chdb-venv/bin/python benchmarks/bench_ls_clickhouse.py
        [--spans 500000,5000000] [--command ls|check] [--baseline bare|dump]
        [--against REV]

(chdb, embedded ClickHouse, is in the environment ``.ci/run`` makes.)  The
same spans twice: agent runs captured with otel-replay's helpers (an
``invoke_agent`` span, three model calls, six tool calls, with their
messages and payloads), copied under fresh trace ids up to ``--spans``,

- in the Collector's clickhouseexporter table, written with its row mapping
  (``tests/fixtures/clickhouse.py``) in embedded ClickHouse (the copies made by
  ClickHouse itself, ``INSERT ... SELECT``);
- in a 4-byte framed protobuf dump (the Collector's file exporter format),
  the copies written by replacing the trace ids in the encoded requests.

The table of each size is built once and kept under ``.cache/bench-clickhouse``
(keyed by this generator's version: the source of the functions that make it).

Baseline ``bare`` (the default): each in a fresh process, interleaved,
``--repeat`` times, the command on the table and the bare ``GROUP BY TraceId``
query reading the same columns the summary query reads (its rows read back
the same way, one JSON line each); the CPU time of each process (ClickHouse
runs inside it) and their ratio, at each ``--spans``.  The command must
give one line per trace the bare query counts.  ``--against REV`` also times
the command of commit ``REV`` (its package exported with ``git archive``), which
must give the same lines.

Baseline ``dump``: each in a fresh process, interleaved, ``--repeat`` times: ``ls`` of the
table (the lines computed by ClickHouse) and the first ``ls`` of the dump
(every run built, checked and summarized, a window at a time, two worker
processes, no saved summaries).  Both must list every run with the same
verdicts.  With ``--command check``: ``check`` of the table (the runs
ClickHouse shows clean not read; one run in ten of the template has a tool
call repeated, so those are read) against ``check`` of the dump; both must
give every run the same verdict and warnings.  Wall-clock seconds, best of
the repeats, and their ratio; the machine is shared, so the two alternate.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: Where the tables are kept between runs, one directory per generator version and size.
CACHE = ROOT / ".cache" / "bench-clickhouse"
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

#: Runs captured once; their copies fill the table and the dump.
TEMPLATE_RUNS = 200


def template() -> list:  # type: ignore[type-arg]
    """Agent runs captured with the helpers, as OTLP carries them."""
    from tests.fixtures.recording import in_memory

    import otel_replay
    from otel_replay.otlp.proto_reader import records_from_proto
    from otel_replay.otlp.proto_writer import encode_request

    @otel_replay.tool
    def lookup_order(query: str) -> dict[str, str]:
        return {"order_id": "4421", "status": "shipped", "query": query}

    with in_memory() as exporter:
        for i in range(TEMPLATE_RUNS):
            with otel_replay.agent_run("support", input="Where?", **{"user.id": f"u{i % 37}"}):
                history: list[dict[str, object]] = [{"role": "user", "content": f"Order {i}?"}]
                for turn in range(3):
                    calls = [] if turn == 2 else [_call(f"c{turn}{k}") for k in range(2)]
                    reply = {"role": "assistant", "content": "Shipped." if turn == 2 else None}
                    if calls:
                        reply["tool_calls"] = calls
                    with otel_replay.model_call(
                        provider="openai", model="gpt-4o", messages=history, temperature=0.0
                    ) as call:
                        call.record(reply, input_tokens=40 + turn, output_tokens=9)
                    history.append(reply)
                    for c in calls:
                        # One run in ten asks for the same order twice: a warning.
                        query = f"order {i}" if i % 10 == 0 else f"order {i}-{c['id']}"
                        with otel_replay.tool_call_id(str(c["id"])):
                            result = lookup_order(query)
                        history.append(
                            {"role": "tool", "tool_call_id": c["id"], "content": json.dumps(result)}
                        )
        spans = list(exporter.get_finished_spans())
    return [list(records_from_proto(encode_request(spans), "template", 0)), encode_request(spans)]


def _call(call_id: str) -> dict[str, object]:
    return {"id": call_id, "function": {"name": "lookup_order", "arguments": '{"query": "x"}'}}


def copy_id(trace_id: str, n: int) -> str:
    """The trace id of copy ``n``: what ClickHouse computes for it below."""
    return hashlib.md5(f"{trace_id}{n}".encode()).hexdigest()


def fill_table(directory: Path, records: list, copies: int) -> None:  # type: ignore[type-arg]
    from tests.fixtures import clickhouse as _clickhouse

    held = _clickhouse.create(directory)
    try:
        _clickhouse.insert(held, records)
        # Every column of the exporter's table, as the table itself lists them.
        listing = (
            "SELECT name FROM system.columns WHERE database = 'otel' AND table = 'otel_traces'"
        )
        columns = [
            row["name"]
            for row in map(json.loads, held.query(listing, "JSONEachRow").bytes().splitlines())
        ]
        chosen = ", ".join(
            "lower(hex(MD5(concat(t.TraceId, toString(n.number)))))"
            if c == "TraceId"
            else f"t.`{c}`"
            for c in columns
        )
        listed = ", ".join(f"`{c}`" for c in columns)
        held.query(
            f"INSERT INTO otel.otel_traces ({listed}) SELECT {chosen}"
            f" FROM otel.otel_traces AS t CROSS JOIN numbers(1, {copies - 1}) AS n"
        )
        held.query("OPTIMIZE TABLE otel.otel_traces FINAL")
    finally:
        held.close()


def write_dump(path: Path, body: bytes, trace_ids: list[str], copies: int) -> None:
    with open(path, "wb") as f:
        for n in range(copies):
            out = body
            if n:
                for t in trace_ids:
                    out = out.replace(bytes.fromhex(t), bytes.fromhex(copy_id(t, n)))
            f.write(struct.pack(">I", len(out)) + out)


def generator_version() -> str:
    """What the cached tables are keyed by: the source of the functions that make them."""
    # lazy: the test helper that fills the tables, only for a benchmark run
    from tests.fixtures import clickhouse as _clickhouse

    made_by = (template, _call, copy_id, fill_table, _clickhouse)
    text = "".join(inspect.getsource(f) for f in made_by)
    text += (ROOT / "tests" / "data" / "clickhouse" / "traces_table.sql").read_text()
    return hashlib.sha256(f"{TEMPLATE_RUNS}{text}".encode()).hexdigest()[:16]


def cached_table(spans: int, records: Callable[[], list]) -> tuple[str, int]:  # type: ignore[type-arg]
    """The name of a table of about ``spans`` spans (built once into the cache) and its
    span count."""
    where = CACHE / generator_version() / str(spans)
    if not (where / "done").exists():
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        t0 = time.perf_counter()
        template_records = records()
        copies = max(1, -(-spans // len(template_records)))
        fill_table(where / "db", template_records, copies)
        (where / "done").write_text(str(len(template_records) * copies))
        print(f"built the table of {spans:,} spans in {time.perf_counter() - t0:.0f} s")
    return f"chdb://{where}/db?database=otel", int((where / "done").read_text())


#: The baseline: every trace's spans grouped, reading the columns the summary query reads
#: (each column's values hashed, so that ClickHouse reads every byte of them).
BARE = """
SELECT TraceId, count() AS spans, min(Timestamp) AS start,
    max(toUnixTimestamp64Nano(Timestamp) + toInt64(Duration)) AS end,
    sum(cityHash64(SpanId, ParentSpanId, SpanName, StatusCode, ScopeName, SpanAttributes,
        ResourceAttributes, Events.Name)) AS digest
FROM {table}
WHERE TraceId != ''
GROUP BY TraceId
SETTINGS output_format_json_quote_64bit_integers = 0
"""


def phase(source: str, command: str) -> None:
    """One listing (or check, or the bare query), in this fresh process: its lines as
    JSON (the bare query's: their count)."""
    from otel_replay.runs.summary import Filter
    from otel_replay.sources.files import is_database

    if command == "bare":
        from otel_replay.sources.clickhouse.database import connect

        db = connect(source)
        table = f"{db.location.database}.{db.location.table}"
        print(json.dumps(sum(1 for _ in db.rows(BARE.format(table=table)))))
        return
    if command == "check":
        from otel_replay.commands.check import check_runs

        checks, _, faults = check_runs([source], jobs=2)
        assert not faults, faults
        print(
            json.dumps(
                sorted(
                    (c.run_id, c.kit.verdict, c.kit.replayable, [f.kind for f in c.findings])
                    for c in checks
                )
            )
        )
        return
    if is_database(source):
        from otel_replay.commands.clickhouse_summary import summaries

        found, problems = summaries(source, Filter())
    else:
        from otel_replay.commands.summary_cache import summaries as file_summaries

        found, problems = file_summaries([source], use_cache=False, jobs=2)
    assert not problems, problems
    print(json.dumps(sorted((s.run_id, s.verdict, s.steps, s.tokens) for s in found)))


def timed(source: str, command: str, src: Path = ROOT / "src") -> tuple[float, float, Any]:
    """The wall-clock and CPU seconds of ``command`` on ``source`` in a fresh process (the
    package of ``src``), and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--phase", source, "--command", command, "--src", str(src)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(src)},
        check=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(done.stdout)


def package_at(rev: str, into: Path) -> Path:
    """The package of commit ``rev``, exported under ``into``: its ``src`` directory."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def against_bare(sizes: list[int], command: str, repeat: int, rev: str | None) -> None:
    """``command`` on the table of each size against the bare aggregate, interleaved; with
    ``rev``, also the command of that commit."""
    with tempfile.TemporaryDirectory() as tmp:
        srcs = {command: ROOT / "src", "bare": ROOT / "src"}
        if rev is not None:
            srcs[f"{command}@{rev}"] = package_at(rev, Path(tmp))
        for size in sizes:
            _against_bare(size, command, repeat, srcs)


def _against_bare(size: int, command: str, repeat: int, srcs: dict[str, Path]) -> None:
    held: list = []  # type: ignore[type-arg]

    def records() -> list:  # type: ignore[type-arg]
        if not held:
            held.extend(template()[0])
        return held

    table, spans = cached_table(size, records)
    best = dict.fromkeys(srcs, (float("inf"), float("inf")))
    said = {}
    for _ in range(repeat):
        for what, src in srcs.items():
            wall, cpu, said[what] = timed(table, what.split("@")[0], src)
            best[what] = min(best[what], (cpu, wall))
            print(f"  {what} of {spans:,} spans: {cpu:.1f} s CPU, {wall:.1f} s wall")
    for what in srcs:
        if what != "bare":
            assert len(said[what]) == said["bare"], "a line per trace"
            assert said[what] == said[command], "the commits' answers differ"
    bare_cpu, bare_wall = best["bare"]
    print(
        f"{spans:,} spans ({said['bare']:,} traces), best of {repeat}: the bare GROUP BY"
        f" TraceId {bare_cpu:.1f} s CPU ({bare_wall:.1f} s wall)"
    )
    for what in srcs:
        if what != "bare":
            cpu, wall = best[what]
            print(
                f"  {what}: {cpu:.1f} s CPU ({wall:.1f} s wall), {what}/bare"
                f" {cpu / bare_cpu:.2f}x CPU, {wall / bare_wall:.2f}x wall"
            )


def against_dump(spans: int, command: str, repeat: int) -> None:
    """``command`` on the table against the same on a dump of the same spans, interleaved."""
    records, body = template()
    per_copy = len(records)
    copies = max(1, -(-spans // per_copy))
    trace_ids = sorted({r.trace_id for r in records})
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        fill_table(Path(tmp) / "db", records, copies)
        dump = Path(tmp) / "dump.binpb"
        write_dump(dump, body, trace_ids, copies)
        print(
            f"{per_copy * copies:,} spans, {len(trace_ids) * copies:,} runs;"
            f" dump {dump.stat().st_size / 1e9:.2f} GB; written in {time.perf_counter() - t0:.0f} s"
        )
        table = f"chdb://{tmp}/db?database=otel"
        best = {"table": float("inf"), "dump": float("inf")}
        lines = {}
        for _ in range(repeat):
            for what, source in (("table", table), ("dump", str(dump))):
                seconds, _, lines[what] = timed(source, command)
                best[what] = min(best[what], seconds)
                print(f"  {command} of the {what}: {seconds:.1f} s")
        assert lines["table"] == lines["dump"], "the two answers differ"
        print(
            f"{command} of the ClickHouse table {best['table']:.1f} s, of the dump"
            f" {best['dump']:.1f} s (best of {repeat}): the table takes"
            f" {best['table'] / best['dump']:.3f}x the time"
            f" ({best['dump'] / best['table']:.0f}x faster); {len(lines['table']):,} runs"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--spans",
        default="500000,5000000",
        help="Table sizes, comma-separated (the dump baseline takes the first).",
    )
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--command", choices=["ls", "check", "bare"], default="ls")
    parser.add_argument("--baseline", choices=["bare", "dump"], default="bare")
    parser.add_argument(
        "--against", metavar="REV", help="also time the command of commit REV (bare baseline)"
    )
    parser.add_argument("--phase")
    parser.add_argument("--src")
    args = parser.parse_args()
    if args.phase:
        sys.path.insert(0, args.src)
        return phase(args.phase, args.command)
    sizes = [int(s) for s in args.spans.split(",")]
    if args.baseline == "dump":
        return against_dump(sizes[0], args.command, args.repeat)
    return against_bare(sizes, args.command, args.repeat, args.against)


if __name__ == "__main__":
    main()
