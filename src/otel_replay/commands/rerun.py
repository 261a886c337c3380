"""``otel-replay replay``: run the user's agent against a recorded run from the command line.

The agent is named ``MODULE:FUNC`` and called with the run's recorded input
by :func:`otel_replay.call_agent` (the one definition the tests ``otel-replay
regress`` writes use too): by the names of its parameters it is given
``model``, ``base_url`` or ``client``, or else the provider variables point
the clients it makes itself at the replay.  The
selective-replay options of :func:`otel_replay.replay` are all there: a live
model (``MODULE:FUNC``, see :mod:`otel_replay.replay.selective`), ``--from N``,
``--override N=JSON``, ``--model live`` for the drift report.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..replay.agent_call import REACH, call_agent, provider_of
from ..replay.divergence import ReplayDivergence, ReplayRefused
from ..replay.options import ReplayOptions
from ..replay.session import ReplayReport, ReplaySession, replay
from ..runs.model import Run
from ..runs.verdict import Outcome
from .regress import RegressError, agent_kwargs, question_of

__all__ = ["REACH", "Rerun", "call_agent", "import_ref", "overrides", "provider_of", "rerun"]

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def import_ref(ref: str) -> Callable[..., Any]:
    """The function ``MODULE:FUNC`` names (the current directory is importable, as for pytest).

    Only ever a name the user gives on the command line (``--agent``, ``--live``,
    ``--check``): no name a trace holds reaches an import.
    """
    if not _REF.match(ref):
        raise RegressError(f"{ref!r} is not MODULE:FUNC (e.g. myapp.agent:run_agent)")
    module, _, name = ref.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise RegressError(f"{ref}: cannot import it ({exc})") from exc
    if not callable(fn):
        raise RegressError(f"{ref} is not callable")
    return fn  # type: ignore[no-any-return]


def overrides(pairs: Sequence[str]) -> dict[int, Any]:
    """``N=JSON`` pairs (a text VALUE that is not JSON is kept as text)."""
    out: dict[int, Any] = {}
    for pair in pairs:
        index, sep, raw = pair.partition("=")
        if not sep or not index.strip().isdigit():
            raise RegressError(f"--override {pair!r}: expected STEP=VALUE (VALUE as JSON)")
        try:
            out[int(index)] = json.loads(raw)
        except ValueError:
            out[int(index)] = raw
    return out


@dataclasses.dataclass
class Rerun:
    session: ReplaySession
    report: ReplayReport
    answer: Any
    error: BaseException | None


def rerun(
    run: Run,
    agent: str,
    *,
    kwargs: Sequence[str] = (),
    question: str | None = None,
    options: ReplayOptions | None = None,
) -> Rerun:
    """Replay ``run`` with the agent ``agent``; a divergence or a refusal (the trace lacks
    what the replay needs: before the agent runs, or at its step) is in the report, not
    raised."""
    fn = import_ref(agent)
    args = agent_kwargs(run, kwargs)
    asked = question if question is not None else question_of(run)
    opts = options or ReplayOptions()
    session = replay(run, options=opts)
    answer: Any = None
    error: BaseException | None = None
    try:
        with session:
            answer = call_agent(fn, session, asked, **args)
            if isinstance(answer, str) and opts.live_from is None and not opts.override:
                session.check_output(answer)
    except (ReplayDivergence, ReplayRefused):
        pass  # in the report
    except Exception as exc:  # the agent's own failure: say it, do not hide the report
        error = exc
    return Rerun(session, session.report(), answer, error)


def raised_as_recorded(recorded: Outcome, error: BaseException) -> bool:
    """True when ``error`` is what the recorded run raised: its type (recorded as NAME,
    QUALNAME or MODULE.QUALNAME: a script's classes are ``__main__``'s) and its message,
    each where recorded.  A replay that raises so has followed the recording."""
    if not recorded.raised:
        return False
    kind, said = type(error), recorded.error_type
    if said not in (None, kind.__name__) and not f".{said}".endswith(f".{kind.__qualname__}"):
        return False
    return recorded.error_message is None or str(error) == recorded.error_message


def unapplied(done: Rerun) -> list[str]:
    """Each replay option that never took effect, and why, one line each (empty: all did).

    An option the agent's calls went past without it applying (a tool step the
    agent ran without going through a replayed tool) must not leave a replay
    that looks like it was applied.  A replay that stopped before an option's
    step is the report's divergence to tell, not this.
    """
    session, report = done.session, done.report
    if report.refusal is not None:
        return []  # refused: what the trace lacks is the report's to tell, not the options
    plan = session.plan
    replayed = {index for index, _, _ in report.replayed}
    last = max(replayed, default=-1)
    out = []
    for index in sorted(plan.override):
        if index not in replayed and last > index:
            out.append(
                f"--override {index}: the replay went past {session.run.steps[index].label()} "
                "without it being asked for, so the fork did not happen (a tool the agent calls "
                "directly is not replayed: record it with @otel_replay.tool)"
            )
    start = plan.live_from
    if start is not None and not plan.gone_live and (report.divergence is None or last >= start):
        out.append(
            f"--from {start}: the replay never reached step {start} "
            f"(the run has {len(session.run.steps)} steps), so nothing ran live"
        )
    if plan.model == "live" and not plan.drift and any(k == "model" for _, k, _ in report.replayed):
        out.append("--model live: no model request reached the live model")
    return out
