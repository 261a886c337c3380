"""How the commands read runs: a run picked by its id, input that cannot be read as one
line and exit 2, the problems met said after the output, the runs ``ls`` lists.

The run readers (protobuf, the run model) are imported inside the functions, marked
``lazy``, so that ``--help`` stays fast."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .options import verbose_inputs
from .output import fail
from .printable import printable

if TYPE_CHECKING:
    from ..commands.draw import Draw
    from ..commands.listing import Drawn
    from ..otlp.errors import FormatError
    from ..runs.load import Runs
    from ..runs.model import Run
    from ..runs.summary import Filter, RunSummary


@contextlib.contextmanager
def reading(paths: tuple[str, ...]) -> Iterator[None]:
    """Input that cannot be read at all: one line naming it, exit 2."""
    # The run readers (protobuf, the run model): lazy.
    from ..otlp.errors import FormatError
    from ..runs.load import LoadWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)  # reported as errors after the output
        try:
            yield
        except FormatError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"{exc.filename or paths[0]}: {exc.strerror or exc}")


def load_runs(paths: tuple[str, ...], run_id: str | None, trace_id: str | None = None) -> Runs:
    """The runs of ``paths`` (only those whose id starts with ``run_id``, of the trace
    ``trace_id``); input that cannot be read at all, or no such run, is the error."""
    # The run readers: lazy.
    from ..runs.load import Runs, load
    from ..runs.stitch import is_piece
    from ..sources.files import is_database

    with reading(paths):
        if run_id is not None and trace_id is None and all(map(is_database, paths)):
            # A run's id is its first trace's: the database reads that trace only, unless
            # it is a client-only trace that other traces continue (stitched: read them all).
            runs = load(*paths, trace_id=run_id)
            if any(map(is_piece, runs)):
                return _load_named(paths, run_id)
        elif run_id is not None and trace_id is None:
            return _load_named(paths, run_id)
        else:
            runs = load(*paths, trace_id=trace_id)
    if trace_id is not None and not runs and not runs.problems:
        fail(f"no trace {trace_id!r} in {', '.join(paths)}")
    if run_id is None:
        return runs
    from ..runs.pick import named  # the run model: lazy

    picked = Runs(named(runs, run_id), runs.problems)
    if not picked and not runs.problems:
        no_run(paths, run_id, [r.run_id for r in runs])
    return picked


def _load_named(paths: tuple[str, ...], run_id: str) -> Runs:
    """The runs whose id starts with ``run_id``: a big dump is read a window at a time,
    keeping only those."""
    # The run model and the windowed reader: lazy.
    from ..runs.load import Runs
    from ..runs.pick import is_named
    from ..runs.stream import iter_runs, problems_of

    picked, others, problems = [], [], []
    for batch in iter_runs(*paths):
        for r in batch:
            if is_named(r, run_id):
                picked.append(r)
            else:
                others.append(r.run_id)
        problems.append(batch.problems)
    runs = Runs(sorted(picked, key=lambda r: (r.start_ns, r.run_id)), problems_of(problems))
    if not runs and not runs.problems:
        no_run(paths, run_id, sorted(others))
    return runs


def pick(runs: Sequence[Run], run_id: str | None, where: str, how: str) -> Run:
    """:func:`~otel_replay.runs.pick.pick_run`, its refusal as the command's error."""
    from ..runs.pick import RunNotPicked, pick_run  # the run model: lazy

    try:
        return pick_run(runs, run_id, where=where, how=how)
    except RunNotPicked as exc:
        fail(str(exc))


def no_run(paths: tuple[str, ...], run_id: str, known: list[str]) -> NoReturn:
    """No run ``run_id`` in ``paths``: the error names the runs there are."""
    fail(f"no run {run_id!r} in {', '.join(paths)} (runs: {', '.join(known) or 'none'})")


def report_problems(runs: Runs, code: int = 2) -> None:
    """After the output: the files passed over (a count, or each under ``--verbose``),
    then each input problem, and exit ``code`` when there is one."""
    from ..otlp.errors import NoTraceData  # the readers' errors: lazy

    passed = [p for p in runs.problems if isinstance(p, NoTraceData)]
    verbose = verbose_inputs()
    if verbose is not None:
        _list_passed_over(verbose, passed)
    elif passed:
        names = ": " + ", ".join(printable(p.shown_path) for p in passed[:3])
        more = f" and {len(passed) - 3} more" if len(passed) > 3 else ""
        click.echo(
            f"otel-replay: passed over {len(passed)} file(s) holding no trace data{names}{more}"
            " (--verbose lists each with why)",
            err=True,
        )
    problems = [p for p in runs.problems if not isinstance(p, NoTraceData)]
    for problem in problems:
        click.echo(f"otel-replay: error: {printable(str(problem))}", err=True)
    if problems:
        sys.exit(code)


def _list_passed_over(listed: set[str], read: Sequence[Any]) -> None:
    """``--verbose``: each file of the command's inputs passed over, with why: by its name
    (or a folder not looked into), or read and found to hold no trace data (``read``)."""
    from ..sources.files import passed_over  # the file finder: lazy

    ctx = click.get_current_context()
    given = [ctx.params.get(k) for k in ("paths", "inputs", "path", "a", "b")]
    names = [n for v in given if v for n in ((v,) if isinstance(v, str) else v)]
    names = [split_spec(n)[0] for n in names]  # diff's PATH#RUN_ID
    for path, why in passed_over(n for n in dict.fromkeys(names) if n not in listed):
        click.echo(f"otel-replay: passed over {printable(path)}: {printable(why)}", err=True)
    listed.update(names)
    for problem in read:
        click.echo(f"otel-replay: passed over {printable(str(problem))}", err=True)
    if read:
        click.echo(f"otel-replay: passed over {len(read)} file(s) holding no trace data", err=True)


def split_spec(spec: str) -> tuple[str, str | None]:
    """``PATH#RUN_ID`` -> (PATH, RUN_ID); a path that exists as given is taken whole."""
    if "#" in spec and not os.path.exists(spec):
        path, _, run = spec.rpartition("#")
        return path, run or None
    return spec, None


def list_runs(
    paths: tuple[str, ...],
    flt: Filter,
    *,
    since: str | None = None,
    use_cache: bool = True,
    jobs: int | None = None,
) -> tuple[list[RunSummary], list[FormatError]]:
    """The summaries of the runs ``ls`` lists (``since``: ``--since`` as given, for a
    backend's search), with a progress line while they are read; ``cohort`` reads its
    runs through :func:`drawn_runs`, over the same listing."""
    from ..commands.listing import listed, searched  # the run readers: lazy
    from ..sources.progress import working

    paths = searched(paths, flt, since)
    with working(f"listing {printable(', '.join(paths))}"):
        return listed(paths, flt, use_cache=use_cache, jobs=jobs)


def drawn_runs(
    paths: tuple[str, ...],
    flt: Filter,
    draw: Draw,
    *,
    since: str | None = None,
    use_cache: bool = True,
    jobs: int | None = None,
) -> Drawn:
    """The runs of :func:`list_runs` that ``draw`` takes, and how many there were: drawn
    by a ClickHouse table itself (only those leave it), else from the summaries."""
    from ..commands.listing import drawn_listing, searched  # the run readers: lazy
    from ..sources.progress import working

    paths = searched(paths, flt, since)
    with working(f"listing {printable(', '.join(paths))}"):
        return drawn_listing(paths, flt, draw, use_cache=use_cache, jobs=jobs)
