"""``otel-replay``: show and check recorded runs.

Exit codes: 0 ok; 1 a check failed (or a replay diverged); 2 bad usage or
unreadable input, with a one-line reason naming the file and byte offset.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .. import __version__

if TYPE_CHECKING:
    from ..runs.load import Runs


def _fail(message: str) -> NoReturn:
    click.echo(f"otel-replay: error: {message}", err=True)
    sys.exit(2)


def _load(paths: tuple[str, ...], run_id: str | None) -> Runs:
    from ..runs.load import LoadWarning, Runs, load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)  # reported as errors below
        try:
            runs = load(*paths)
        except OSError as exc:
            _fail(f"{exc.filename or paths[0]}: {exc.strerror or exc}")
    if run_id is not None:
        picked = Runs([r for r in runs if r.run_id.startswith(run_id)], runs.problems)
        if not picked and not runs.problems:
            known = ", ".join(r.run_id for r in runs) or "none"
            _fail(f"no run {run_id!r} in {', '.join(paths)} (runs: {known})")
        return picked
    return runs


def _report_problems(runs: Runs) -> None:
    for problem in runs.problems:
        click.echo(f"otel-replay: error: {problem}", err=True)
    if runs.problems:
        sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="otel-replay")
def cli() -> None:
    """Make LLM-agent failures reproducible from OpenTelemetry traces."""


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help='One JSON document: {"runs": [...]}.')
@click.option("--run", "run_id", metavar="ID", help="Only the run whose id starts with ID.")
def show(paths: tuple[str, ...], as_json: bool, run_id: str | None) -> None:
    """Show each recorded run as a tree of steps."""
    runs = _load(paths, run_id)
    if as_json:
        click.echo(
            json.dumps({"runs": [r.to_json() for r in runs]}, ensure_ascii=False, default=_default)
        )
    else:
        from .render import render_runs

        render_runs(runs)
    _report_problems(runs)


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="The reports as one JSON document.")
@click.option("--run", "run_id", metavar="ID", help="Only the run whose id starts with ID.")
def check(paths: tuple[str, ...], as_json: bool, run_id: str | None) -> None:
    """Replay-kit report per run; exit 1 when a run is not fully replayable."""
    runs = _load(paths, run_id)
    if as_json:
        doc = {
            "runs": [
                {
                    "run_id": r.run_id,
                    "verdict": r.kit.verdict,
                    "replayable": r.kit.replayable,
                    "missing": r.kit.missing,
                    "problems": r.kit.problems,
                }
                for r in runs
            ]
        }
        click.echo(json.dumps(doc, ensure_ascii=False))
    else:
        from .render import render_check

        render_check(runs)
    _report_problems(runs)
    if not runs or not all(r.kit.replayable for r in runs):
        sys.exit(1)


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    return repr(value)


def main() -> None:
    cli(prog_name="otel-replay")


if __name__ == "__main__":
    main()
