"""``otel-replay replay``: run the user's agent against a recorded run from the command line.

The agent is named ``MODULE:FUNC`` and called as
``FUNC(question, model=session.model, **kwargs)`` (the convention of
``otel-replay regress``); the question is the run's recorded input.  The
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

from ..replay.divergence import ReplayDivergence
from ..replay.options import ReplayOptions
from ..replay.session import ReplayReport, ReplaySession, replay
from ..runs.model import Run
from .regress import RegressError, agent_kwargs, question_of

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def import_ref(ref: str) -> Callable[..., Any]:
    """The function ``MODULE:FUNC`` names (the current directory is importable, as for pytest)."""
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
    """Replay ``run`` with the agent ``agent``; a divergence is in the report, not raised."""
    fn = import_ref(agent)
    args = agent_kwargs(run, kwargs)
    asked = question if question is not None else question_of(run)
    opts = options or ReplayOptions()
    session = replay(run, options=opts)
    answer: Any = None
    error: BaseException | None = None
    try:
        with session:
            answer = fn(asked, model=session.model, **args)
            if isinstance(answer, str) and opts.live_from is None and not opts.override:
                session.check_output(answer)
    except ReplayDivergence:
        pass  # in the report
    except Exception as exc:  # the agent's own failure: say it, do not hide the report
        error = exc
    return Rerun(session, session.report(), answer, error)
