"""Run a stack's agent script inside ``otel_replay.replay(...)``: the in-process replay.

    STACK_PYTHON tests/conformance/inprocess.py RESULT_JSON TRACE... -- AGENT_SCRIPT ARGS...

Run by :mod:`.replay_agents` with the stack's own Python, as the agent's
command with this script in front of it.  The case's trace files are loaded
and their one run replayed: the agent script runs in this process (``runpy``)
inside the session, its ``--base-url`` pointed at ``session.base_url``, its
framework's tools answered by the session (the integration of that
framework, installed by the session, undone after it).  ``RESULT_JSON``
receives the session's report, the divergence if any, and the scenario tools
that ran for real (none, when every tool call was stubbed).

``otel_replay`` comes from this checkout's ``src/``; the packages it needs
that the stack's environment lacks, from the directory named by
``OTEL_REPLAY_EXTRA_SITE`` (searched after the stack's own site-packages, so
the stack's versions win).

With ``CONFORMANCE_DECORATE_TOOLS=1`` (stacks whose agent calls its tool
functions itself), the documented setup for such agents is applied first:
each of the scenario's tool functions gets ``@otel_replay.tool``, and the
replay is told how the agent sends its tools' results
(``results_from_messages="json"``: each loop sends ``json.dumps(result)``), since
a client-only trace holds only the text the model was sent.

With ``CONFORMANCE_CHANGE_TOOL=NAME``, the recorded result of the first call of
tool NAME is changed before the replay (a different value of the same kind):
the replay must then diverge, naming the step where the agent's request
stops matching the recording.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def change_tool_result(run: Any, name: str) -> str:
    """Change the recorded result of ``run``'s first call of tool ``name``; what changed."""
    from otel_replay.runs.derived_tools import unverified

    step = next(s for s in run.steps if s.kind == "tool" and s.tool and s.tool.tool_name == name)
    value = step.tool.result_payload.value() if step.tool.result_payload else step.tool.result
    if isinstance(value, dict):
        changed: Any = {**value, "status": "changed by the test"}
    elif isinstance(value, str):
        changed = value.replace("ORD-", "ORD-9")
        changed = changed if changed != value else value + " (changed by the test)"
    else:
        raise SystemExit(f"cannot change {name}'s result {value!r}")
    step.tool.result, step.tool.result_payload = changed, unverified(changed)
    return f"{step.label()}: {value!r} -> {changed!r}"


def main(argv: list[str]) -> int:
    split = argv.index("--")
    result_path, traces = Path(argv[0]), argv[1:split]
    script, *args = argv[split + 1 :]
    sys.path.insert(0, str(ROOT / "src"))
    extra = os.environ.get("OTEL_REPLAY_EXTRA_SITE")
    if extra:
        sys.path.append(extra)
    import scenario

    import otel_replay
    from otel_replay.capture import frameworks

    result: dict[str, Any] = {"exit": 0}
    runs = otel_replay.load(*traces)
    if len(runs) != 1:
        result.update(exit=2, error=f"{len(runs)} runs in {traces}: replay takes one")
        result_path.write_text(json.dumps(result), encoding="utf-8")
        return 2
    if os.environ.get("CONFORMANCE_DECORATE_TOOLS") == "1":
        for name, fn in list(scenario.TOOLS.items()):
            scenario.TOOLS[name] = otel_replay.tool(name=name)(fn)
    changed = os.environ.get("CONFORMANCE_CHANGE_TOOL")
    if changed:
        result["changed"] = change_tool_result(runs[0], changed)
    options: dict[str, Any] = {}
    if os.environ.get("CONFORMANCE_DECORATE_TOOLS") == "1":
        options["results_from_messages"] = "json"
    session = otel_replay.replay(runs[0], **options)
    try:
        with session:
            url = session.base_url
            sys.argv = [script, *[a.replace("{replay}", url) for a in args]]
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise
            finally:
                result["frameworks"] = frameworks.installed()
    except BaseException as exc:
        result["exit"] = 1
        result["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        result["traceback"] = traceback.format_exc()[-3000:]
    report = session.report()
    result["report"] = str(report)
    result["matched"] = report.matched
    divergence = report.divergence
    result["divergence"] = str(divergence).splitlines()[0] if divergence is not None else None
    result["replayed"] = [list(r) for r in report.replayed]
    result["live_tools"] = list(scenario.CALLS)
    result["tool_calls"] = [[name, args] for name, args in session.tool_calls]
    result_path.write_text(json.dumps(result, ensure_ascii=False, default=str), encoding="utf-8")
    sys.stdout.flush()
    return int(result["exit"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
