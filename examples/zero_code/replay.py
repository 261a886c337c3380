"""Replay a recorded run of agent.py without changing agent.py.

    python examples/zero_code/replay.py runs.otlp

The model is pinned to the recorded responses and ``lookup_order`` answers
from the recording, so the run comes back the same even though the order
database has been emptied here.  Exits 1 if the replay diverged.
"""

from __future__ import annotations

import sys

import agent  # examples/zero_code/agent.py, beside this file

import otel_replay


def main(path: str) -> int:
    (run,) = otel_replay.load(path)
    question = run.model_steps()[0].model.input_messages[0]["parts"][0]["content"]  # type: ignore[union-attr]
    # agent.py's tool is plain code; wrapped here, from outside, the replay can
    # answer it from the recording.
    agent.lookup_order = otel_replay.tool(agent.lookup_order)  # type: ignore[assignment]
    agent.ORDERS.clear()  # the database has moved on: only the recording knows the answer
    with otel_replay.replay(run) as session:
        answer = agent.run(question, model=session.model)
        session.check_output(answer)
    report = session.report()
    print(answer)
    print(report)
    return 0 if report.matched else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "runs.otlp"))
