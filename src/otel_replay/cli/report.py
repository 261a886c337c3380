"""``otel-replay report``: a run as one HTML page, or every run as an index and a page
each.

Jinja2 and the run model are imported inside the command, marked ``lazy``, so that
``--help`` stays fast.
"""

from __future__ import annotations

import functools
import os

import click

from .loading import load_runs, pick, reading, report_problems
from .options import headers_option, jobs_option, paths_argument, run_option, verbose_option
from .output import writing_pages
from .printable import printable


@click.command()
@paths_argument
@run_option
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="FILE.html|DIR",
    help="The page to write (a name ending in .html), or a directory for an index of every "
    "run and a page each.",
)
@jobs_option
@headers_option
@verbose_option
def report(paths: tuple[str, ...], run_id: str | None, output: str, jobs: int | None) -> None:
    """Write a run as one self-contained HTML page: its header, replay-kit checklist,
    fingerprint, steps on a timeline with their messages, tool calls and results, and
    the warnings check finds, linked to their steps.

    PATH is anything `show` reads.  -o FILE.html writes the page of one run
    (--run picks it when there are several); -o DIR writes DIR/index.html,
    listing every run (the columns of ls, sortable and filterable), and a page
    per run beside it.  The pages need no network (styles and script inline)
    and read without JavaScript.  Needs Jinja2: pip install 'otel-replay[report]'.
    """
    with writing_pages(output):
        if output.endswith((".html", ".htm")):
            _report_page(paths, run_id, output)
        else:
            _report_index(paths, run_id, output, jobs)


def _report_page(paths: tuple[str, ...], run_id: str | None, output: str) -> None:
    from ..report import render_run  # Jinja2: lazy

    runs = load_runs(paths, run_id)
    report_problems(runs)
    run = pick(runs, run_id, ", ".join(paths), "--run ID (or -o DIR for every run)")
    page = render_run(run)
    with open(output, "w", encoding="utf-8") as f:
        f.write(page)
    click.echo(f"wrote {output} (run {run.run_id}, {len(run.steps)} steps, {run.kit.verdict})")


def _report_index(
    paths: tuple[str, ...], run_id: str | None, directory: str, jobs: int | None
) -> None:
    # Jinja2, the run model and readers: lazy.
    from ..report import render_index, require, write_run_page
    from ..runs.anomalies import Config
    from ..runs.load import Runs
    from ..runs.stream import map_runs
    from ..sources.progress import working

    require()  # before any run is read
    os.makedirs(directory, exist_ok=True)

    fn = functools.partial(write_run_page, directory, Config(), run_id)
    with reading(paths), working(f"writing the pages of {printable(', '.join(paths))}"):
        mapped = map_runs(paths, fn, jobs=jobs)
    lines = sorted(
        (s for s in mapped.values if s is not None),
        key=lambda s: (s.summary.start_ns, s.summary.run_id),
    )
    index = os.path.join(directory, "index.html")
    with open(index, "w", encoding="utf-8") as f:
        f.write(render_index(lines, ", ".join(paths)))
    report_problems(Runs(problems=mapped.problems))
    click.echo(f"wrote {index} and {len(lines)} run pages beside it")
