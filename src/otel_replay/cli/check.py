"""``otel-replay check`` and ``otel-replay ls``: what each run lacks to replay and its
anomalies, and one line per run.

Heavy modules (rich, the run model and its readers) are imported inside the commands,
marked ``lazy``, so that ``--help`` stays fast.
"""

from __future__ import annotations

import sys

import click

from .loading import list_runs, no_run, reading, report_problems
from .options import headers_option, jobs_option, paths_argument, run_option, verbose_option
from .output import dumps, fail
from .printable import printable


@click.command()
@paths_argument
@click.option("--json", "as_json", is_flag=True, help="The reports as one JSON document.")
@run_option
@click.option(
    "--max-tool-calls",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Tool-call budget of a run; more is an anomaly [default: 20].",
)
@click.option(
    "--error-phrase",
    "error_phrases",
    multiple=True,
    metavar="TEXT",
    help="A phrase that marks a failed final answer (repeatable; replaces the defaults: "
    "I'm sorry, unable to, error, failed, can't, ...).",
)
@click.option("--strict", is_flag=True, help="Anomalies fail the check too (exit 1).")
@jobs_option
@headers_option
@verbose_option
def check(
    paths: tuple[str, ...],
    as_json: bool,
    run_id: str | None,
    max_tool_calls: int | None,
    error_phrases: tuple[str, ...],
    strict: bool,
    jobs: int | None,
) -> None:
    """Replay-kit report and anomalies per run; exit 1 when a run does not replay.

    The replay kit is what a trace must hold to replay a run offline: each
    model call's input and output messages, each tool call's arguments and
    result (or error), byte-exact.  Every command answers three questions of
    a run, in this order and these words.  Recorded: how much of the kit the
    trace holds, full, model-only (a tool result or model output is missing
    or unusable) or inspect-only (no content).  Replays: replays, or does
    not replay: REASON (cut records, no content recorded, model calls not
    recorded, N payloads damaged, a model call failed, output not recorded,
    output unreadable, tool results not recorded, tool steps taken from
    messages, input history not recorded).  Outcome: ok; error: TYPE:
    MESSAGE when the agent run raised; N of M tool (or model) calls failed.
    "Not recorded" lists what the run used or a replay needs and the trace
    lacks; "not set", the optional fields (ids, commit, request parameters)
    the run did not set.

    PATH is anything `show` reads.  No run at all also fails, and
    so does a run that may have lost records to a cut or corrupt file (exit 1;
    a damaged file that no run read from is unreadable input, exit 2).
    Anomalies (repeated tool calls, loops, tool errors and retries, HTTP
    429/5xx, cut-off bodies, error wording in the answer, too many tool calls)
    are warnings: they fail the check only with --strict.  Of a ClickHouse
    table (clickhouse://, chdb://) the runs ClickHouse shows clean (full,
    replays, nothing to warn of) are not read: their optional missing
    fields are not listed (--run ID lists them).
    """
    # The run model and readers: lazy.
    from ..commands.check import check_runs, totals
    from ..runs.anomalies import DEFAULT_ERROR_PHRASES, DEFAULT_MAX_TOOL_CALLS, Config
    from ..runs.kit import lost_records
    from ..runs.load import Runs
    from ..sources.progress import working

    config = Config(
        max_tool_calls=DEFAULT_MAX_TOOL_CALLS if max_tool_calls is None else max_tool_calls,
        error_phrases=error_phrases or DEFAULT_ERROR_PHRASES,
    )

    with reading(paths), working(f"checking {printable(', '.join(paths))}"):
        checks, others, problems = check_runs(paths, config, run_id=run_id, jobs=jobs)
    if run_id is not None and not checks and not problems:
        no_run(paths, run_id, others)
    summed = totals(checks)
    if as_json:
        click.echo(dumps({"runs": [c.to_json() for c in checks], "totals": summed.to_json()}))
    else:
        # rich: lazy.
        from .render import check_lines, esc, print_lines
        from .render_workflow import finding_lines

        lines = []
        for c in checks:
            lines += check_lines(c.run_id, c.verdict, c.kit, read=c.read)
            lines += finding_lines(c.findings)
        if checks:
            # After many runs the last one's findings are on screen: the sum says the rest.
            lines.append(esc(str(summed)))
        print_lines(lines)
    # A fault every run it may have cost already fails on (the run says records may
    # be missing) is a failed check, exit 1; one no run accounts for is unreadable input.
    missing = {m for c in checks for m in c.kit.missing}
    carried = bool(checks) and all(lost_records(p) in missing for p in problems)
    report_problems(Runs(problems=problems), 1 if carried else 2)
    if not checks:
        click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
        sys.exit(1)
    if not all(c.kit.replayable for c in checks):
        sys.exit(1)
    if strict and any(c.findings for c in checks):
        sys.exit(1)


@click.command(name="ls")
@paths_argument
@click.option("--json", "as_json", is_flag=True, help='One JSON document: {"runs": [...]}.')
@click.option("--agent", metavar="NAME", help="Only runs of agents whose name contains NAME.")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only runs started since WHEN: an ISO time (UTC unless it has an offset) "
    "or a span back from now: 30m, 2h, 3d, 1w.",
)
@click.option("--error", "errors_only", is_flag=True, help="Only runs with a failed step.")
@click.option(
    "--tool", "tools", multiple=True, metavar="NAME", help="Only runs that called tool NAME."
)
@click.option("--replayable", is_flag=True, help="Only runs that replay.")
@click.option(
    "--sort",
    type=click.Choice(["start", "duration", "tokens", "errors", "steps", "tools"]),
    default="start",
    show_default=True,
)
@click.option("--reverse", is_flag=True, help="Largest (or latest) first.")
@click.option(
    "--no-cache",
    is_flag=True,
    help="Read the dump even when summaries saved beside it are current (and save none).",
)
@jobs_option
@headers_option
@verbose_option
def ls_(
    paths: tuple[str, ...],
    as_json: bool,
    agent: str | None,
    since: str | None,
    errors_only: bool,
    tools: tuple[str, ...],
    replayable: bool,
    sort: str,
    reverse: bool,
    no_cache: bool,
    jobs: int | None,
) -> None:
    """One line per run: start, agent, user and session, models, steps, tool calls,
    errors, duration, tokens and verdict.

    The verdict is three answers, as `check` gives them: recorded (full,
    model-only, inspect-only: how much of the replay kit the trace holds),
    replays (replays, or does not replay: REASON) and outcome (ok; error:
    TYPE: MESSAGE when the agent run raised; N of M tool calls failed);
    `check --help` defines them.

    PATH is anything `show` reads.  The summaries of a file or directory are
    saved beside it (F.otel-replay-runs, D/.otel-replay-runs) and read back while
    the dump is unchanged, so listing a big dump again is fast.  A ClickHouse
    table (clickhouse://, chdb://) computes the lines and applies the filters
    itself; its anomaly counts are candidates ("possible warnings").
    """
    # The run model and readers: lazy.
    from ..commands.listing import run_filter
    from ..runs.load import Runs
    from ..runs.summary import select

    try:
        flt = run_filter(agent, since, errors_only, tools, replayable)
    except ValueError as exc:
        fail(str(exc))
    found, problems = list_runs(paths, flt, since=since, use_cache=not no_cache, jobs=jobs)
    picked = select(found, flt, sort, reverse)
    if as_json:
        click.echo(dumps({"runs": [s.to_json() for s in picked]}))
    else:
        from .render_workflow import render_ls  # rich: lazy

        if picked:
            render_ls(picked)
        if not found and not problems:
            click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
    report_problems(Runs(problems=problems))
