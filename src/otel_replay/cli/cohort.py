"""``otel-replay cohort``: replay many recorded runs against candidates, say what would change.

The runs are those ``ls`` lists for the same filters (read through
:func:`~otel_replay.cli.loading.list_runs`); a sample or the first N of them;
each replayed against every candidate (:mod:`otel_replay.commands.cohort`), the
outcomes printed as a table (runs by candidates), totals per candidate, and
each outcome that is not ``same`` with its first divergence.

The run model, its readers and the replay machinery are imported inside the
functions (``lazy``), so that ``--help`` stays fast.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from .loading import list_runs, reading, report_problems
from .options import headers_option, jobs_option, paths_argument, verbose_option
from .output import dumps, fail
from .printable import printable
from .render_cohort import Row, render, row_json

if TYPE_CHECKING:
    from ..commands.cohort import Candidate, Outcome, Totals
    from ..runs.model import Run
    from ..runs.summary import RunSummary

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _setting(text: str) -> tuple[str, Any]:
    """``--set NAME=VALUE``: VALUE as JSON, else text."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise click.BadParameter(f"{text!r}: give it as NAME=VALUE (VALUE as JSON)")
    try:
        return name.strip(), json.loads(raw)
    except ValueError:
        return name.strip(), raw


def command() -> click.Command:
    """The ``cohort`` command, its many options given to it as one :class:`Cohort`."""

    def cohort(**given: Any) -> None:
        _cohort(Cohort(**given))

    cohort.__doc__ = _HELP
    options: list[Decorator] = [
        paths_argument,
        click.option(
            "--agent",
            "agents",
            multiple=True,
            metavar="MODULE:FUNC[@PROVIDER:MODEL[@BASE_URL]]",
            help="A candidate: your agent, run against the pinned model on every run (as "
            "replay --agent calls it), or, after @, against a candidate model named as "
            "--model names one: its tool calls answered from the recording where they match. "
            "Repeatable.",
        ),
        click.option(
            "--kwarg",
            "kwargs",
            multiple=True,
            metavar="NAME=VALUE",
            help="A keyword argument for every --agent: VALUE as JSON, else text; @FIELD "
            "takes a field of the run's fingerprint (user_id=@user.id). Repeatable.",
        ),
        click.option(
            "--model",
            "models",
            multiple=True,
            metavar="PROVIDER:MODEL[@BASE_URL]",
            help="A candidate model on an OpenAI- (openai:) or Anthropic-compatible "
            "(anthropic:) endpoint (key from OPENAI_API_KEY or ANTHROPIC_API_KEY; a local "
            "server named by BASE_URL needs none), driving each run's own loop: tool calls "
            "answered from the recording, never run. Repeatable.",
        ),
        click.option(
            "--live-tool",
            "live_tools",
            multiple=True,
            metavar="NAME[=MODULE:FUNC]",
            help="Run tool NAME for real where the recording cannot answer a call of it, "
            "instead of ending the run as a new path: an --agent's own function, FUNC for a "
            "--model (which runs no code of yours). Repeatable.",
        ),
        click.option(
            "--per-step",
            is_flag=True,
            help="Send each recorded model request to every --model once, as recorded, "
            "and compare each answer with the recorded one (instead of driving the loop).",
        ),
        click.option(
            "--set",
            "settings",
            multiple=True,
            metavar="NAME=VALUE",
            help="A request parameter sent to every --model over the recorded one, e.g. "
            "temperature=0 (VALUE as JSON). Repeatable.",
        ),
        click.option(
            "--system-prompt",
            type=click.File("r", encoding="utf-8"),
            metavar="FILE",
            help="Send every --model this system prompt in place of the recorded one.",
        ),
        click.option(
            "--max-turns",
            type=click.IntRange(min=1),
            default=20,
            show_default=True,
            help="Model calls a --model, or an --agent of a candidate model, may make in one "
            "run before it is stopped.",
        ),
        click.option(
            "--price",
            "prices",
            multiple=True,
            metavar="MODEL=IN/OUT",
            help="What a candidate model's tokens cost, in dollars per million input and "
            "output tokens (gpt-4.1-mini=0.4/1.6): each run's cost and the total, where "
            "the model's price is given. Repeatable.",
        ),
        click.option(
            "--compare",
            "how",
            type=click.Choice(["normalized", "exact"]),
            default="normalized",
            show_default=True,
            help="When two answers are the same: the same text with whitespace at the ends "
            "and repeated aside, or byte for byte. Tool-call arguments are compared as "
            "JSON values.",
        ),
        click.option(
            "--judge",
            "judge_ref",
            metavar="MODULE:FUNC",
            help="FUNC(recorded_run, replayed) -> bool, asked when the answers differ: "
            "true counts them the same.",
        ),
        click.option(
            "--agent-name",
            metavar="NAME",
            help="Only runs of agents whose name contains NAME (ls --agent).",
        ),
        click.option(
            "--since",
            metavar="WHEN",
            help="Only runs started since WHEN: an ISO time or 30m, 2h, 3d, 1w back.",
        ),
        click.option("--error", "errors_only", is_flag=True, help="Only runs with a failed step."),
        click.option(
            "--tool",
            "tools",
            multiple=True,
            metavar="NAME",
            help="Only runs that called tool NAME.",
        ),
        click.option(
            "--replayable",
            is_flag=True,
            help="Only runs that replay (others are otherwise listed as skipped).",
        ),
        click.option(
            "--sample",
            type=click.IntRange(min=1),
            metavar="N",
            help="N runs drawn at random from those the filters keep (the seed is printed).",
        ),
        click.option(
            "--seed",
            type=int,
            metavar="S",
            help="The seed of --sample: the same S draws the same runs.",
        ),
        click.option(
            "--limit",
            type=click.IntRange(min=1),
            metavar="N",
            help="At most N runs, the first by start time.",
        ),
        click.option("--json", "as_json", is_flag=True, help="One JSON document."),
        click.option(
            "-o",
            "--output",
            "output",
            metavar="DIR",
            help="Write each replay as a trace (its root names the recorded run, "
            "otel_replay.replay_of, linked to its root; the cohort's id and the candidate), "
            "appended to DIR/candidate-N.otlp, one file per candidate, for otel-replay diff, "
            "show, report and export.",
        ),
        click.option(
            "--fail-under",
            type=click.FloatRange(0, 1),
            metavar="RATE",
            help="Exit 1 when a candidate's share of same outcomes (of the runs replayed) "
            "is below RATE, e.g. 0.95: a gate for CI.",
        ),
        click.option(
            "--no-cache",
            is_flag=True,
            help="Read the dump even when ls's summaries saved beside it are current.",
        ),
        jobs_option,
        headers_option,
        verbose_option,
    ]
    for option in reversed(options):
        cohort = option(cohort)
    return click.command(name="cohort")(cohort)


_HELP = """Replay many recorded runs against candidates; say per run what would change.

PATH is anything `ls` reads, with its filters (--agent-name, --since,
--error, --tool, --replayable); --sample N and --limit N make the cohort
smaller.  A candidate is your agent (--agent MODULE:FUNC, against the
pinned model: a code change checked on every run; --agent
MODULE:FUNC@openai:MODEL@BASE_URL, against that model) or a model (--model
openai:MODEL@BASE_URL or anthropic:..., with --set and --system-prompt; --per-step sends
each recorded model request once instead of driving the run).  Several
candidates are compared side by side.

Outcome per run and candidate: same (the same tool calls and answer),
same tools, other answer; other path (the first divergence: step, kind,
diff); new path (a tool call the recording cannot answer, named, unless
--live-tool runs it); error
(the agent raised, the endpoint failed); refused (what the run lacks,
named).  Runs that do not replay are listed as skipped, with why.  Exit 0
when every run met every candidate, 1 when an outcome is an error or a
candidate's share of same outcomes is under --fail-under, 2 on bad usage
or unreadable input.
"""


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
    fail_under: float | None
    no_cache: bool
    jobs: int | None


def _cohort(opts: Cohort) -> None:
    # The run model, the readers and the replay machinery: lazy.
    from ..commands.cohort import drawn
    from ..commands.listing import run_filter
    from ..runs.load import Runs
    from ..runs.summary import select

    candidates = _candidates(opts)
    cohort_id = uuid.uuid4().hex[:16]
    priced = _prices(opts.prices)
    files = _outputs(opts.output, candidates, cohort_id)
    comparator = _comparator(opts.how, opts.judge_ref)
    try:
        flt = run_filter(opts.agent_name, opts.since, opts.errors_only, opts.tools, opts.replayable)
    except ValueError as exc:
        fail(str(exc))
    paths = opts.paths
    found, problems = list_runs(
        paths, flt, since=opts.since, use_cache=not opts.no_cache, jobs=opts.jobs
    )
    picked = select(found, flt, "start")
    kept = len(picked)
    sample, seed = opts.sample, opts.seed
    if sample is not None and sample < len(picked):
        seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
        click.echo(
            f"otel-replay: sampled {sample} of {kept} runs (seed {seed}; --seed {seed} draws "
            "them again)",
            err=True,
        )
    picked = drawn(picked, sample, seed, opts.limit)
    wanted = {s.run_id for s in picked if _skipped(s, candidates) is None}
    runs, faults = _runs_of(paths, wanted)
    rows = _replayed(picked, runs, candidates, comparator, priced)
    totals = _totals(candidates, rows)
    if opts.as_json:
        doc = {
            "cohort": {
                "id": cohort_id,
                "sources": list(paths),
                "runs_kept_by_filters": kept,
                "sample": sample,
                "seed": seed if sample is not None else None,
                "limit": opts.limit,
                "candidates": [c.label for c in candidates],
                "compare": opts.how,
                "judge": opts.judge_ref,
                "prices": {m: dataclasses.asdict(p) for m, p in priced.items()},
                "outputs": [{"candidate": c, "file": f} for c, f in files],
            },
            "runs": [row_json(s, outcomes, why) for s, outcomes, why in rows],
            "totals": [t.to_json() for t in totals],
        }
        click.echo(dumps(doc))
    else:
        render(rows, candidates, totals)
        if not found and not problems:
            click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
    for label, file in files:
        click.echo(f"wrote the replays of {printable(label)} to {printable(file)}", err=True)
    report_problems(Runs(problems=[*problems, *faults]))
    if any(o.kind == "error" for _, outcomes, _ in rows for o in outcomes):
        sys.exit(1)
    fail_under = opts.fail_under
    below = [t for t in totals if fail_under is not None and (t.rate("same") or 0) < fail_under]
    for total in below:
        click.echo(
            f"otel-replay: {printable(total.candidate)}: {total.counts['same']} of {total.runs} "
            f"run(s) the same, under --fail-under {fail_under}",
            err=True,
        )
    if below:
        sys.exit(1)


def _candidates(opts: Cohort) -> list[Candidate]:
    """Each candidate the options name: the agents first, then the models."""
    # The replay machinery: lazy.
    from ..commands.cohort import AgentCandidate, ModelLoop, ModelPerStep
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
                ref, kwargs, model=on, live_tools=tuple(functions), max_turns=opts.max_turns
            )
        )
    prompt = system_prompt.read() if system_prompt is not None else None
    for spec in models:
        try:
            model = CandidateModel.parse(spec, overrides)
        except ValueError as exc:
            fail(f"--model {exc}")
        if per_step:
            out.append(ModelPerStep(model, prompt))
        else:
            out.append(ModelLoop(model, opts.max_turns, prompt, live_tools=dict(functions)))
    return out


def _live_tools(given: tuple[str, ...], *, loop: bool) -> dict[str, Any]:
    """``--live-tool NAME[=MODULE:FUNC]``: tool name -> its function (None: the agent's
    own); a --model driving the loop runs no code of the user's, so it needs FUNC."""
    # lazy, as in _cohort.
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


def _prices(given: tuple[str, ...]) -> dict[str, Any]:
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


def _outputs(
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


def _comparator(how: str, judge_ref: str | None) -> Any:
    # lazy, as in _cohort.
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


def _runs_of(paths: tuple[str, ...], wanted: set[str]) -> tuple[dict[str, Run], list[Any]]:
    """The runs named in ``wanted``: a file's read a window at a time, keeping only those;
    a database's read by their trace."""
    # lazy, as in _cohort.
    from ..runs.load import load
    from ..runs.stream import iter_runs
    from ..sources.files import is_database

    runs: dict[str, Run] = {}
    faults: list[Any] = []
    if not wanted:
        return runs, faults
    files = [p for p in paths if not is_database(p)]
    with reading(paths):
        if files:
            for batch in iter_runs(*files):
                runs.update((r.run_id, r) for r in batch if r.run_id in wanted)
                faults += batch.problems
        for name in (p for p in paths if is_database(p)):
            for run_id in sorted(wanted - set(runs)):
                read = load(name, trace_id=run_id)
                runs.update((r.run_id, r) for r in read if r.run_id in wanted)
                faults += read.problems
    return runs, faults


def _replayed(
    picked: Sequence[RunSummary],
    runs: dict[str, Run],
    candidates: Sequence[Candidate],
    comparator: Any,
    prices: dict[str, Any],
) -> list[Row]:
    """Each picked run with its outcome per candidate, or why it was skipped."""
    from ..sources.progress import working  # lazy

    rows: list[Row] = []
    with working(f"replaying {len(picked)} run(s) against {len(candidates)} candidate(s)"):
        for s in picked:
            run = runs.get(s.run_id)
            why = _skipped(s, candidates)
            if why is None and run is None:
                why = "not found when read again (the source changed?)"
            if why is not None or run is None:
                rows.append((s, [], why))
                continue
            rows.append((s, [_one(c, s, run, comparator, prices) for c in candidates], None))
    return rows


def _skipped(s: RunSummary, candidates: Sequence[Candidate]) -> str | None:
    """Why no candidate can take the run (its words as ls says them), or None."""
    if s.replayable:
        return None
    said = f"does not replay: {s.replay_problem or 'reason not named'}"
    if s.verdict == "inspect-only" or all(c.needs_replayable for c in candidates):
        return said
    return None


def _one(c: Candidate, s: RunSummary, run: Run, comparator: Any, prices: dict[str, Any]) -> Outcome:
    """The run replayed against ``c``, or refused when ``c`` needs a run that replays; its
    cost where the candidate's model has a price."""
    from ..commands.cohort import Outcome, price_of  # lazy

    if c.needs_replayable and not s.replayable:
        return Outcome("refused", f"does not replay: {s.replay_problem or 'reason not named'}")
    out = c.replay(run, comparator)
    model = getattr(c, "model", None)  # a candidate model's; the pinned model costs nothing
    price = price_of(model, prices) if model is not None else None
    if price is not None:
        out.cost = price.cost(out.input_tokens, out.output_tokens)
    return out


def _totals(candidates: Sequence[Candidate], rows: Sequence[Row]) -> list[Totals]:
    from ..commands.cohort import Totals  # lazy

    totals = [Totals(c.label) for c in candidates]
    for s, outcomes, _ in rows:
        for total, outcome in zip(totals, outcomes, strict=False):
            total.add(outcome, s.run_id)
    return totals
