"""``otel-replay cohort -o DIR`` killed at any moment continues where it stopped.

A cohort writes each run's replay, one per candidate, as one record appended
to ``DIR/candidate-N.otlp``; run again into the same DIR it reports the runs
replayed there from their replays and replays the rest.  A cohort killed
(SIGKILL: nothing of its own runs) while appending leaves a record cut short
at the end of the file.  The next call cuts it, says so once, and replays that
run again: the totals and every run's outcomes are those of a cohort never
stopped, and each run's replay is in each file once.

The cohort is the order-support example's runs, each question numbered; the
candidates are the recorded agent (the same), its fix (another path) and a
rewording of its answer (another answer), against the pinned model.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import strategies as st

import otel_replay
from tests.fixtures.cli import SRC
from tests.fixtures.tiers import tiered
from tests.unit.commands.test_cohort import ROOT, cohort_cli
from tests.unit.commands.test_cohort_scale import MANY, many

__all__ = ["many"]  # the recorded runs, a fixture shared with test_cohort_scale

#: Runs of the cohort.
RUNS = MANY
CANDIDATES = (
    *("--agent", "examples.order_support.agent:run_agent"),
    *("--agent", "tests.fixtures.cohort_agents:fixed_agent"),
    *("--agent", "tests.fixtures.cohort_agents:exclaiming_agent"),
    *("--kwarg", "user_id=@user.id"),
)


@pytest.fixture(scope="module")
def runs(many: Path) -> Path:
    """The example agent's runs, :data:`RUNS` of them, each question numbered."""
    return many


@pytest.fixture(scope="module")
def whole(runs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The cohort run once, never stopped: its document, and the DIR it wrote."""
    out = tmp_path_factory.mktemp("whole") / "replays"
    code, said, err = cohort_cli(runs, *CANDIDATES, "-o", out, "--json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(said)
    kinds = Counter(o["outcome"] for r in doc["runs"] for o in r["outcomes"])
    assert set(kinds) == {"same", "other_path", "other_answer"}, kinds
    return doc, out


def seen(doc: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """What a resumed cohort must give as one never stopped gives it: each run's outcomes
    (all but their time, the id of their written replay, and whether they were read
    back), and each candidate's totals (all but the times)."""
    runs = [
        (
            r["run_id"],
            r["skipped"],
            r["not_run"],
            [
                {k: v for k, v in o.items() if k not in ("latency_ms", "replay_run_id", "resumed")}
                for o in r["outcomes"]
            ],
        )
        for r in doc["runs"]
    ]
    totals = [
        {k: v for k, v in t.items() if k not in ("latency_ms", "latency_ms_per_run", "slowest")}
        for t in doc["totals"]
    ]
    return runs, totals


def written_once(doc: dict[str, Any], out: Path) -> None:
    """Each candidate's file holds each run's replay once, the one the outcome names."""
    for n in range(len(doc["cohort"]["candidates"])):
        replays = otel_replay.load(out / f"candidate-{n + 1}.otlp", strict=True)
        of = sorted(r.roots[0].attributes["otel_replay.replay_of"] for r in replays)
        assert of == sorted(r["run_id"] for r in doc["runs"])
        assert {r["outcomes"][n]["replay_run_id"] for r in doc["runs"]} == {
            r.run_id for r in replays
        }


def records(path: Path) -> list[int]:
    """Where each whole record of a 4-byte framed file ends (a torn one at its end left
    out)."""
    data, ends, at = path.read_bytes(), [], 0
    while at + 4 <= len(data):
        at += 4 + int.from_bytes(data[at : at + 4], "big")
        if at > len(data):
            break
        ends.append(at)
    return ends


def a_replay_cut_short_at_any_byte_is_replayed_again(
    whole: tuple[dict[str, Any], Path], runs: Path, tmp_path: Path, data: st.DataObject
) -> None:
    """A candidate's file cut at any byte (as a cohort killed while appending leaves it):
    the torn record is cut and said once, its run replayed again, the rest reported
    from their replays; the outcomes and totals are the whole cohort's."""
    doc, written = whole
    out = Path(tempfile.mkdtemp(dir=tmp_path)) / "replays"
    shutil.copytree(written, out)
    n = data.draw(st.integers(1, len(doc["cohort"]["candidates"])), label="candidate")
    file = out / f"candidate-{n}.otlp"
    size = file.stat().st_size
    cut = data.draw(st.integers(0, size - 1), label="cut at byte")
    with open(file, "r+b") as f:
        f.truncate(cut)
    ends = records(written / file.name)
    assert ends[-1] == (written / file.name).stat().st_size
    whole_records = [end for end in ends if end <= cut]
    torn = cut not in (0, *whole_records)

    code, said, err = cohort_cli(runs, *CANDIDATES, "-o", out, "--json")
    assert code == 0, err
    again = json.loads(said)
    assert seen(again) == seen(doc)
    written_once(again, out)
    # The torn record said once, in one line naming the file.
    about = [line for line in err.splitlines() if file.name in line and "wrote" not in line]
    assert len(about) == (1 if torn else 0), err
    assert all("torn record" in line for line in about), err
    # Only the runs whose replay for candidate n was lost were replayed again.
    lost = RUNS - len(whole_records)
    assert again["cohort"]["resumed"] == RUNS * len(doc["cohort"]["candidates"]) - lost
    assert sum(not r["outcomes"][n - 1]["resumed"] for r in again["runs"]) == lost


# Each draw replays a whole cohort: a few in the default tier, many in the slow one.
(
    test_a_replay_cut_short_at_any_byte_is_replayed_again,
    test_a_replay_cut_short_at_any_byte_is_replayed_again_many,
) = tiered(
    3,
    24,
    data=st.data(),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)(a_replay_cut_short_at_any_byte_is_replayed_again)


def killed_again_and_again(
    runs: Path, out: Path, whole: dict[str, Any], kills: int, seed: int
) -> list[float]:
    """The cohort into ``out``, with its page, killed (SIGKILL) ``kills`` times, each call
    continuing from the last, then let finish; the delays drawn.  A kill comes a random
    delay after the call's start (while it starts, lists, reads what was written), or,
    mostly, a random delay after it first appends a replay (while it replays, writes
    replays and pages)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(ROOT)])}
    args = [sys.executable, "-m", "otel_replay.cli.main", "cohort", str(runs), *CANDIDATES]
    args += ["-o", str(out), "--html", str(out / "cohort.html"), "--json"]
    draw = random.Random(seed)
    delays = []

    def sizes() -> list[int]:
        return [f.stat().st_size for f in sorted(out.glob("candidate-*.otlp"))]

    left: list[int] = []  # the replays written when each kill came
    for k in range(kills):
        writing = k == 0 or draw.random() < 0.75
        # The first kill lands as the first replay is written: on a fast machine the
        # whole cohort can be written within a delay drawn for the others.
        delays.append(0.0 if k == 0 else draw.uniform(0.0, 0.3 if writing else 1.5))
        before = sizes()
        with subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ) as proc:
            while writing and sizes() == before and proc.poll() is None:
                time.sleep(0.002)
            time.sleep(delays[-1])
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        left.append(sum(len(records(f)) for f in out.glob("candidate-*.otlp")))
    # The first kill at least came while the cohort wrote its replays.
    assert any(0 < n < RUNS * 3 for n in left), f"seed {seed}, delays {delays}, written {left}"
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)
    assert seen(again) == seen(whole), f"seed {seed}, delays {delays}"
    written_once(again, out)
    # The page links every outcome to its run and replay side by side.
    page = (out / "cohort.html").read_text(encoding="utf-8")
    for r in again["runs"]:
        for o in r["outcomes"]:
            assert o["replay_run_id"][:16] in page
    assert page.count('href="diff-') == RUNS * len(whole["cohort"]["candidates"])
    return delays


def test_a_cohort_killed_at_random_moments_ends_as_one_never_stopped(
    whole: tuple[dict[str, Any], Path], runs: Path, tmp_path: Path
) -> None:
    seed = random.SystemRandom().randrange(2**32)
    killed_again_and_again(runs, tmp_path / "replays", whole[0], kills=3, seed=seed)


@pytest.mark.slow
def test_a_cohort_killed_many_times_ends_as_one_never_stopped(
    whole: tuple[dict[str, Any], Path], runs: Path, tmp_path: Path
) -> None:
    for round in range(3):
        seed = random.SystemRandom().randrange(2**32)
        out = tmp_path / f"replays-{round}"
        killed_again_and_again(runs, out, whole[0], kills=15, seed=seed)
