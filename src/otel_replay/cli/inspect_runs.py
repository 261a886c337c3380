"""``otel-replay show`` and ``otel-replay diff``: a run as a tree of steps (or one step,
or a timeline), and two runs compared step by step.

Heavy modules (rich, the run model, Jinja2) are imported inside the commands, marked
``lazy``, so that ``--help`` stays fast.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from .loading import load_runs, pick, report_problems, split_spec
from .options import headers_option, paths_argument, run_option, trace_option, verbose_option
from .output import dumps, fail, writing_pages
from .printable import printable

if TYPE_CHECKING:
    from ..runs.load import Runs
    from ..runs.model import Run


@click.command()
@paths_argument
@click.option("--json", "as_json", is_flag=True, help='One JSON document: {"runs": [...]}.')
@run_option
@trace_option
@click.option(
    "--timeline",
    is_flag=True,
    help="Per step: start, duration and a bar on the run's time axis; the time to the "
    "first token of streamed model calls where recorded.",
)
@click.option(
    "--step",
    "step_ref",
    metavar="N",
    help="Everything one step recorded (N: its index, or a prefix of its span id).",
)
@click.option("--raw", is_flag=True, help="With --step: the span's raw attributes and events too.")
@headers_option
@verbose_option
def show(
    paths: tuple[str, ...],
    as_json: bool,
    run_id: str | None,
    trace_id: str | None,
    timeline: bool,
    step_ref: str | None,
    raw: bool,
) -> None:
    """Show each recorded run as a tree of steps.

    PATH is a trace file, a directory or glob of them, - (stdin), an http(s)
    URL, a trace backend's search (tempo://HOST:PORT,
    jaeger://HOST:PORT?service=NAME) or a ClickHouse table (clickhouse://,
    chdb://).
    """
    if timeline and step_ref is not None:
        fail("--timeline and --step do not go together")
    if raw and step_ref is None:
        fail("--raw goes with --step N")
    runs = load_runs(paths, run_id, trace_id)
    if step_ref is not None:
        _show_step(runs, paths, step_ref, as_json, raw)
    elif timeline:
        if as_json:
            from ..commands.timeline import timeline as bars  # the run model: lazy

            doc = {
                "runs": [
                    {
                        "run_id": r.run_id,
                        "start_ns": r.start_ns,
                        "end_ns": r.end_ns,
                        "steps": [b.to_json() for b in bars(r)],
                    }
                    for r in runs
                ]
            }
            click.echo(dumps(doc))
        else:
            from .render_workflow import render_timeline  # rich: lazy

            render_timeline(runs)
    elif as_json:
        click.echo(dumps({"runs": [r.to_json() for r in runs]}))
    else:
        from .render import render_runs  # rich: lazy

        render_runs(runs)
    if not runs and not runs.problems and not as_json:
        click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
    report_problems(runs)


def _show_step(runs: Runs, paths: tuple[str, ...], ref: str, as_json: bool, raw: bool) -> None:
    if len(runs) != 1:
        report_problems(runs)
    run = pick(runs, None, ", ".join(paths), "--run ID")
    try:
        # Digits name a step index when there is such a step, else a span id prefix
        # (one in about 40 span ids starts with eight digits).
        index = int(ref) if ref.isdigit() and int(ref) < len(run.steps) else None
        step = run.step(index) if index is not None else run.step(ref)
    except (KeyError, IndexError):
        fail(f"no step {ref!r} in run {run.run_id} (steps 0-{len(run.steps) - 1})")
    if as_json:
        doc = step.to_json()
        if raw:
            doc["attributes"] = step.attributes
            doc["events"] = step.events
        click.echo(dumps({"run_id": run.run_id, "step": doc}))
    else:
        from .render_workflow import render_step  # rich: lazy

        render_step(run, step, raw)


def _one_run(path: str, run_id: str | None, cache: dict[str, Runs]) -> Run:
    """The run of ``path`` named ``run_id`` (the one run there is, when None); a path
    read whole is read once (``cache``)."""
    if run_id is not None:
        picked = load_runs((path,), run_id)  # a big dump: only this run is kept
        report_problems(picked)
        return pick(picked, run_id, path, f"{path}#RUN_ID")
    if path not in cache:
        cache[path] = load_runs((path,), None)
        report_problems(cache[path])
    return pick(cache[path], None, path, f"{path}#RUN_ID")


@click.command()
@click.argument("a", metavar="A")
@click.argument("b", metavar="[B]", required=False)
@click.option("--run-a", metavar="ID", help="The run of A (instead of A#ID).")
@click.option("--run-b", metavar="ID", help="The run of B (instead of B#ID).")
@click.option("--json", "as_json", is_flag=True, help="The comparison as one JSON document.")
@click.option(
    "--time-threshold",
    type=click.FloatRange(min=0),
    default=1000.0,
    show_default=True,
    metavar="MS",
    help="Durations that differ by more than MS milliseconds count as a change.",
)
@click.option("--no-timing", is_flag=True, help="Leave durations out of the comparison.")
@click.option(
    "--all", "include_other", is_flag=True, help="Compare 'other' steps (HTTP spans, ...) too."
)
@click.option(
    "--html",
    "-o",
    "html_out",
    metavar="FILE.html",
    help="Also write the comparison as one HTML page: the runs side by side, the first "
    "divergence highlighted, changed fields as line diffs with the changed words marked.",
)
@headers_option
@verbose_option
def diff(
    a: str,
    b: str | None,
    run_a: str | None,
    run_b: str | None,
    as_json: bool,
    time_threshold: float,
    no_timing: bool,
    include_other: bool,
    html_out: str | None,
) -> None:
    """Compare two runs step by step; exit 1 when they differ, 0 when they are equal.

    A and B are PATH or PATH#RUN_ID (a run id prefix): two recordings, or a
    recording and the replay a session wrote (``record_to=``).  With one PATH,
    --run-a and --run-b pick two runs of it.  Steps are aligned by kind, tool
    name and place in the tree (an inserted call shows as one added step), and
    the first step that differs is named.
    """
    from ..runs.diff import diff_runs  # the run model: lazy

    path_a, id_a = split_spec(a)
    path_b, id_b = split_spec(b) if b is not None else (path_a, None)
    id_a = run_a or id_a
    id_b = run_b or id_b
    if b is None and (id_a is None or id_b is None):
        fail("give two runs: A B, or one PATH with --run-a ID --run-b ID")
    cache: dict[str, Runs] = {}
    run_1 = _one_run(path_a, id_a, cache)
    run_2 = _one_run(path_b, id_b, cache)
    result = diff_runs(
        run_1,
        run_2,
        time_threshold_ms=None if no_timing else time_threshold,
        include_other=include_other,
    )
    if html_out is not None:
        from ..report import render_diff as render_html  # Jinja2: lazy

        with writing_pages(html_out):
            page = render_html(result, (a, b if b is not None else path_a))
            with open(html_out, "w", encoding="utf-8") as f:
                f.write(page)
    if as_json:
        click.echo(dumps(result.to_json()))
    else:
        from .render_workflow import render_diff  # rich: lazy

        render_diff(result, (path_a, path_b))
    if html_out is not None:
        # After the comparison; on stderr under --json, whose stdout is one document.
        click.echo(f"wrote {printable(html_out)}", err=as_json)
    sys.exit(0 if result.equal else 1)
