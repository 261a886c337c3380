"""``otel-replay``: show, check, export, convert and serve recorded runs.

Exit codes: 0 ok; 1 a check failed (or a replay diverged); 2 bad usage or
unreadable input, with a one-line reason naming the file and byte offset.
Input problems do not hide what could be read: the runs are printed first,
then each problem as ``otel-replay: error: <path>: <reason> at byte N``.

This module is the group and its global options; each command is defined in a
module of its own (check, inspect_runs, replay, report, export, serve, cohort),
over the helpers they share (options, loading, output).
"""

from __future__ import annotations

import click

from .._version import __version__
from . import check, cohort, export, inspect_runs, replay, report, serve
from .options import HEADER_HELP, read_headers


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="otel-replay")
@click.option(
    "--header",
    "-H",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    callback=read_headers,
    expose_value=False,
    help=HEADER_HELP + " Also accepted after the command.",
)
@click.option(
    "--refs",
    "ref_stores",
    multiple=True,
    metavar="BASE[=WHERE]",
    help="Read message content stored by reference (gen_ai.*_ref) under BASE, e.g. "
    "s3://bucket/genai or file:///srv/uploads=./uploads when the store moved (also "
    "OTEL_REPLAY_CONTENT_REFS). Other references are not read.",
)
def cli(ref_stores: tuple[str, ...]) -> None:
    """Make LLM-agent failures reproducible from OpenTelemetry traces."""
    if ref_stores:
        from ..payload import references as content_refs  # fsspec and the like: lazy

        content_refs.use_content_refs(ref_stores)


for _command in (
    inspect_runs.show,
    check.check,
    check.ls_,
    inspect_runs.diff,
    replay.regress,
    report.report,
    replay.replay_,
    export.export,
    export.convert,
    serve.serve,
    cohort.command(),
):
    cli.add_command(_command)

#: Each command in a line of ``otel-replay --help`` (click cuts a docstring mid-sentence).
SUMMARIES: dict[str, str] = {
    "ls": "One line per run: when, who, models, steps, verdict.",
    "show": "Each run as a tree of steps, or one step in full.",
    "check": "What each run lacks to replay, and its anomalies.",
    "diff": "Compare two runs step by step.",
    "replay": "Replay a recorded run with your agent.",
    "regress": "Write a pytest test that replays a run.",
    "report": "A run, or many, as HTML pages.",
    "serve": "Serve recorded model answers to real clients.",
    "export": "Send stored spans to an OTLP endpoint.",
    "convert": "Write stored spans as a Collector dump.",
    "cohort": "Replay many runs against candidates: what changes.",
}
for _name, _summary in SUMMARIES.items():
    cli.commands[_name].short_help = _summary


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="otel-replay")


if __name__ == "__main__":
    main()
