"""``otel-replay cohort`` at scale: runs replayed at once (``-j``), caps that stop cleanly,
a cohort resumed from the replays it wrote, the live progress line.

The cohort is the order-support example's runs (one question each, as
``test_cohort`` records them, and more of them here); the candidate models
are fake OpenAI-compatible servers on 127.0.0.1, scripted per question.
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from examples.order_support.agent import lookup_order
from examples.order_support.record import record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import messages as M
from otel_replay.commands.cohort import OUTCOMES, Comparator, Outcome, Price
from otel_replay.commands.cohort_runs import Caps, Row, Stop, replayed
from otel_replay.replay.candidate_model import CandidateModel
from otel_replay.runs.summary import summarize
from tests.fixtures.cli import SRC
from tests.unit.commands.test_cohort import (
    QUESTIONS,
    ROOT,
    cohort,
    cohort_cli,
    function_model,
    no_tools,
    politer,
    scripted,
    with_user_id,
)

__all__ = ["cohort"]  # the recorded runs, a fixture shared with test_cohort

#: Runs of the bigger cohort: each question asked again, numbered.
MANY = 24
#: By a question's number, how the mixed candidate answers it.
BEHAVIOURS = [scripted, politer, no_tools, with_user_id]


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example agent's runs, :data:`MANY` of them, each question numbered."""
    path = tmp_path_factory.mktemp("many") / "runs.otlp"
    for n in range(MANY):
        record(path, f"{QUESTIONS[n % len(QUESTIONS)]} ({n})")
    return path


class Mixed:
    """A candidate model answering each run's question as :data:`BEHAVIOURS` says for its
    number, after ``pause`` seconds; it notes the most requests it held at once and when
    each came."""

    def __init__(self, pause: float = 0.0) -> None:
        self.pause = pause
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.times: list[float] = []

    def __call__(self, messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.times.append(time.monotonic())
        try:
            time.sleep(self.pause)
            asked = next(str(M.last_text([m])) for m in messages if m["role"] == "user")
            found = re.search(r"\((\d+)\)", asked)
            n = int(found.group(1)) if found else 0
            return BEHAVIOURS[n % len(BEHAVIOURS)](messages, body)
        finally:
            with self.lock:
                self.now -= 1


def printing_lookup(query: str, user_id: str | None = None) -> list[dict[str, str]]:
    """The fixed lookup, run live; it prints (as tools do) and takes its time, so that
    runs replayed at once print at once."""
    print(f"looked up {query!r} for {user_id}")
    time.sleep(0.005)
    found: list[dict[str, str]] = lookup_order.__wrapped__(query)  # type: ignore[attr-defined]
    return [o for o in found if o["user_id"] == user_id]


def _seen(doc: dict[str, Any]) -> list[Any]:
    """What -j must not change: each run in order, why it has no outcome, and each
    outcome (all but its time and the id of its written replay)."""
    return [
        (
            r["run_id"],
            r["skipped"],
            r["not_run"],
            [
                {k: v for k, v in o.items() if k not in ("latency_ms", "replay_run_id")}
                for o in r["outcomes"]
            ],
        )
        for r in doc["runs"]
    ]


def test_runs_replayed_at_once_give_what_one_at_a_time_gives(many: Path) -> None:
    """Model candidates' runs overlap; an agent (which patches the process) runs alone;
    the document is the same, in the same order; what live tools print, at once, goes
    to stderr, never into the document."""
    model = Mixed(pause=0.01)
    with function_model(model) as url, function_model(with_user_id) as careful:
        args = (
            many,
            *("--model", f"openai:mixed@{url}"),
            *("--model", f"openai:careful@{careful}"),  # a call run live on every run
            *("--agent", "tests.fixtures.cohort_agents:fixed_agent", "--kwarg", "user_id=@user.id"),
            *("--live-tool", f"lookup_order={__name__}:printing_lookup"),
            "--json",
        )
        one = cohort_cli(*args, "-j", "1")
        most_alone, model.most = model.most, 0
        four = cohort_cli(*args, "-j", "4")
    assert one[0] == 0 and four[0] == 0, one[2] + four[2]
    first, second = json.loads(one[1]), json.loads(four[1])
    assert _seen(first) == _seen(second)
    assert first["totals"][1]["counts"] == second["totals"][1]["counts"]
    kinds = [r["outcomes"][1]["outcome"] for r in first["runs"]]
    assert kinds == ["same", "other_answer", "other_path", "other_path"] * (MANY // 4)
    assert [r["outcomes"][0]["outcome"] for r in second["runs"]] == ["other_path"] * MANY
    assert [r["outcomes"][2]["outcome"] for r in second["runs"]] == ["other_path"] * MANY
    assert one[2].count("looked up ") == four[2].count("looked up ") == MANY + MANY // 4
    assert second["cohort"]["jobs"] == 4
    assert most_alone == 1 and model.most > 1
    assert "cohort: " not in one[2] + four[2]  # stderr is no terminal: no progress line


def test_each_cap_stops_before_a_run_and_lists_the_rest(cohort: Path) -> None:
    """Two requests and 28 tokens a run (11 + 3 a request); one run over a cap's mark
    starts no other; each run is in the output, replayed or not run."""
    replayable = len(QUESTIONS)
    with function_model(scripted) as url:
        model = ("--model", f"openai:m@{url}")
        by_requests = cohort_cli(cohort, *model, "--max-requests", "3")
        priced = ("--price", "m=1000000/0")  # a dollar an input token: $22 a run
        by_cost = cohort_cli(cohort, *model, *priced, "--max-cost", "30", "--json")
        unpriced = cohort_cli(cohort, *model, "--max-cost", "30")
    code, out, err = by_requests
    assert code == 3, err
    assert "not run: 2 run(s): --max-requests 3 reached (4 requests):" in out
    assert "openai:m: 2 run(s): 2 same (100% same)" in out and "2 run(s) not run" in out
    assert sum(" not run " in line or line.endswith("not run") for line in out.splitlines()) >= 2
    assert "2 run(s) not run: --max-requests 3" in err and "with -o DIR" in err
    for (code, out, err), left, why in [
        (by_cost, 2, "--max-cost 30 reached ($44.0000)"),
    ]:
        assert code == 3, err
        doc = json.loads(out)
        done = [r for r in doc["runs"] if r["outcomes"]]
        assert [r["not_run"] for r in doc["runs"] if not r["outcomes"] and not r["skipped"]] == [
            why
        ] * left
        assert len(done) == replayable - left and len(doc["runs"]) == replayable + 1
        assert doc["totals"][0]["not_run"] == left and doc["cohort"]["not_run"] == left
    assert unpriced[0] == 2 and "give their --price" in unpriced[2]


def test_a_stopped_cohort_continues_from_the_replays_it_wrote(many: Path, tmp_path: Path) -> None:
    """SIGTERM mid-way: the runs under way finish and are written, the rest are listed as
    not run (exit 143); the same command again replays only those, reports the others
    from their written replays, under the same cohort id, at the rate asked for."""
    out = tmp_path / "replays"
    slow = Mixed(pause=0.1)
    with function_model(slow) as url:
        args = [
            *("-m", "otel_replay.cli.main", "cohort", many),
            *("--model", f"openai:mixed@{url}", "-o", out, "--json", "-j", "2"),
        ]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(SRC), str(ROOT)]),
        }
        with subprocess.Popen(
            [sys.executable, *map(str, args)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:
            written = out / "candidate-1.otlp"
            deadline = time.monotonic() + 60
            while not (written.exists() and written.stat().st_size) and proc.poll() is None:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            stopped, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGTERM, err
        first = json.loads(stopped)
        done = {r["run_id"] for r in first["runs"] if r["outcomes"]}
        left = [r for r in first["runs"] if r["not_run"]]
        assert done and left and len(done) + len(left) == MANY
        assert {r["not_run"] for r in left} == {"stopped by SIGTERM"}
        assert {
            r.roots[0].attributes["otel_replay.replay_of"] for r in otel_replay.load(written)
        } == done
        slow.times.clear()
        slow.pause = 0.0
        code, again, err = cohort_cli(
            many, "--model", f"openai:mixed@{url}", "-o", out, "--json", "--rate", "20/s"
        )
    assert code == 0, err
    second = json.loads(again)
    assert second["cohort"]["id"] == first["cohort"]["id"]
    assert second["cohort"]["resumed"] == len(done) and second["cohort"]["not_run"] == 0
    before = {r["run_id"]: r["outcomes"][0] for r in first["runs"] if r["outcomes"]}
    for r in second["runs"]:
        (o,) = r["outcomes"]
        assert o["resumed"] == (r["run_id"] in done)
        if o["resumed"]:
            assert {**o, "resumed": False} == before[r["run_id"]]
    kinds = [r["outcomes"][0]["outcome"] for r in second["runs"]]
    assert kinds == ["same", "other_answer", "other_path", "new_path"] * (MANY // 4)
    # Only the runs left were asked for again, 20 requests a second at most.
    requests = sum(
        r["outcomes"][0]["model_calls"] for r in second["runs"] if r["run_id"] not in done
    )
    assert len(slow.times) == requests
    # Sent 0.05 s apart; the second may reach the server late, by the network's jitter
    # (the first later still: the SDK's client is made for it).
    assert slow.times[-1] - slow.times[1] > (requests - 2) * 0.05 - 0.03
    written_once = [
        r.roots[0].attributes["otel_replay.replay_of"] for r in otel_replay.load(written)
    ]
    assert sorted(written_once) == sorted(r["run_id"] for r in second["runs"])


def _on_a_terminal(*args: str | Path) -> tuple[int, str]:
    """``otel-replay cohort ARGS`` with stderr on a pseudo-terminal: the exit status and
    what the terminal was sent."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(ROOT)])}
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otel_replay.cli.main", "cohort", *map(str, args)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=follower,
        )
        os.close(follower)
        said = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end closed
                break
            if not chunk:
                break
            said += chunk
        return proc.wait(timeout=60), said.decode("utf-8", "replace")
    finally:
        os.close(leader)


def test_the_progress_line_shows_on_a_terminal_and_not_with_json(
    cohort: Path,
) -> None:
    with function_model(scripted) as url:
        code, shown = _on_a_terminal(cohort, "--model", f"openai:m@{url}")
        quiet_code, quiet = _on_a_terminal(cohort, "--model", f"openai:m@{url}", "--json")
    assert code == 0 and quiet_code == 0, shown + quiet
    total = len(QUESTIONS) + 1
    assert f"\rcohort: {total}/{total} runs · {len(QUESTIONS)} same · 1 skipped · " in shown
    assert re.search(r" s\r +\r\Z", shown), shown  # the line is cleared at the end
    assert "cohort: " not in quiet


# --- classes of input: any runs, any number at once, any candidates ---------------------


class _Fake:
    """A candidate whose outcome is a function of the run id, after a pause it names;
    an exclusive one checks that no other replay runs beside it."""

    needs_replayable = False
    record_to = None
    cohort_id = None
    pace = None

    def __init__(self, n: int, exclusive: bool, busy: list[int], lock: threading.Lock) -> None:
        self.label = f"fake {n}"
        self.exclusive = exclusive
        # A candidate model (never asked): its requests count against the caps.
        self.model = CandidateModel("openai", f"fake-{n}")
        self.busy, self.lock = busy, lock

    def replay(self, run: otel_replay.Run, comparator: Comparator) -> Outcome:
        with self.lock:
            self.busy[0] += 1
            alone = self.busy[0] == 1
        try:
            time.sleep(int(run.run_id[:2], 16) / 255 / 500)
            kind = OUTCOMES[int(run.run_id[-4:], 16) % len(OUTCOMES)]
            return Outcome(
                kind,
                detail=f"{self.label} {run.run_id} {alone or not self.exclusive}",
                model_calls=1,
                input_tokens=3,
                output_tokens=2,
            )
        finally:
            with self.lock:
                self.busy[0] -= 1


@pytest.fixture(scope="module")
def summaries(many: Path) -> list[Any]:
    return [summarize(r) for r in otel_replay.load(many)]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.data(),
    jobs=st.integers(1, 5),
    exclusive=st.lists(st.booleans(), min_size=1, max_size=3),
)
def test_rows_come_in_the_cohorts_order_whatever_runs_at_once(
    many: Path, summaries: list[Any], data: st.DataObject, jobs: int, exclusive: list[bool]
) -> None:
    """Any runs in any order, any number at once, candidates exclusive or not, a cap or
    none: each run is in the rows once, in order, replayed or not run; a run replayed has
    each candidate's outcome; an exclusive candidate never replays beside another."""
    picked = data.draw(st.lists(st.sampled_from(summaries), unique_by=lambda s: s.run_id))
    cap = data.draw(st.none() | st.integers(1, 2 * MANY))
    # Each candidate's run spends a request, 5 tokens and $3: a cap of each, in those units.
    which = data.draw(st.sampled_from(["requests", "tokens", "cost"]))
    unit = {"requests": 1, "tokens": 5, "cost": 3}[which]
    caps = Caps(**{which: cap * unit}) if cap is not None else Caps()
    busy, lock = [0], threading.Lock()
    candidates = [_Fake(n, e, busy, lock) for n, e in enumerate(exclusive)]
    told: list[Row] = []
    rows, faults = replayed(
        [str(many)],
        picked,
        candidates,
        Comparator(),
        {f"fake-{n}": Price(1e6, 0.0) for n in range(len(candidates))},  # $1 an input token
        jobs=jobs,
        caps=caps,
        done=told.append,
    )
    assert not faults
    assert [r.summary.run_id for r in rows] == [s.run_id for s in picked]
    assert sorted(id(r) for r in told) == sorted(id(r) for r in rows)
    ran = [r for r in rows if r.outcomes]
    for r in ran:
        assert r.not_run is None and r.skipped is None
        assert [o.detail for o in r.outcomes] == [
            f"{c.label} {r.summary.run_id} True" for c in candidates
        ]
    if cap is None:
        assert len(ran) == len(picked)
    else:
        spent = len(ran) * len(candidates)
        assert len(ran) == len(picked) or spent >= cap
        assert spent - len(candidates) * jobs < cap or not ran  # a run starts under the cap
        assert all(
            r.not_run and r.not_run.startswith(f"--max-{which}") for r in rows if not r.outcomes
        )


def test_a_stop_starts_no_more_runs(many: Path, summaries: list[Any]) -> None:
    stop = Stop()
    busy, lock = [0], threading.Lock()
    candidates = [_Fake(0, False, busy, lock)]
    rows: list[Row] = []

    def after_three(row: Row) -> None:
        rows.append(row)
        if len(rows) == 3:
            stop.set("stopped by SIGINT")

    got, _ = replayed(
        [str(many)], summaries, candidates, Comparator(), {}, stop=stop, done=after_three
    )
    assert [bool(r.outcomes) for r in got] == [True] * 3 + [False] * (len(summaries) - 3)
    assert {r.not_run for r in got[3:]} == {"stopped by SIGINT"}
