"""The whole story in one command: ``python -m examples.order_support [OUT_DIR]``.

1. record a run where the agent answers with another user's order;
2. show the run as a tree;
3. replay it deterministically (stub tools, pinned model, frozen clock): the
   wrong answer comes back, byte for byte;
4. replay the fixed agent against the same recording: the divergence is
   named at the lookup step;
5. lock the fix: record the fixed agent, write a regression test from that
   run with ``otel-replay regress`` (final answer, tool calls, and "never
   another user's order"), and run it with pytest when pytest is installed.
Exits 0 when all of that happened as expected.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import otel_replay

from .agent import ORDERS, run_agent
from .record import QUESTION, USER, record


def main(out_dir: str = "out") -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "order_support.otlp"
    path.unlink(missing_ok=True)

    print(f"== 1. record: user {USER['user.id']} asks {QUESTION!r}")
    answer = record(path)
    print(f"   agent answered: {answer}")
    print(f"   trace written to {path}\n")

    print("== 2. show the run")
    shown = subprocess.run(
        [sys.executable, "-m", "otel_replay.cli.main", "show", str(path)], check=False
    )
    if shown.returncode != 0:
        return 1

    print("\n== 3. replay the recorded run (tools stubbed, model pinned, clock frozen)")
    with otel_replay.replay(path) as session:
        replayed = run_agent(QUESTION, model=session.model, user_id=USER["user.id"])
        session.check_output(replayed)
    report = session.report()
    print(report)
    owner = next((o["user_id"] for o in ORDERS if f"#{o['order_id']}" in replayed), None)
    print(f"   replayed answer: {replayed}")
    print(
        f"   the order it names belongs to {owner}, the user is {USER['user.id']}: "
        + ("the failure is reproduced" if owner != USER["user.id"] else "no failure")
    )
    ok = report.matched and owner != USER["user.id"]

    print("\n== 4. fix lookup_order (pass the user id) and replay the same recording")
    try:
        with otel_replay.replay(path) as session:
            run_agent(QUESTION, model=session.model, user_id=USER["user.id"], fixed=True)
        print("   the fixed agent followed the recording: the fix changed nothing?!")
        ok = False
    except otel_replay.ReplayDivergence as divergence:
        print(divergence)
        ok = ok and divergence.kind == "tool" and divergence.name == "lookup_order"

    print("\n== 5. lock the fix: record the fixed agent, write a regression test, run it")
    fixed = out / "order_support_fixed.otlp"
    fixed.unlink(missing_ok=True)
    print(f"   fixed agent answered: {record(fixed, fixed=True)}")
    test = out / "test_order_support_regression.py"
    regress = [
        *("otel-replay", "regress", str(fixed), "-o", str(test)),
        *("--agent", "examples.order_support.agent:run_agent"),
        *("--kwarg", "user_id=@user.id", "--kwarg", "fixed=true"),
        *("--check", "examples.order_support.checks:never_another_users_order"),
    ]
    print("   $ " + " ".join(regress))
    written = subprocess.run(
        [sys.executable, "-m", "otel_replay.cli.main", *regress[1:]], check=False
    )
    ok = ok and written.returncode == 0
    if importlib.util.find_spec("pytest") is None:
        print(f"   pytest is not installed here; run the test with: python -m pytest {test}")
    else:
        print(f"   $ python -m pytest -q {test}")
        tested = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
            check=False,
        )
        ok = ok and tested.returncode == 0

    if ok:
        print(
            "\nOK: the replay matched the recording, the fix diverges at the lookup step,"
            " and a regression test locks the fix"
        )
    else:
        print("\nUNEXPECTED: the replay did not go as the story says")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
