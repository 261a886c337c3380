"""``otel-replay``: show, check, export, convert and serve recorded runs.

Exit codes: 0 ok; 1 a check failed (or a replay diverged); 2 bad usage or
unreadable input, with a one-line reason naming the file and byte offset.
Input problems do not hide what could be read: the runs are printed first,
then each problem as ``otel-replay: error: <path>: <reason> at byte N``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .. import __version__

if TYPE_CHECKING:
    from ..runs.load import Runs

# Heavy modules (protobuf, rich, the run builder) are imported inside the
# commands so that ``--help`` and ``--version`` stay fast.


def _fail(message: str) -> NoReturn:
    click.echo(f"otel-replay: error: {message}", err=True)
    sys.exit(2)


def _load(paths: tuple[str, ...], run_id: str | None, trace_id: str | None = None) -> Runs:
    import warnings

    from ..runs.load import LoadWarning, Runs, load
    from ..store.errors import FormatError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)  # reported as errors after the output
        try:
            runs = load(*paths, trace_id=trace_id)
        except FormatError as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(f"{exc.filename or paths[0]}: {exc.strerror or exc}")
    if trace_id is not None and not runs and not runs.problems:
        _fail(f"no trace {trace_id!r} in {', '.join(paths)}")
    if run_id is None:
        return runs
    picked = Runs([r for r in runs if r.run_id.startswith(run_id)], runs.problems)
    if not picked and not runs.problems:
        known = ", ".join(r.run_id for r in runs) or "none"
        _fail(f"no run {run_id!r} in {', '.join(paths)} (runs: {known})")
    return picked


def _report_problems(runs: Runs) -> None:
    for problem in runs.problems:
        click.echo(f"otel-replay: error: {problem}", err=True)
    if runs.problems:
        sys.exit(2)


def _dumps(doc: Any) -> str:
    import json

    try:
        return json.dumps(doc, ensure_ascii=False, default=_default, allow_nan=False)
    except ValueError:  # NaN or infinity in an attribute: not JSON, so say it as a string
        return json.dumps(_finite(doc), ensure_ascii=False, default=_default)


def _finite(value: Any) -> Any:
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        # Attribute bytes that are text read as text; others as base64, as payload.plain does.
        from ..payload import plain

        return plain(bytes(value))
    return repr(value)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="otel-replay")
def cli() -> None:
    """Make LLM-agent failures reproducible from OpenTelemetry traces."""


_paths = click.argument("paths", nargs=-1, required=True, metavar="PATH...")
_run = click.option("--run", "run_id", metavar="ID", help="Only the run whose id starts with ID.")
_trace = click.option(
    "--trace",
    "trace_id",
    metavar="ID",
    help="Only the trace whose id starts with ID (a big dump is read through its index).",
)


@cli.command()
@_paths
@click.option("--json", "as_json", is_flag=True, help='One JSON document: {"runs": [...]}.')
@_run
@_trace
def show(paths: tuple[str, ...], as_json: bool, run_id: str | None, trace_id: str | None) -> None:
    """Show each recorded run as a tree of steps.

    PATH is a trace file or a directory of them.
    """
    runs = _load(paths, run_id, trace_id)
    if as_json:
        click.echo(_dumps({"runs": [r.to_json() for r in runs]}))
    else:
        from .render import render_runs

        render_runs(runs)
        if not runs and not runs.problems:
            click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
    _report_problems(runs)


@cli.command()
@_paths
@click.option("--json", "as_json", is_flag=True, help="The reports as one JSON document.")
@_run
def check(paths: tuple[str, ...], as_json: bool, run_id: str | None) -> None:
    """Replay-kit report per run; exit 1 when a run is not fully replayable.

    PATH is a trace file or a directory of them.  No run at all also fails.
    """
    runs = _load(paths, run_id)
    if as_json:
        reports = [
            {
                "run_id": r.run_id,
                "verdict": r.kit.verdict,
                "replayable": r.kit.replayable,
                "missing": r.kit.missing,
                "problems": r.kit.problems,
            }
            for r in runs
        ]
        click.echo(_dumps({"runs": reports}))
    else:
        from .render import render_check

        render_check(runs)
    _report_problems(runs)
    if not runs:
        click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
        sys.exit(1)
    if not all(r.kit.replayable for r in runs):
        sys.exit(1)


def _header(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    headers = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", ctx, param)
        headers[key.strip()] = value.strip()
    return headers


@cli.command()
@_paths
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
    metavar="K=V",
    callback=_header,
    help="Request header (repeatable), added to OTEL_EXPORTER_OTLP_HEADERS.",
)
@_trace
@_run
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
    from ..export.resend import ExportFailed, otlp_exporter, read_stored, resend
    from ..store.errors import FormatError

    trace_ids = None if trace_id is None else [trace_id]
    if run_id is not None:
        trace_ids = sorted({t for r in _load(paths, run_id, trace_id) for t in r.trace_ids})
    try:
        exporter, url = otlp_exporter(
            endpoint,
            protocol=protocol,
            headers=headers,
            timeout=timeout,
            insecure=insecure or None,
        )
    except ValueError as exc:  # a protocol named by the environment that we cannot send
        _fail(str(exc))
    problems: list[FormatError] = []
    try:
        records = read_stored(paths, trace_ids, problems)
        summary = resend(records, exporter, endpoint=url, base64_bytes=base64_bytes)
    except ExportFailed as exc:
        click.echo(f"otel-replay: error: {exc}", err=True)
        sys.exit(1)
    if summary.spans == 0 and trace_id is not None and not problems:
        _fail(f"no trace {trace_id!r} in {', '.join(paths)}")
    batches = "batch" if summary.batches == 1 else "batches"
    click.echo(f"sent {summary.spans} spans in {summary.batches} {batches} to {url}")
    from ..runs.load import Runs

    _report_problems(Runs(problems=problems))


@cli.command()
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
    default="proto",
    show_default=True,
    help="proto: 4-byte length + protobuf request per record; json: one OTLP/JSON "
    "request per line (the Collector file exporter's two formats).",
)
@click.option(
    "--zstd",
    is_flag=True,
    help="Compress each record as its own zstd frame inside the 4-byte length prefix "
    "(the Collector's compression: zstd; JSON records are length-prefixed then).",
)
def convert(inputs: tuple[str, ...], output: str, fmt: str, zstd: bool) -> None:
    """Convert stored spans and log records to a Collector dump format.

    IN is anything `show` reads (files, directories, globs, -, URLs; spans and
    logs).  Each request is written as the Collector's file exporter would
    have written it, batches and everything in them kept.  Input faults are
    reported after converting every good record, with exit 2.
    """
    from ..export.convert import convert as run
    from ..store.errors import FormatError

    problems: list[FormatError] = []
    try:
        summary = run(
            inputs, output, format=fmt, compression="zstd" if zstd else None, problems=problems
        )
    except ValueError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"{exc.filename or output}: {exc.strerror or exc}")
    what = _count(summary.spans, "span")
    if summary.log_records:
        what += " and " + _count(summary.log_records, "log record")
    blobs = f", {_count(summary.blobs, 'payload blob')} copied" if summary.blobs else ""
    click.echo(
        f"converted {what} in {_count(summary.requests, 'request')} to {output} ({fmt}"
        f"{', zstd' if zstd else ''}){blobs}",
        err=output == "-",
    )
    from ..runs.load import Runs

    _report_problems(Runs(problems=problems))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


@cli.command()
@_paths
@click.option("--run", "run_id", metavar="ID", help="Serve only the run whose id starts with ID.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="0: any free port."
)
@click.option(
    "--match",
    type=click.Choice(["exact", "messages", "last_message", "any"]),
    default="messages",
    show_default=True,
    help="Loosest matcher rung on which a request still counts as the recorded one.",
)
@click.option(
    "--timing",
    "speed",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SPEED",
    help="Take as long as each recorded call took (1 = recorded speed, 2 = twice as fast).",
)
@click.option(
    "--on-divergence",
    type=click.Choice(["error", "live"]),
    default="error",
    show_default=True,
    help="error: answer HTTP 409 naming the step; live: forward the request to --upstream.",
)
@click.option("--upstream", metavar="URL", help="Where --on-divergence live forwards requests.")
def serve(
    paths: tuple[str, ...],
    run_id: str | None,
    host: str,
    port: int,
    match: str,
    speed: float | None,
    on_divergence: str,
    upstream: str | None,
) -> None:
    """Serve recorded model responses over HTTP to real OpenAI and Anthropic clients.

    POST /v1/chat/completions and /v1/responses (OpenAI), /v1/messages
    (Anthropic), as JSON or SSE.  Prints the base URL when ready; point the
    OpenAI client at BASE/v1 and the Anthropic client at BASE.  A request
    that does not match the recording gets HTTP 409 with a JSON body naming
    the step.
    """
    if on_divergence == "live" and not upstream:
        _fail("--on-divergence live needs --upstream URL")
    runs = _load(paths, run_id)
    _report_problems(runs)
    from ..replay.adapters.server import base_url, bind, run_server
    from ..replay.adapters.server import upstream as forwarder
    from ..replay.divergence import ReplayError
    from ..replay.engine import ReplayEngine, servable

    good = []
    for run in runs:
        problems = servable(run)
        for problem in problems:
            click.echo(f"otel-replay: warning: {problem}", err=True)
        if not any("inspect-only" in p or "no model calls" in p for p in problems):
            good.append(run)
    if not good:
        _fail(f"no run in {', '.join(paths)} has model responses to serve")

    def log(line: str) -> None:
        click.echo(f"otel-replay: {line}", err=True)

    try:
        engine = ReplayEngine(
            good,
            run_id=run_id,
            match=match,
            timing=speed,
            forward=forwarder(upstream) if on_divergence == "live" and upstream else None,
            log=log,
        )
    except ReplayError as exc:
        _fail(str(exc))
    try:
        sock = bind(host, port)
    except OSError as exc:
        _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    url = base_url(sock)
    click.echo(
        f"otel-replay: serving {len(good)} run(s) ({', '.join(r.run_id for r in good)}): "
        f"OpenAI base_url {url}/v1, Anthropic base_url {url}",
        err=True,
    )
    click.echo(url)
    sys.stdout.flush()
    run_server(engine, sock)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="otel-replay")


if __name__ == "__main__":
    main()
