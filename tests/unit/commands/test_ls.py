"""``otel-replay ls``: one line per run, filters, sorting, and the summaries kept beside a dump."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.commands import summary_cache
from otel_replay.since import parse_since
from tests.fixtures.agent import LOOKUP, WORLD, call, record_run, say
from tests.fixtures.cli import cli_process
from tests.fixtures.data import TESTS

THIRDPARTY = TESTS / "data" / "thirdparty"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def ls_json(*args: str | Path) -> list[dict[str, Any]]:
    result = invoke("ls", "--json", *args)
    assert result.exit_code == 0, result.output
    runs: list[dict[str, Any]] = json.loads(result.stdout)["runs"]
    return runs


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    """Three runs of two agents: a plain one, one with a failing tool, a long one."""
    path = tmp_path / "runs.otlp"
    record_run(path, LOOKUP, user="u_1", session="s_1")
    WORLD["fail"] = 1
    try:
        record_run(
            path,
            [
                call("flaky_lookup", "c1", query="x"),
                call("flaky_lookup", "c2", query="x"),
                say("Found it."),
            ],
            agent="billing",
            user="u_2",
            session="s_2",
        )
    finally:
        WORLD["fail"] = 0
    record_run(
        path,
        [
            call("lookup_order", "c1", query="a"),
            call("check_eligibility", "c2", order_id="4421"),
            call("cancel_order", "c3", order_id="4421", reason="late"),
            say("Cancelled."),
        ],
        user="u_3",
        session="s_3",
    )
    return path


def test_one_line_per_run_with_what_matters(dump: Path) -> None:
    runs = ls_json(dump)
    assert [r["agent"] for r in runs] == ["support", "billing", "support"]
    assert [r["user_id"] for r in runs] == ["u_1", "u_2", "u_3"]
    assert [r["session_id"] for r in runs] == ["s_1", "s_2", "s_3"]
    assert [r["tool_calls"] for r in runs] == [1, 2, 3]
    assert [r["model_calls"] for r in runs] == [2, 3, 4]
    assert [r["errors"] for r in runs] == [0, 1, 0]
    assert all(r["models"] == ["scripted-1"] for r in runs)
    assert all(r["verdict"] == "full" and r["replayable"] for r in runs)
    # Tokens as recorded: 10 per input message, 5 out, per call.
    assert runs[0]["input_tokens"] == 10 + 30 and runs[0]["output_tokens"] == 10
    assert runs[0]["tokens"] == 50
    assert runs[1]["tools"] == ["flaky_lookup"]
    assert runs[1]["anomalies"] >= 2  # the tool error, and its retry
    loaded = otel_replay.load(dump)
    assert [r["run_id"] for r in runs] == [r.run_id for r in loaded]
    for summary, run in zip(runs, loaded, strict=True):
        assert (summary["start_ns"], summary["end_ns"]) == (run.start_ns, run.end_ns)
        assert summary["steps"] == len(run.steps)


def test_text_lines_line_up(dump: Path) -> None:
    result = invoke("ls", dump)
    assert result.exit_code == 0, result.output
    header, *lines = result.stdout.splitlines()
    assert header.split()[:2] == ["START", "(UTC)"] and "VERDICT" in header
    assert len(lines) == 3
    run_ids = [r.run_id[:16] for r in otel_replay.load(dump)]
    for line, run_id in zip(lines, run_ids, strict=True):
        assert run_id in line and "scripted-1" in line
    assert "billing" in lines[1] and "u_2" in lines[1] and "warning" in lines[1]
    # Columns line up: each run id starts where the header's RUN does.
    assert {line.index(rid) for line, rid in zip(lines, run_ids, strict=True)} == {
        header.index("RUN")
    }


def test_filters(dump: Path) -> None:
    assert [r["agent"] for r in ls_json(dump, "--agent", "bill")] == ["billing"]
    assert [r["user_id"] for r in ls_json(dump, "--error")] == ["u_2"]
    assert [r["user_id"] for r in ls_json(dump, "--tool", "cancel_order")] == ["u_3"]
    both = ls_json(dump, "--tool", "lookup_order", "--tool", "cancel_order")
    assert [r["user_id"] for r in both] == ["u_3"]
    assert len(ls_json(dump, "--replayable")) == 3
    assert len(ls_json(dump, "--since", "1h")) == 3
    tomorrow = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).isoformat()
    assert ls_json(dump, "--since", tomorrow) == []
    second = ls_json(dump)[1]["start_ns"]
    exact = dt.datetime.fromtimestamp(second // 10**9, tz=dt.timezone.utc) + dt.timedelta(
        microseconds=second % 10**9 // 1000
    )
    since = exact.isoformat()
    assert [r["user_id"] for r in ls_json(dump, "--since", since)] == ["u_2", "u_3"]


def test_sorting(dump: Path) -> None:
    by_tokens = ls_json(dump, "--sort", "tokens")
    assert [r["tokens"] for r in by_tokens] == sorted(r["tokens"] for r in by_tokens)
    assert ls_json(dump, "--sort", "tokens", "--reverse")[0]["user_id"] == "u_3"
    assert ls_json(dump, "--sort", "errors", "--reverse")[0]["user_id"] == "u_2"
    durations = [r["duration_ms"] for r in ls_json(dump, "--sort", "duration")]
    assert durations == sorted(durations)
    assert [r["user_id"] for r in ls_json(dump, "--reverse")] == ["u_3", "u_2", "u_1"]


def test_bad_since_is_a_usage_error(dump: Path) -> None:
    result = invoke("ls", dump, "--since", "yesterday-ish")
    assert result.exit_code == 2
    assert "--since" in result.stderr and "yesterday-ish" in result.stderr


def test_parse_since() -> None:
    now = dt.datetime(2026, 5, 11, 12, 0, tzinfo=dt.timezone.utc)
    hour = 3600 * 10**9
    assert parse_since("2h", now) == int(now.timestamp() * 1e9) - 2 * hour
    assert parse_since("3d", now) == int(now.timestamp() * 1e9) - 72 * hour
    assert parse_since("2026-05-11T10:00:00Z") == int(now.timestamp() * 1e9) - 2 * hour
    assert parse_since("2026-05-11T10:00:00") == parse_since("2026-05-11T10:00:00Z")
    assert parse_since("2026-05-11T12:00:00+02:00") == parse_since("2026-05-11T10:00:00Z")
    with pytest.raises(ValueError):
        parse_since("soon")


def test_summaries_are_kept_beside_the_dump_and_renewed_when_it_changes(
    dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = ls_json(dump)
    cache = summary_cache.cache_path(str(dump))
    assert cache is not None and cache.name == "runs.otlp.otel-replay-runs" and cache.exists()

    # While the dump is unchanged the listing comes from the cache: no span is read.
    def no_load(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the dump was read again")

    with monkeypatch.context() as m:
        m.setattr("otel_replay.runs.load.build_traces", no_load)
        assert ls_json(dump) == first
        assert ls_json(dump, "--error")[0]["user_id"] == "u_2"
        # --no-cache reads the dump
        assert isinstance(invoke("ls", "--no-cache", dump).exception, AssertionError)

    record_run(dump, LOOKUP, user="u_4", session="s_4")  # the dump grows: read again
    again = ls_json(dump)
    assert [r["user_id"] for r in again] == ["u_1", "u_2", "u_3", "u_4"]


def test_no_cache_reads_the_dump_and_saves_nothing(dump: Path) -> None:
    assert len(ls_json("--no-cache", dump)) == 3
    assert not Path(str(dump) + summary_cache.SUFFIX).exists()


def test_a_directory_keeps_its_summaries_inside(dump: Path) -> None:
    runs = ls_json(dump.parent)
    assert len(runs) == 3
    assert (dump.parent / ".otel-replay-runs").exists()
    assert ls_json(dump.parent) == runs
    # The dump's own cache file is never read as a dump.
    ls_json(dump)
    assert len(ls_json("--no-cache", dump.parent)) == 3


def test_a_torn_dump_is_listed_reported_and_not_cached(dump: Path) -> None:
    with open(dump, "ab") as f:
        f.write(b"\x00\x00\x10\x00partial")
    result = invoke("ls", "--json", dump)
    assert result.exit_code == 2
    assert len(json.loads(result.stdout)["runs"]) == 3
    assert str(dump) in result.stderr and "byte" in result.stderr
    assert not Path(str(dump) + summary_cache.SUFFIX).exists()


def test_missing_file_is_exit_2(tmp_path: Path) -> None:
    result = invoke("ls", tmp_path / "nope.otlp")
    assert result.exit_code == 2 and "nope.otlp" in result.stderr


def test_ls_as_a_user_runs_it(dump: Path) -> None:
    done = cli_process("ls", dump, "--sort", "tokens", "--reverse")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4 and "u_3" in lines[1]


@pytest.mark.parametrize(
    "case", ["otel_openai_v2/chat_sync", "pydantic_ai/v6_stream", "anthropic_sdk/sync"]
)
def test_third_party_runs_are_listed(case: str, tmp_path: Path) -> None:
    source = THIRDPARTY / case / "traces.otlp.jsonl"
    copy = tmp_path / "traces.otlp.jsonl"
    copy.write_bytes(source.read_bytes())
    (summary,) = ls_json(copy)
    (run,) = otel_replay.load(copy)
    assert summary["model_calls"] == len(run.model_steps()) >= 2
    assert summary["tool_calls"] == 2
    assert summary["verdict"] == run.kit.verdict
    assert summary["models"] and summary["tokens"] > 0
    assert set(summary["tools"]) == {"lookup_order", "cancel_order"}
