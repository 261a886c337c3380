"""``otel-replay``: show, check, export, convert and serve recorded runs.

Exit codes: 0 ok; 1 a check failed (or a replay diverged); 2 bad usage or
unreadable input, with a one-line reason naming the file and byte offset.
Input problems do not hide what could be read: the runs are printed first,
then each problem as ``otel-replay: error: <path>: <reason> at byte N``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, cast

import click

from .. import settings
from .._version import __version__
from ..replay.options import FROM_MESSAGES, MATCH_RUNGS, MODEL_MODES, TOOL_POLICIES

# The modes' choices, written once (their Literal types); a light module.
from ..replay.server_limits import DEFAULT_LIMITS
from ..trusted_types import TYPE_TRUSTS
from .cohort import command as _cohort_command
from .printable import printable

if TYPE_CHECKING:
    from ..replay.options import FromMessages, ModelMode, ToolPolicy
    from ..runs.load import Runs
    from ..runs.model import Run
    from ..trusted_types import TypeTrust

# Heavy modules (protobuf, rich, the run builder) are imported inside the
# commands so that ``--help`` and ``--version`` stay fast.


def _fail(message: str) -> NoReturn:
    # Messages name files and runs a trace supplied: never raw control characters.
    click.echo(f"otel-replay: error: {printable(message)}", err=True)
    sys.exit(2)


@contextlib.contextmanager
def _reading(paths: tuple[str, ...]) -> Iterator[None]:
    """Input that cannot be read at all: one line naming it, exit 2."""
    import warnings

    from ..otlp.errors import FormatError
    from ..runs.load import LoadWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)  # reported as errors after the output
        try:
            yield
        except FormatError as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(f"{exc.filename or paths[0]}: {exc.strerror or exc}")


def _load(paths: tuple[str, ...], run_id: str | None, trace_id: str | None = None) -> Runs:
    from ..runs.load import Runs, load
    from ..runs.stitch import is_piece
    from ..sources.files import is_database

    with _reading(paths):
        if run_id is not None and trace_id is None and all(map(is_database, paths)):
            # A run's id is its first trace's: the database reads that trace only, unless
            # it is a client-only trace that other traces continue (stitched: read them all).
            runs = load(*paths, trace_id=run_id)
            if any(map(is_piece, runs)):
                return _load_run(paths, run_id)
        elif run_id is not None and trace_id is None:
            return _load_run(paths, run_id)
        else:
            runs = load(*paths, trace_id=trace_id)
    if trace_id is not None and not runs and not runs.problems:
        _fail(f"no trace {trace_id!r} in {', '.join(paths)}")
    if run_id is None:
        return runs
    from ..runs.pick import named

    picked = Runs(named(runs, run_id), runs.problems)
    if not picked and not runs.problems:
        _no_run(paths, run_id, [r.run_id for r in runs])
    return picked


def _load_run(paths: tuple[str, ...], run_id: str) -> Runs:
    """The runs whose id starts with ``run_id``: a big dump is read a window at a time,
    keeping only those."""
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
        _no_run(paths, run_id, sorted(others))
    return runs


def _pick(runs: Sequence[Run], run_id: str | None, where: str, how: str) -> Run:
    """:func:`~otel_replay.runs.pick.pick_run`, its refusal as the command's error."""
    from ..runs.pick import RunNotPicked, pick_run

    try:
        return pick_run(runs, run_id, where=where, how=how)
    except RunNotPicked as exc:
        _fail(str(exc))


def _no_run(paths: tuple[str, ...], run_id: str, known: list[str]) -> NoReturn:
    _fail(f"no run {run_id!r} in {', '.join(paths)} (runs: {', '.join(known) or 'none'})")


def _report_problems(runs: Runs, code: int = 2) -> None:
    from ..otlp.errors import NoTraceData

    passed = [p for p in runs.problems if isinstance(p, NoTraceData)]
    verbose = _verbose_inputs()
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


def _verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta["otel_replay.verbose"] = set()  # the inputs listed so far


#: ``--verbose`` on every command that reads folders.
_verbose_option = click.option(
    "--verbose",
    "-v",
    is_flag=True,
    callback=_verbose,
    expose_value=False,
    help="List each file and folder a folder or pattern given held that was not read, with "
    "why (by default one line counts the files read that held no trace data).",
)


def _verbose_inputs() -> set[str] | None:
    """Under ``--verbose``, the inputs whose passed-over files are listed already."""
    ctx = click.get_current_context(silent=True)
    listed: set[str] | None = ctx.meta.get("otel_replay.verbose") if ctx is not None else None
    return listed


def _list_passed_over(listed: set[str], read: Sequence[Any]) -> None:
    """``--verbose``: each file of the command's inputs passed over, with why: by its name
    (or a folder not looked into), or read and found to hold no trace data (``read``)."""
    from ..sources.files import passed_over

    ctx = click.get_current_context()
    given = [ctx.params.get(k) for k in ("paths", "inputs", "path", "a", "b")]
    names = [n for v in given if v for n in ((v,) if isinstance(v, str) else v)]
    names = [_split_spec(n)[0] for n in names]  # diff's PATH#RUN_ID
    for path, why in passed_over(n for n in dict.fromkeys(names) if n not in listed):
        click.echo(f"otel-replay: passed over {printable(path)}: {printable(why)}", err=True)
    listed.update(names)
    for problem in read:
        click.echo(f"otel-replay: passed over {printable(str(problem))}", err=True)
    if read:
        click.echo(f"otel-replay: passed over {len(read)} file(s) holding no trace data", err=True)


def _dumps(doc: Any) -> str:
    import json

    from .printable import json_printable

    try:
        text = json.dumps(doc, ensure_ascii=False, default=_default, allow_nan=False)
    except ValueError:  # NaN or infinity in an attribute: not JSON, so say it as a string
        text = json.dumps(_finite(doc), ensure_ascii=False, default=_default)
    return json_printable(text)


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
        from ..payload.codec import plain

        return plain(bytes(value))
    return repr(value)


def _header(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    """``--header`` values as a dict: ``NAME: VALUE`` or ``NAME=VALUE`` (a name holds
    neither, so the first of them ends it).  A bad one is refused without being
    repeated: it may hold a secret."""
    headers = {}
    for item in values:
        cut = min((i for i in (item.find(":"), item.find("=")) if i >= 0), default=-1)
        name = item[:cut].strip()
        if cut < 0 or not name:
            raise click.BadParameter("give it as 'NAME: VALUE' or NAME=VALUE", ctx, param)
        headers[name] = item[cut + 1 :].strip()
    return headers


def _read_header(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> None:
    """``-H`` before or after the subcommand: the headers of every URL read, those given
    after it added to those given before."""
    headers = _header(ctx, param, values)
    if not headers:
        return
    given = ctx.meta.setdefault("otel_replay.headers", {})  # one dict for the whole line
    given.update(headers)
    from ..sources import download  # http.client and the like: for URLs only

    download.use_headers(given)


#: Help of ``-H``, before the subcommand and after it.
_HEADER_HELP = (
    "An HTTP header sent with every URL read (repeatable), e.g. 'Authorization: Bearer ...' "
    "or 'X-Scope-OrgID: acme' (NAME=VALUE works too; also OTEL_REPLAY_HTTP_HEADERS); never "
    "printed."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="otel-replay")
@click.option(
    "--header",
    "-H",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    callback=_read_header,
    expose_value=False,
    help=_HEADER_HELP + " Also accepted after the command.",
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
        from ..payload import references as content_refs

        content_refs.use_content_refs(ref_stores)


_paths = click.argument("paths", nargs=-1, required=True, metavar="PATH...")
#: ``-H`` after the subcommand, on every command that reads URLs.
_headers = click.option(
    "--header",
    "-H",
    "read_headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    callback=_read_header,
    expose_value=False,
    help=_HEADER_HELP,
)
_run = click.option("--run", "run_id", metavar="ID", help="Only the run whose id starts with ID.")
_jobs = click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes reading a big dump [default: the CPU count over 64 MB, else 1].",
)
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
@_headers
@_verbose_option
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
        _fail("--timeline and --step do not go together")
    if raw and step_ref is None:
        _fail("--raw goes with --step N")
    runs = _load(paths, run_id, trace_id)
    if step_ref is not None:
        _show_step(runs, paths, step_ref, as_json, raw)
    elif timeline:
        if as_json:
            from ..commands.timeline import timeline as bars

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
            click.echo(_dumps(doc))
        else:
            from .render_workflow import render_timeline

            render_timeline(runs)
    elif as_json:
        click.echo(_dumps({"runs": [r.to_json() for r in runs]}))
    else:
        from .render import render_runs

        render_runs(runs)
    if not runs and not runs.problems and not as_json:
        click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
    _report_problems(runs)


def _show_step(runs: Runs, paths: tuple[str, ...], ref: str, as_json: bool, raw: bool) -> None:
    if len(runs) != 1:
        _report_problems(runs)
    run = _pick(runs, None, ", ".join(paths), "--run ID")
    try:
        # Digits name a step index when there is such a step, else a span id prefix
        # (one in about 40 span ids starts with eight digits).
        index = int(ref) if ref.isdigit() and int(ref) < len(run.steps) else None
        step = run.step(index) if index is not None else run.step(ref)
    except (KeyError, IndexError):
        _fail(f"no step {ref!r} in run {run.run_id} (steps 0-{len(run.steps) - 1})")
    if as_json:
        doc = step.to_json()
        if raw:
            doc["attributes"] = step.attributes
            doc["events"] = step.events
        click.echo(_dumps({"run_id": run.run_id, "step": doc}))
    else:
        from .render_workflow import render_step

        render_step(run, step, raw)


@cli.command()
@_paths
@click.option("--json", "as_json", is_flag=True, help="The reports as one JSON document.")
@_run
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
@_jobs
@_headers
@_verbose_option
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
    from ..commands.check import check_runs
    from ..runs.anomalies import DEFAULT_ERROR_PHRASES, DEFAULT_MAX_TOOL_CALLS, Config
    from ..runs.kit import lost_records
    from ..runs.load import Runs

    config = Config(
        max_tool_calls=DEFAULT_MAX_TOOL_CALLS if max_tool_calls is None else max_tool_calls,
        error_phrases=error_phrases or DEFAULT_ERROR_PHRASES,
    )
    from ..commands.check import totals
    from ..sources.progress import working

    with _reading(paths), working(f"checking {printable(', '.join(paths))}"):
        checks, others, problems = check_runs(paths, config, run_id=run_id, jobs=jobs)
    if run_id is not None and not checks and not problems:
        _no_run(paths, run_id, others)
    summed = totals(checks)
    if as_json:
        click.echo(_dumps({"runs": [c.to_json() for c in checks], "totals": summed.to_json()}))
    else:
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
    _report_problems(Runs(problems=problems), 1 if carried else 2)
    if not checks:
        click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
        sys.exit(1)
    if not all(c.kit.replayable for c in checks):
        sys.exit(1)
    if strict and any(c.findings for c in checks):
        sys.exit(1)


@cli.command(name="ls")
@_paths
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
@_jobs
@_headers
@_verbose_option
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
    from ..runs.load import Runs
    from ..runs.summary import select
    from .listing import listed, run_filter

    try:
        flt = run_filter(agent, since, errors_only, tools, replayable)
    except ValueError as exc:
        _fail(str(exc))
    found, problems = listed(paths, flt, since=since, use_cache=not no_cache, jobs=jobs)
    picked = select(found, flt, sort, reverse)
    if as_json:
        click.echo(_dumps({"runs": [s.to_json() for s in picked]}))
    else:
        from .render_workflow import render_ls

        if picked:
            render_ls(picked)
        if not found and not problems:
            click.echo(f"otel-replay: no runs in {', '.join(paths)}", err=True)
    _report_problems(Runs(problems=problems))


def _split_spec(spec: str) -> tuple[str, str | None]:
    """``PATH#RUN_ID`` -> (PATH, RUN_ID); a path that exists as given is taken whole."""
    import os

    if "#" in spec and not os.path.exists(spec):
        path, _, run = spec.rpartition("#")
        return path, run or None
    return spec, None


def _one_run(path: str, run_id: str | None, cache: dict[str, Runs]) -> Run:
    if run_id is not None:
        picked = _load((path,), run_id)  # a big dump: only this run is kept
        _report_problems(picked)
        return _pick(picked, run_id, path, f"{path}#RUN_ID")
    if path not in cache:
        cache[path] = _load((path,), None)
        _report_problems(cache[path])
    return _pick(cache[path], None, path, f"{path}#RUN_ID")


@cli.command()
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
@_headers
@_verbose_option
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
    from ..runs.diff import diff_runs

    path_a, id_a = _split_spec(a)
    path_b, id_b = _split_spec(b) if b is not None else (path_a, None)
    id_a = run_a or id_a
    id_b = run_b or id_b
    if b is None and (id_a is None or id_b is None):
        _fail("give two runs: A B, or one PATH with --run-a ID --run-b ID")
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
        from ..report import render_diff as render_html

        with _writing_pages(html_out):
            page = render_html(result, (a, b if b is not None else path_a))
            with open(html_out, "w", encoding="utf-8") as f:
                f.write(page)
    if as_json:
        click.echo(_dumps(result.to_json()))
    else:
        from .render_workflow import render_diff

        render_diff(result, (path_a, path_b))
    if html_out is not None:
        # After the comparison; on stderr under --json, whose stdout is one document.
        click.echo(f"wrote {printable(html_out)}", err=as_json)
    sys.exit(0 if result.equal else 1)


#: The user's agent, as regress and replay call it.
_agent = click.option(
    "--agent",
    "agent_ref",
    required=True,
    metavar="MODULE:FUNC",
    help="Your agent, called as FUNC(question, **kwargs) and given, by the names of its "
    "parameters, model= (the pinned model), base_url= (the replay's loopback server), or "
    "client= (an OpenAI or Anthropic client, async for an async FUNC, pointed at it); with "
    "none of them, the clients it makes itself reach the replay through OPENAI_BASE_URL and "
    "ANTHROPIC_BASE_URL. An async FUNC is run to completion.",
)
_agent_kwargs = click.option(
    "--kwarg",
    "kwargs",
    multiple=True,
    metavar="NAME=VALUE",
    help="A keyword argument for the agent: VALUE as JSON, else text; @FIELD takes a field of "
    "the recorded fingerprint (user_id=@user.id). Repeatable.",
)


@cli.command()
@click.argument("path", metavar="PATH")
@_run
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="FILE.py",
    help="The test file to write; the recording is copied beside it (FILE.otlp, its blobs).",
)
@_agent
@_agent_kwargs
@click.option(
    "--check",
    "checks",
    multiple=True,
    metavar="MODULE:FUNC",
    help="A predicate FUNC(answer, run) -> bool the test asserts too. Repeatable.",
)
@click.option("--question", metavar="TEXT", help="Ask this instead of the recorded input.")
@click.option(
    "--allow-failed",
    is_flag=True,
    help="Lock in a run that failed (anomalies check warns of, an agent that raised), e.g. to "
    "pin a known failure while fixing it; the test's docstring says so.",
)
@_headers
@_verbose_option
def regress(
    path: str,
    run_id: str | None,
    output: str,
    agent_ref: str,
    kwargs: tuple[str, ...],
    checks: tuple[str, ...],
    question: str | None,
    allow_failed: bool,
) -> None:
    """Write a pytest regression test that replays a recorded run, to lock a fix in.

    The test asserts the recorded final answer, the recorded tool calls and
    each --check; it fails with the divergence report when the agent leaves
    the recording.  It calls the agent as replay --agent does.  A run that
    failed is refused with exit 1, naming what failed (--allow-failed to lock
    it in anyway).
    """
    from ..commands.regress import RegressError, RunFailed, write_regression

    runs = _load((path,), run_id)
    _report_problems(runs)
    _pick(runs, run_id, path, "--run ID")
    try:
        test, recording = write_regression(
            runs[0],
            output,
            agent=agent_ref,
            kwargs=kwargs,
            checks=checks,
            question=question,
            allow_failed=allow_failed,
        )
    except RunFailed as exc:
        click.echo(f"otel-replay: error: {printable(str(exc), lines=True)}", err=True)
        sys.exit(1)
    except (RegressError, ValueError) as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"{exc.filename or output}: {exc.strerror or exc}")
    click.echo(f"wrote {test} (run {runs[0].run_id}), recording {recording}")


@cli.command()
@_paths
@_run
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="FILE.html|DIR",
    help="The page to write (a name ending in .html), or a directory for an index of every "
    "run and a page each.",
)
@_jobs
@_headers
@_verbose_option
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
    with _writing_pages(output):
        if output.endswith((".html", ".htm")):
            _report_page(paths, run_id, output)
        else:
            _report_index(paths, run_id, output, jobs)


@contextlib.contextmanager
def _writing_pages(output: str) -> Iterator[None]:
    """HTML pages written to ``output``: no Jinja2, or a file that cannot be written, is
    the command's error."""
    from ..report import ReportUnavailable

    try:
        yield
    except ReportUnavailable as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"{exc.filename or output}: {exc.strerror or exc}")


def _report_page(paths: tuple[str, ...], run_id: str | None, output: str) -> None:
    from ..report import render_run

    runs = _load(paths, run_id)
    _report_problems(runs)
    run = _pick(runs, run_id, ", ".join(paths), "--run ID (or -o DIR for every run)")
    page = render_run(run)
    with open(output, "w", encoding="utf-8") as f:
        f.write(page)
    click.echo(f"wrote {output} (run {run.run_id}, {len(run.steps)} steps, {run.kit.verdict})")


def _report_index(
    paths: tuple[str, ...], run_id: str | None, directory: str, jobs: int | None
) -> None:
    import functools
    import os

    from ..report import render_index, require, write_run_page
    from ..runs.anomalies import Config
    from ..runs.load import Runs
    from ..runs.stream import map_runs

    require()  # before any run is read
    os.makedirs(directory, exist_ok=True)
    from ..sources.progress import working

    fn = functools.partial(write_run_page, directory, Config(), run_id)
    with _reading(paths), working(f"writing the pages of {printable(', '.join(paths))}"):
        mapped = map_runs(paths, fn, jobs=jobs)
    lines = sorted(
        (s for s in mapped.values if s is not None),
        key=lambda s: (s.summary.start_ns, s.summary.run_id),
    )
    index = os.path.join(directory, "index.html")
    with open(index, "w", encoding="utf-8") as f:
        f.write(render_index(lines, ", ".join(paths)))
    _report_problems(Runs(problems=mapped.problems))
    click.echo(f"wrote {index} and {len(lines)} run pages beside it")


@cli.command(name="replay")
@click.argument("path", metavar="PATH")
@_run
@_agent
@_agent_kwargs
@click.option("--question", metavar="TEXT", help="Ask this instead of the recorded input.")
@click.option(
    "--tools",
    type=click.Choice(TOOL_POLICIES),
    default="stub",
    show_default=True,
    help="Policy for every tool.",
)
@click.option(
    "--live",
    "live_ref",
    metavar="MODULE:FUNC",
    help="Your model: FUNC(messages, *, system, tools, model, **params) -> message.",
)
@click.option(
    "--model",
    "model_mode",
    type=click.Choice(MODEL_MODES),
    default="pinned",
    show_default=True,
    help="live: also send each recorded request to --live, pinned, and report the drift; "
    "candidate: --live answers every request in the recording's place (tools still answered "
    "from the recording).",
)
@click.option(
    "--from",
    "live_from",
    type=click.IntRange(min=0),
    metavar="N",
    help="Replay the steps before N from the recording, then run model (--live) and tools live.",
)
@click.option(
    "--override",
    "override",
    multiple=True,
    metavar="N=JSON",
    help="Fork: step N answers JSON instead of what was recorded. Repeatable.",
)
@click.option(
    "-o",
    "--output",
    "--record-to",
    "record_to",
    metavar="FILE",
    help="Where the replay is written: the replayed run appended to FILE as a trace, to diff "
    "with the recording (--record-to, its old name, works too).",
)
@click.option(
    "--type-trust",
    type=click.Choice(TYPE_TRUSTS),
    default="registered",
    show_default=True,
    help="Rebuild recorded objects only with registered classes (and tools' return "
    "annotations), or also with classes of modules your agent imported. Never imports.",
)
@click.option(
    "--results-from-messages",
    type=click.Choice(FROM_MESSAGES),
    default="refuse",
    show_default=True,
    help="A tool result the trace holds only as the text the model was sent (no tool span): "
    "refused when that text is JSON, unless the tool's return annotation decides; 'json': the "
    "agent sends json.dumps(result); 'text': it sends the tool's text as is.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="The report (and drift) as one JSON document."
)
@click.option(
    "--isolate",
    is_flag=True,
    # Read by the settings' one rule for flags, as the pytest plugin's default is.
    default=lambda: settings.current().isolate,
    help="Run the replay in a network namespace with only loopback: nothing the agent, its "
    "subprocesses or native code do reaches the network (Linux; else the in-process guard; "
    "also OTEL_REPLAY_ISOLATE).",
)
@_headers
@_verbose_option
def replay_(
    path: str,
    run_id: str | None,
    agent_ref: str,
    kwargs: tuple[str, ...],
    question: str | None,
    tools: str,
    live_ref: str | None,
    model_mode: str,
    live_from: int | None,
    override: tuple[str, ...],
    record_to: str | None,
    type_trust: TypeTrust,
    results_from_messages: str,
    as_json: bool,
    isolate: bool,
) -> None:
    """Replay a recorded run with your agent: exit 0 when it followed the recording, 1 if not.

    Tools stubbed, model pinned, clock frozen, network refused; --from N,
    --override and --model live make it selective (see docs/cli.md, "Selective
    replay and forks"), whichever way the agent takes the model (see --agent).
    An option the replay never got to apply (a tool step the agent ran without a
    replayed tool) is named, with exit 2.
    """
    if isolate:
        _isolate()
    from ..commands.regress import RegressError
    from ..commands.rerun import import_ref, overrides, raised_as_recorded, rerun, unapplied
    from ..replay.divergence import ReplayError
    from ..replay.options import ReplayOptions
    from ..runs.verdict import outcome

    if (live_from is not None or model_mode != "pinned") and live_ref is None:
        _fail("--from, --model live and --model candidate need --live MODULE:FUNC (your model)")
    runs = _load((path,), run_id)
    _report_problems(runs)
    _pick(runs, run_id, path, "--run ID")
    try:
        options = ReplayOptions(
            tools=cast("ToolPolicy", tools),
            model=cast("ModelMode", model_mode),
            live=import_ref(live_ref) if live_ref is not None else None,
            live_from=live_from,
            override=overrides(override),
            record_to=record_to,
            type_trust=type_trust,
            results_from_messages=cast("FromMessages", results_from_messages),
        )
        done = rerun(runs[0], agent_ref, kwargs=kwargs, question=question, options=options)
    except (RegressError, ReplayError, ValueError) as exc:
        _fail(str(exc))
    drift = done.session.drift
    recorded = outcome(runs[0])
    # The recorded error raised again is the recording followed (a bug reproduced).
    same = done.error is not None and raised_as_recorded(recorded, done.error)
    if as_json:
        doc = {"report": done.report.to_json(), "answer": done.answer}
        if model_mode == "live":
            doc["drift"] = drift.to_json()
        if done.error is not None:
            doc["error"] = repr(done.error)
            doc["raised_as_recorded"] = same
        if recorded.raised:
            doc["recorded_error"] = recorded.error
        click.echo(_dumps(doc))
    else:
        click.echo(printable(str(done.report), lines=True))
        if model_mode == "live":
            click.echo(printable(str(drift), lines=True))
        if done.answer is not None:
            click.echo(f"answer: {printable(str(done.answer))}")
        if same:
            click.echo(f"the agent raised {printable(repr(done.error))}, as the recorded run did")
        elif done.error is not None:
            click.echo(f"the agent raised {printable(_agent_error(done))}")
        if recorded.raised and not same:
            did = "raised something else" if done.error is not None else "did not raise"
            click.echo(f"the recorded run raised {printable(str(recorded.error))}; the agent {did}")
    ignored = unapplied(done)
    for line in ignored:
        click.echo(f"otel-replay: error: {printable(line)}", err=True)
    if ignored:
        sys.exit(2)
    sys.exit(0 if done.report.matched and (done.error is None or same) else 1)


def _agent_error(done: Any) -> str:
    """What the agent raised, as ``replay`` says it: the replay's own answer to a diverged
    request (an SDK's HTTP 409 error, its text the divergence) by its type alone, since
    the report above says that divergence already."""
    error, divergence = done.error, done.report.divergence
    if divergence is not None and str(divergence).splitlines()[0] in str(error):
        return f"{type(error).__name__}: the replay's answer to the diverged request (above)"
    return repr(error)


def _isolate() -> None:
    """Run this command again in a network namespace (see replay.isolation), or warn why not."""
    from ..replay import isolation

    if isolation.isolated():
        try:
            isolation.loopback_up()
        except OSError as exc:
            _fail(f"--isolate: cannot bring up loopback in the network namespace: {exc}")
        return
    reason = isolation.unavailable()
    if reason is None:
        sys.exit(isolation.run_isolated(["-m", "otel_replay.cli.main", *sys.argv[1:]]))
    click.echo(
        f"otel-replay: warning: --isolate: {reason}; only the in-process network guard applies "
        "(it cannot stop subprocesses or native code)",
        err=True,
    )


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
    metavar="'NAME: VALUE'",
    callback=_header,
    help="A header sent to the endpoint (repeatable; NAME=VALUE works too), added to "
    "OTEL_EXPORTER_OTLP_HEADERS.",
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
@click.option(
    "--read-header",
    "read_headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    callback=_read_header,
    expose_value=False,
    help="An HTTP header sent to every PATH that is a URL (repeatable; 'NAME: VALUE' or "
    "NAME=VALUE), never printed: -H before the command does the same, --header here is the "
    "endpoint's.",
)
@_verbose_option
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
    from ..otlp.errors import FormatError

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
    click.echo(f"sent {summary.spans} spans in {summary.batches} {batches} to {summary.endpoint}")
    if summary.left_out:
        spans = "span" if summary.left_out == 1 else "spans"
        click.echo(
            f"otel-replay: left out {summary.left_out} {spans} whose secrets could not be hidden",
            err=True,
        )
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
@_headers
@_verbose_option
def convert(inputs: tuple[str, ...], output: str, fmt: str | None, zstd: bool) -> None:
    """Convert stored spans and log records to a Collector dump format.

    IN is anything `show` reads (files, directories, globs, -, URLs; spans and
    logs).  Each request is written as the Collector's file exporter would
    have written it, batches and everything in them kept.  Input faults are
    reported after converting every good record, with exit 2.
    """
    from ..export.convert import convert as run
    from ..otlp.errors import FormatError

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
        f"converted {what} in {_count(summary.requests, 'request')} to {output} ({summary.format}"
        f"{', zstd' if zstd else ''}){blobs}",
        err=output == "-",
    )
    from ..runs.load import Runs

    _report_problems(Runs(problems=problems))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _positive(
    name: str, default: float, help: str, metavar: str = "SECONDS"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """An option taking a number above 0."""
    return click.option(
        name,
        type=click.FloatRange(min=0, min_open=True),
        default=default,
        show_default=True,
        metavar=metavar,
        help=help,
    )


@cli.command()
@_paths
@click.option("--run", "run_id", metavar="ID", help="Serve only the run whose id starts with ID.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="0: any free port."
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host is NAME (repeatable; 127.0.0.1, localhost, [::1] and "
    "--host always are).",
)
@click.option(
    "--match",
    type=click.Choice(MATCH_RUNGS),
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
@_positive(
    "--upstream-timeout",
    DEFAULT_LIMITS.upstream_timeout,
    "Give up on the upstream after this long without a byte.",
)
@click.option(
    "--mcp",
    "serve_mcp",
    is_flag=True,
    help="Also serve the run's recorded tool calls as an MCP server at BASE/mcp (needs one run).",
)
@_positive(
    "--max-body-mb",
    DEFAULT_LIMITS.max_body_bytes / 2**20,
    "Answer a larger request body with 413, unread.",
    "MB",
)
@_positive(
    "--header-timeout",
    DEFAULT_LIMITS.header_timeout,
    "Close a connection slower to send a request's headers.",
)
@click.option(
    "--max-conversations",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMITS.max_conversations,
    show_default=True,
    help="Conversations kept; past it the least recently used are forgotten.",
)
@_headers
@_verbose_option
def serve(
    paths: tuple[str, ...],
    run_id: str | None,
    host: str,
    port: int,
    allow_hosts: tuple[str, ...],
    match: str,
    speed: float | None,
    on_divergence: str,
    upstream: str | None,
    upstream_timeout: float,
    serve_mcp: bool,
    max_body_mb: float,
    header_timeout: float,
    max_conversations: int,
) -> None:
    """Serve recorded model responses over HTTP to real OpenAI and Anthropic clients.

    POST /v1/chat/completions and /v1/responses (OpenAI), /v1/messages
    (Anthropic), as JSON or SSE.  Prints the base URL when ready; point the
    OpenAI client at BASE/v1 and the Anthropic client at BASE.  A request
    that does not match the recording gets HTTP 409 with a JSON body naming
    the step.  A request body over --max-body-mb gets 413; slow or idle
    clients are cut off; forwarded calls are bounded in time and number.
    Web pages are refused: a Host that is not a loopback name, --host or
    --allow-host gets 421, another site's Origin 403, a body not sent as
    application/json 415.
    """
    if on_divergence == "live" and not upstream:
        _fail("--on-divergence live needs --upstream URL")
    runs = _load(paths, run_id)
    _report_problems(runs)
    from ..replay.adapters.server import base_url, bind, run_server
    from ..replay.adapters.server import upstream as forwarder
    from ..replay.divergence import ReplayError
    from ..replay.engine import ReplayEngine, servable
    from ..replay.server_limits import ServerLimits

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
        # Lines name recorded steps and tools: a trace's escape sequences shown, not obeyed.
        click.echo(f"otel-replay: {printable(line)}", err=True)

    limits = ServerLimits(
        max_body_bytes=int(max_body_mb * 2**20),
        header_timeout=header_timeout,
        upstream_timeout=upstream_timeout,
        max_conversations=max_conversations,
    )
    forward = None
    if on_divergence == "live" and upstream:
        forward = forwarder(upstream, limits.upstream_timeout, limits.max_upstream)
    try:
        engine = ReplayEngine(
            good,
            run_id=run_id,
            match=match,
            timing=speed,
            forward=forward,
            log=log,
            max_conversations=limits.max_conversations,
        )
    except ReplayError as exc:
        _fail(str(exc))
    try:
        sock = bind(host, port)
    except OSError as exc:
        _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    url = base_url(sock)
    mcp = None
    if serve_mcp:
        mcp = _mcp_app(good, run_id, (host, *allow_hosts), ", ".join(paths), log)
    click.echo(
        f"otel-replay: serving {len(good)} run(s) ({', '.join(r.run_id for r in good)}): "
        f"OpenAI base_url {url}/v1, Anthropic base_url {url}"
        + (f", MCP tools at {url}/mcp" if mcp is not None else ""),
        err=True,
    )
    click.echo(url)
    sys.stdout.flush()
    run_server(engine, sock, mcp, limits, (host, *allow_hosts))


def _mcp_app(
    runs: Sequence[Run],
    run_id: str | None,
    hosts: Sequence[str],
    where: str,
    log: Callable[[str], None],
) -> Any:
    """The MCP server of the one run served (``--mcp``)."""
    from ..replay.adapters.mcp_server import RecordedTools, mcp_app

    run = _pick(runs, run_id, where, "--run ID")
    try:
        return mcp_app(RecordedTools(run, log), hosts[0], hosts[1:])
    except ImportError:
        _fail("--mcp needs the mcp package: pip install 'otel-replay[mcp]'")


# Defined in its own module, given the options every reading command shares.
cli.add_command(_cohort_command(_paths, [_jobs, _headers, _verbose_option]))

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
