"""``otel-replay export`` and ``otel-replay convert``: stored spans re-sent to an OTLP
endpoint, or written as a Collector dump.

The exporters, writers and readers are imported inside the commands, marked ``lazy``, so
that ``--help`` stays fast.
"""

from __future__ import annotations

import sys

import click

from .loading import load_runs, report_problems
from .options import (
    headers_option,
    parse_headers,
    paths_argument,
    read_headers,
    run_option,
    trace_option,
    verbose_option,
)
from .output import fail


@click.command()
@paths_argument
@click.option(
    "--endpoint",
    metavar="URL",
    help="OTLP endpoint, e.g. http://host:4318/v1/traces "
    "[default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT].",
)
@click.option(
    "--protocol",
    type=click.Choice(["http/protobuf", "grpc"]),
    help="[default: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL "
    "or http/protobuf]",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    callback=parse_headers,
    help="A header sent to the endpoint (repeatable; NAME=VALUE works too), added to "
    "OTEL_EXPORTER_OTLP_HEADERS.",
)
@trace_option
@run_option
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="Seconds per batch, retries included [default: OTEL_EXPORTER_OTLP_TIMEOUT or 10].",
)
@click.option("--insecure", is_flag=True, help="grpc: no TLS, whatever the URL scheme.")
@click.option(
    "--base64-bytes",
    is_flag=True,
    help="Send bytes values as base64 text, for backends that cannot store bytes "
    "(Arize Phoenix drops such spans); otel-replay reads them back from Phoenix as bytes.",
)
@click.option(
    "--read-header",
    "read_headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    callback=read_headers,
    expose_value=False,
    help="An HTTP header sent to every PATH that is a URL (repeatable; 'NAME: VALUE' or "
    "NAME=VALUE), never printed: -H before the command does the same, --header here is the "
    "endpoint's.",
)
@verbose_option
def export(
    paths: tuple[str, ...],
    endpoint: str | None,
    protocol: str | None,
    headers: dict[str, str],
    trace_id: str | None,
    run_id: str | None,
    timeout: float | None,
    insecure: bool,
    base64_bytes: bool,
) -> None:
    """Re-send stored spans to an OTLP endpoint (any backend or Collector).

    PATH is anything `show` reads.  Exit 1 when the endpoint does not take a
    batch (down, HTTP 4xx/5xx); input problems are reported after sending
    every good span, with exit 2.
    """
    # The OTLP exporters and the readers: lazy.
    from ..export.resend import ExportFailed, otlp_exporter, read_stored, resend
    from ..otlp.errors import FormatError
    from ..runs.load import Runs

    trace_ids = None if trace_id is None else [trace_id]
    if run_id is not None:
        trace_ids = sorted({t for r in load_runs(paths, run_id, trace_id) for t in r.trace_ids})
    try:
        exporter, url = otlp_exporter(
            endpoint,
            protocol=protocol,
            headers=headers,
            timeout=timeout,
            insecure=insecure or None,
        )
    except ValueError as exc:  # a protocol named by the environment that we cannot send
        fail(str(exc))
    problems: list[FormatError] = []
    try:
        records = read_stored(paths, trace_ids, problems)
        summary = resend(records, exporter, endpoint=url, base64_bytes=base64_bytes)
    except ExportFailed as exc:
        click.echo(f"otel-replay: error: {exc}", err=True)
        sys.exit(1)
    if summary.spans == 0 and trace_id is not None and not problems:
        fail(f"no trace {trace_id!r} in {', '.join(paths)}")
    batches = "batch" if summary.batches == 1 else "batches"
    click.echo(f"sent {summary.spans} spans in {summary.batches} {batches} to {summary.endpoint}")
    if summary.left_out:
        spans = "span" if summary.left_out == 1 else "spans"
        click.echo(
            f"otel-replay: left out {summary.left_out} {spans} whose secrets could not be hidden",
            err=True,
        )
    report_problems(Runs(problems=problems))


@click.command()
@click.argument("inputs", nargs=-1, required=True, metavar="IN...")
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    metavar="OUT",
    help="The file to write ('-': standard output); its payload blobs go beside it.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["proto", "json"]),
    default=None,
    help="proto: 4-byte length + protobuf request per record; json: one OTLP/JSON "
    "request per line (the Collector file exporter's two formats).  Default: json for "
    "an OUT named .json, .jsonl or .ndjson (.zst after it too), else proto.",
)
@click.option(
    "--zstd",
    is_flag=True,
    help="Compress each record as its own zstd frame inside the 4-byte length prefix "
    "(the Collector's compression: zstd; JSON records are length-prefixed then).",
)
@headers_option
@verbose_option
def convert(inputs: tuple[str, ...], output: str, fmt: str | None, zstd: bool) -> None:
    """Convert stored spans and log records to a Collector dump format.

    IN is anything `show` reads (files, directories, globs, -, URLs; spans and
    logs).  Each request is written as the Collector's file exporter would
    have written it, batches and everything in them kept.  Input faults are
    reported after converting every good record, with exit 2.
    """
    # The writers and readers: lazy.
    from ..export.convert import convert as run
    from ..otlp.errors import FormatError
    from ..runs.load import Runs

    problems: list[FormatError] = []
    try:
        summary = run(
            inputs, output, format=fmt, compression="zstd" if zstd else None, problems=problems
        )
    except ValueError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.filename or output}: {exc.strerror or exc}")
    what = _count(summary.spans, "span")
    if summary.log_records:
        what += " and " + _count(summary.log_records, "log record")
    blobs = f", {_count(summary.blobs, 'payload blob')} copied" if summary.blobs else ""
    click.echo(
        f"converted {what} in {_count(summary.requests, 'request')} to {output} ({summary.format}"
        f"{', zstd' if zstd else ''}){blobs}",
        err=output == "-",
    )
    report_problems(Runs(problems=problems))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
