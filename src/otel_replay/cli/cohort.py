"""``otel-replay cohort``: replay many recorded runs against candidates, say what would change.

The runs are those ``ls`` lists for the same filters (read through
:func:`~otel_replay.cli.loading.drawn_runs`); a sample or the first N of them;
each replayed against every candidate (:mod:`otel_replay.commands.cohort`), the
outcomes printed as a table (runs by candidates), totals per candidate, and
each outcome that is not ``same`` with its first divergence.

The run model, its readers and the replay machinery are imported inside the
functions (``lazy``), so that ``--help`` stays fast.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from . import cohort_candidates
from .loading import drawn_runs, reading, report_problems
from .options import headers_option, paths_argument, verbose_option
from .output import dumps, fail, writing_pages
from .printable import printable
from .render_cohort import Progress, render, row_json

if TYPE_CHECKING:
    from ..commands.cohort_outcomes import Candidate
    from ..commands.cohort_runs import Caps, Row, Stop
    from ..report.cohort_page import SideBySide

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def command() -> click.Command:
    """The ``cohort`` command, its many options given to it as one
    :class:`~otel_replay.cli.cohort_candidates.Cohort`."""

    def cohort(**given: Any) -> None:
        _cohort(cohort_candidates.Cohort(**given))

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
            help="N runs drawn at random from those the filters keep (the seed is printed); "
            "a ClickHouse table draws them in its query.",
        ),
        click.option(
            "--seed",
            type=int,
            metavar="S",
            help="The seed of --sample: the same S draws the same runs, from a file or a "
            "ClickHouse table alike (the N runs whose SHA-256 of S:RUN_ID is the smallest).",
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
            "show, report and export.  Run again into the same DIR, the cohort reports the "
            "runs replayed there from their replays and replays the rest (another DIR starts "
            "afresh).",
        ),
        click.option(
            "--html",
            "html_out",
            metavar="FILE.html",
            help="Also write the cohort as one HTML page: per candidate its outcomes, a "
            "histogram of first-divergence steps, its slowest and costliest runs; every run "
            "with each outcome, linking (with -o) to its recording and replay side by side.",
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
        click.option(
            "--jobs",
            "-j",
            type=click.IntRange(min=1),
            metavar="N",
            help="Replay N runs at once (threads) [default: 1]: the requests to --model "
            "candidates overlap; an --agent's replay patches the process (frozen clock, "
            "tools, network guard), so it runs with no other beside it.  The output's order "
            "is the same for any N.  Also the worker processes reading a big dump.",
        ),
        _cap("--max-requests", click.IntRange(min=1), "N", "were sent N requests"),
        _cap("--max-tokens", click.IntRange(min=1), "N", "used N tokens (input and output)"),
        _cap(
            "--max-cost",
            click.FloatRange(min=0, min_open=True),
            "DOLLARS",
            "cost DOLLARS (those with a --price)",
        ),
        click.option(
            "--rate",
            metavar="N/s",
            help="At most N requests a second to each candidate model (N/m: a minute), "
            "however many runs replay at once.",
        ),
        headers_option,
        verbose_option,
    ]
    for option in reversed(options):
        cohort = option(cohort)
    return click.command(name="cohort")(cohort)


def _cap(name: str, kind: click.ParamType[Any], metavar: str, when: str) -> Decorator:
    """A cap on what the candidate models spend, over all candidates (see Caps)."""
    return click.option(
        name,
        type=kind,
        metavar=metavar,
        help=f"Start no more runs once the candidate models {when}, over all candidates "
        "(the runs under way finish); the rest are listed as not run (exit 3).",
    )


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
or unreadable input, 3 when a cap (--max-requests, --max-tokens,
--max-cost) left runs not run; stopped by Ctrl-C or SIGTERM, the runs under
way finish, the rest are listed as not run, and the exit status is 130 or
143.  With -o DIR, a later call into the same DIR reports each run whose
replay for a candidate is already there from that replay and replays only
the others: an interrupted cohort continues, even one killed while writing
a replay (that run is replayed again); another DIR starts afresh.  With
--html, each replay's side-by-side page is written as the run is replayed.
"""


def _page(doc: dict[str, Any], path: str, paths: tuple[str, ...], sides: SideBySide) -> None:
    """The cohort's page at ``path``, each outcome linking to its replay beside its
    recording where the replay was written: pages ``sides`` made as the runs were
    replayed, and those of runs reported from an earlier call's replays made now (the
    runs read again one at a time)."""
    # lazy: only --html needs the pages (Jinja2, the diff)
    from ..commands.cohort_runs import pages_made
    from ..report.cohort_page import write_cohort_page

    files = [str(o["file"]) for o in doc["cohort"]["outputs"]]
    pages, wanted = sides.found(doc)
    if wanted:
        with reading(paths), writing_pages(path):
            made, _ = pages_made(paths, files, wanted, sides)
        pages += made
    with writing_pages(path):
        write_cohort_page(doc, path, pages)


def _sides(html_out: str | None, candidates: Sequence[Candidate]) -> SideBySide | None:
    """The side-by-side pages beside the cohort's page ``html_out`` (None: no page)."""
    if html_out is None:
        return None
    from ..report.cohort_page import SideBySide  # Jinja2 and the diff: lazy

    with writing_pages(html_out):
        return SideBySide(html_out, [c.label for c in candidates])


def _caps(opts: cohort_candidates.Cohort, priced: Mapping[str, Any]) -> Caps:
    from ..commands.cohort_runs import Caps  # lazy, as the replay machinery

    if opts.max_cost is not None and not priced:
        fail("--max-cost counts what the candidate models cost: give their --price")
    return Caps(opts.max_requests, opts.max_tokens, opts.max_cost)


@contextlib.contextmanager
def _stoppable(stop: Stop) -> Iterator[list[int]]:
    """While the block runs, Ctrl-C and SIGTERM start no more runs (those under way
    finish); a second one stops at once.  The signals received, in the list given."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def handle(signum: int, frame: Any) -> None:
        if got:
            raise KeyboardInterrupt
        got.append(signum)
        stop.set(f"stopped by {signal.Signals(signum).name}")
        click.echo("\notel-replay: stopping after the runs under way (again to stop now)", err=True)

    before = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield got
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def _cohort(opts: cohort_candidates.Cohort) -> None:
    # The run model, the readers and the replay machinery: lazy.
    from ..commands.cohort_runs import Stop, replayed, totals_of, written_before
    from ..commands.draw import Draw
    from ..commands.listing import run_filter
    from ..runs.load import Runs

    candidates = cohort_candidates.candidates(opts)
    priced = cohort_candidates.prices(opts.prices)
    caps = _caps(opts, priced)
    files = cohort_candidates.outputs(opts.output, candidates, "")
    with reading(tuple(f for _, f in files)):
        earlier, cohort_id, written_faults = written_before(candidates)
    for fault in written_faults:
        click.echo(f"otel-replay: {printable(str(fault))} (its runs are replayed again)", err=True)
    cohort_id = cohort_id or uuid.uuid4().hex[:16]
    for c in candidates:
        c.cohort_id = cohort_id if c.record_to is not None else None
    comparator = cohort_candidates.comparator(opts.how, opts.judge_ref)
    try:
        flt = run_filter(opts.agent_name, opts.since, opts.errors_only, opts.tools, opts.replayable)
    except ValueError as exc:
        fail(str(exc))
    paths = opts.paths
    sample, seed = opts.sample, opts.seed
    if sample is not None and seed is None:
        seed = random.SystemRandom().randrange(2**32)
    # A ClickHouse table draws in its query: only the runs drawn leave it.
    listing = drawn_runs(
        paths,
        flt,
        Draw(sample, seed, opts.limit),
        since=opts.since,
        use_cache=not opts.no_cache,
        jobs=opts.jobs,
    )
    picked, kept, problems = listing
    if sample is not None and sample < kept:
        click.echo(
            f"otel-replay: sampled {sample} of {kept} runs (seed {seed}; --seed {seed} draws "
            "them again)",
            err=True,
        )
    elif opts.seed is None:
        seed = None  # nothing was drawn
    sides = _sides(opts.html_out, candidates)
    stop = Stop()
    shown = Progress(len(picked), sys.stderr.isatty() and not opts.as_json)
    began = time.monotonic()
    with reading(paths), _stoppable(stop) as signals:
        try:
            rows, faults = replayed(
                paths,
                picked,
                candidates,
                comparator,
                priced,
                jobs=opts.jobs or 1,
                caps=caps,
                earlier=earlier,
                stop=stop,
                done=shown,
                sides=sides,
            )
        finally:
            shown.close()
    totals = totals_of(candidates, rows)
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
            "jobs": opts.jobs or 1,
            "caps": dataclasses.asdict(caps),
            "rate": opts.rate,
            "resumed": sum(o.resumed for r in rows for o in r.outcomes),
            "not_run": sum(r.not_run is not None for r in rows),
            "seconds": round(time.monotonic() - began, 3),
        },
        "runs": [row_json(r) for r in rows],
        "totals": [t.to_json() for t in totals],
    }
    if opts.as_json:
        click.echo(dumps(doc))
    else:
        render(rows, candidates, totals)
        if not kept and not problems:
            click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
    if sides is not None and opts.html_out is not None:
        _page(doc, opts.html_out, paths, sides)
        click.echo(f"wrote {printable(opts.html_out)}", err=True)
    for label, file in files:
        click.echo(f"wrote the replays of {printable(label)} to {printable(file)}", err=True)
    resumed = {r.summary.run_id for r in rows for o in r.outcomes if o.resumed}
    if resumed:
        click.echo(
            f"otel-replay: {len(resumed)} run(s) reported from their replays already in "
            f"{printable(str(opts.output))}, not replayed again",
            err=True,
        )
    _say_not_run(rows, opts.output)
    report_problems(Runs(problems=[*problems, *faults]))
    if signals:
        sys.exit(128 + signals[0])
    if any(o.kind == "error" for r in rows for o in r.outcomes):
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
    if any(r.not_run is not None for r in rows):
        sys.exit(3)


def _say_not_run(rows: list[Row], output: str | None) -> None:
    """How many runs were not run and why, and how to continue."""
    left = [r for r in rows if r.not_run is not None]
    if not left:
        return
    how = (
        f"the same command with -o {printable(output)} continues where this one stopped"
        if output is not None
        else "with -o DIR, the same command run again continues where it stopped"
    )
    click.echo(f"otel-replay: {len(left)} run(s) not run: {left[0].not_run}; {how}", err=True)
