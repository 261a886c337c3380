"""``otel-replay serve``: a run's recorded model answers served over HTTP to real
OpenAI and Anthropic clients (and its tool calls as an MCP server).

The engine and the server are imported inside the command, marked ``lazy``, so that
``--help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from ..extras import install_hint
from ..replay.options import MATCH_RUNGS
from ..replay.server_limits import DEFAULT_LIMITS, ServerLimits
from .loading import load_runs, pick, report_problems
from .options import headers_option, paths_argument, positive_option, verbose_option
from .output import fail
from .printable import printable

if TYPE_CHECKING:
    from ..runs.model import Run


@click.command()
@paths_argument
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
@positive_option(
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
@positive_option(
    "--max-body-mb",
    DEFAULT_LIMITS.max_body_bytes / 2**20,
    "Answer a larger request body with 413, unread.",
    "MB",
)
@positive_option(
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
@headers_option
@verbose_option
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
        fail("--on-divergence live needs --upstream URL")
    runs = load_runs(paths, run_id)
    report_problems(runs)
    # The engine and the server: lazy.
    from ..commands.serve import ServeOptions, engine_for, served
    from ..replay.adapters.uvicorn_server import base_url, bind, run_server
    from ..replay.divergence import ReplayError

    good, reasons = served(runs)
    for reason in reasons:
        click.echo(f"otel-replay: warning: {reason}", err=True)
    if not good:
        fail(f"no run in {', '.join(paths)} has model responses to serve")

    def log(line: str) -> None:
        # Lines name recorded steps and tools: a trace's escape sequences shown, not obeyed.
        # Written to stderr itself, not by click.echo, which looks for its stream and strips
        # colours by a regular expression anew for every line (a request's cost): printable
        # leaves no escape sequence to strip, and stderr writes any text (backslashreplace).
        stderr = sys.stderr
        if stderr is not None:  # (none: a process with no standard streams)
            stderr.write(f"otel-replay: {printable(line)}\n")
            stderr.flush()

    limits = ServerLimits(
        max_body_bytes=int(max_body_mb * 2**20),
        header_timeout=header_timeout,
        upstream_timeout=upstream_timeout,
        max_conversations=max_conversations,
    )
    forward_to = upstream if on_divergence == "live" else None
    options = ServeOptions(run_id, match, speed, forward_to, limits)
    try:
        engine = engine_for(good, options, log)
    except ReplayError as exc:
        fail(str(exc))
    try:
        sock = bind(host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    url = base_url(sock)
    mcp = None
    if serve_mcp:
        mcp = _mcp_app(good, run_id, (host, *allow_hosts), ", ".join(paths), log)

    def ready() -> None:
        # Said once the server is set up: a client that waits for the URL is answered at once.
        click.echo(
            f"otel-replay: serving {len(good)} run(s) ({', '.join(r.run_id for r in good)}): "
            f"OpenAI base_url {url}/v1, Anthropic base_url {url}"
            + (f", MCP tools at {url}/mcp" if mcp is not None else ""),
            err=True,
        )
        click.echo(url)
        sys.stdout.flush()

    run_server(engine, sock, mcp, limits, (host, *allow_hosts), ready)


def _mcp_app(
    runs: Sequence[Run],
    run_id: str | None,
    hosts: Sequence[str],
    where: str,
    log: Callable[[str], None],
) -> Any:
    """The MCP server of the one run served (``--mcp``)."""
    from ..replay.adapters.mcp_server import RecordedTools, mcp_app  # the MCP server: lazy

    run = pick(runs, run_id, where, "--run ID")
    try:
        return mcp_app(RecordedTools(run, log), hosts[0], hosts[1:])
    except ImportError:
        fail(f"--mcp needs the mcp package: {install_hint('mcp')}")
