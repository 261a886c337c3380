"""The ``cohort`` command's options as one object, and the candidates they name,
checked: its agents and models, the tools run live, the prices, where each candidate's
replays are written, and how answers are compared.  A combination of options that
cannot go together is the command's error.

The replay machinery is imported inside the functions (``lazy``), so that ``--help``
stays fast.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from .output import fail

if TYPE_CHECKING:
    from ..commands.cohort import Candidate, Comparator, Price


@dataclasses.dataclass(frozen=True)
class Cohort:
    """The ``cohort`` command's options, as given: the sources, the candidates and how
    they are compared, the filters and the draw, what is written and when it fails."""

    paths: tuple[str, ...]
    agents: tuple[str, ...]
    kwargs: tuple[str, ...]
    models: tuple[str, ...]
    live_tools: tuple[str, ...]
    per_step: bool
    settings: tuple[str, ...]
    system_prompt: Any  # an open text file (--system-prompt FILE), or None
    max_turns: int
    prices: tuple[str, ...]
    how: str
    judge_ref: str | None
    agent_name: str | None
    since: str | None
    errors_only: bool
    tools: tuple[str, ...]
    replayable: bool
    sample: int | None
    seed: int | None
    limit: int | None
    as_json: bool
    output: str | None
    html_out: str | None
    fail_under: float | None
    no_cache: bool
    jobs: int | None
    max_requests: int | None
    max_tokens: int | None
    max_cost: float | None
    rate: str | None


def _setting(text: str) -> tuple[str, Any]:
    """``--set NAME=VALUE``: VALUE as JSON, else text."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise click.BadParameter(f"{text!r}: give it as NAME=VALUE (VALUE as JSON)")
    try:
        return name.strip(), json.loads(raw)
    except ValueError:
        return name.strip(), raw


def candidates(opts: Cohort) -> list[Candidate]:
    """Each candidate the options name: the agents first, then the models."""
    # The replay machinery: lazy.
    from ..commands.cohort import AgentCandidate, ModelLoop, ModelPerStep, Pace
    from ..commands.regress import RegressError
    from ..commands.rerun import import_ref
    from ..replay.candidate_model import CandidateModel

    agents, kwargs, models, settings = opts.agents, opts.kwargs, opts.models, opts.settings
    per_step, system_prompt = opts.per_step, opts.system_prompt
    if not agents and not models:
        fail("give at least one candidate: --agent MODULE:FUNC or --model openai:MODEL@URL")
    on_models = any("@" in spec for spec in agents)
    if not (models or on_models) and settings:
        fail(
            "--set goes with a model: --set and --system-prompt go with --model (--set "
            "also with --agent MODULE:FUNC@PROVIDER:MODEL)"
        )
    if not models and (system_prompt is not None or per_step):
        fail("--system-prompt and --per-step go with --model")
    if kwargs and not agents:
        fail("--kwarg goes with --agent")
    try:
        overrides = dict(map(_setting, settings))
    except click.BadParameter as exc:
        fail(f"--set {exc.message}")
    functions = _live_tools(opts.live_tools, loop=bool(models) and not per_step)
    rate = _rate(opts.rate)

    def pace() -> Pace | None:  # each candidate model its own
        return Pace(rate) if rate is not None else None

    out: list[Candidate] = []
    for spec in agents:
        ref, at, model_spec = spec.partition("@")
        try:
            import_ref(ref)  # a name that does not import is the command's error, once
            on = CandidateModel.parse(model_spec, overrides) if at else None
        except RegressError as exc:
            fail(str(exc))
        except ValueError as exc:
            fail(f"--agent {ref}@: {exc}")
        out.append(
            AgentCandidate(
                ref,
                kwargs,
                model=on,
                live_tools=tuple(functions),
                max_turns=opts.max_turns,
                pace=pace() if on is not None else None,
            )
        )
    prompt = system_prompt.read() if system_prompt is not None else None
    for spec in models:
        try:
            model = CandidateModel.parse(spec, overrides)
        except ValueError as exc:
            fail(f"--model {exc}")
        if per_step:
            out.append(ModelPerStep(model, prompt, pace=pace()))
        else:
            out.append(
                ModelLoop(model, opts.max_turns, prompt, live_tools=dict(functions), pace=pace())
            )
    return out


#: ``--rate``'s units: seconds in each.
_PER = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0}


def _rate(given: str | None) -> float | None:
    """``--rate N/s`` (or ``N/m``, ``N``: a second): requests a second."""
    if given is None:
        return None
    said, _, unit = given.strip().partition("/")
    try:
        n = float(said)
    except ValueError:
        n = 0.0
    seconds = _PER.get(unit.strip() or "s")
    if seconds is None or not (0 < n < float("inf")):
        fail(f"--rate {given!r}: give it as N/s or N/m, N a positive number")
    return n / seconds


def _live_tools(given: tuple[str, ...], *, loop: bool) -> dict[str, Any]:
    """``--live-tool NAME[=MODULE:FUNC]``: tool name -> its function (None: the agent's
    own); a --model driving the loop runs no code of the user's, so it needs FUNC."""
    # lazy, as in candidates().
    from ..commands.regress import RegressError
    from ..commands.rerun import import_ref

    out: dict[str, Any] = {}
    for text in given:
        name, sep, ref = (part.strip() for part in text.partition("="))
        if not name or (sep and not ref):
            fail(f"--live-tool {text!r}: give it as NAME or NAME=MODULE:FUNC")
        if not sep and loop:
            fail(
                f"--live-tool {name}: a --model candidate runs none of your code: "
                f"name the tool's function, {name}=MODULE:FUNC"
            )
        try:
            out[name] = import_ref(ref) if sep else None
        except RegressError as exc:
            fail(f"--live-tool {name}: {exc}")
    return out


def prices(given: tuple[str, ...]) -> dict[str, Price]:
    """``--price MODEL=IN/OUT``: model -> its :class:`~otel_replay.commands.cohort.Price`."""
    from ..commands.cohort import Price  # lazy

    out = {}
    for text in given:
        try:
            model, price = Price.parse(text)
        except ValueError as exc:
            fail(f"--price {exc}")
        out[model] = price
    return out


def outputs(
    output: str | None, candidates: Sequence[Candidate], cohort_id: str
) -> list[tuple[str, str]]:
    """Each candidate's label and trace file under ``output`` (made), set on it with the
    cohort's id."""
    if output is None:
        return []
    try:
        os.makedirs(output, exist_ok=True)
    except OSError as exc:
        fail(f"{output}: {exc.strerror or exc}")
    files = []
    for n, candidate in enumerate(candidates, 1):
        candidate.record_to = os.path.join(output, f"candidate-{n}.otlp")
        candidate.cohort_id = cohort_id
        files.append((candidate.label, candidate.record_to))
    return files


def comparator(how: str, judge_ref: str | None) -> Comparator:
    """``--compare`` and ``--judge``: how two answers are told the same."""
    # lazy, as in candidates().
    from ..commands.cohort import Comparator
    from ..commands.regress import RegressError
    from ..commands.rerun import import_ref

    judge = None
    if judge_ref is not None:
        try:
            judge = import_ref(judge_ref)
        except RegressError as exc:
            fail(str(exc))
    return Comparator("exact" if how == "exact" else "normalized", judge)
