"""The options the commands share, defined once: the paths read, ``--run``, ``--trace``,
``--jobs``, ``-H`` (after the command too), ``--verbose``, the agent a replay calls, and
numbers that must be above 0."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


def _verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta["otel_replay.verbose"] = set()  # the inputs listed so far


#: ``--verbose`` on every command that reads folders.
verbose_option = click.option(
    "--verbose",
    "-v",
    is_flag=True,
    callback=_verbose,
    expose_value=False,
    help="List each file and folder a folder or pattern given held that was not read, with "
    "why (by default one line counts the files read that held no trace data).",
)


def verbose_inputs() -> set[str] | None:
    """Under ``--verbose``, the inputs whose passed-over files are listed already."""
    ctx = click.get_current_context(silent=True)
    listed: set[str] | None = ctx.meta.get("otel_replay.verbose") if ctx is not None else None
    return listed


def parse_headers(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, str]:
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


def read_headers(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> None:
    """``-H`` before or after the subcommand: the headers of every URL read, those given
    after it added to those given before."""
    headers = parse_headers(ctx, param, values)
    if not headers:
        return
    given = ctx.meta.setdefault("otel_replay.headers", {})  # one dict for the whole line
    given.update(headers)
    from ..sources import download  # http.client and the like: for URLs only

    download.use_headers(given)


#: Help of ``-H``, before the subcommand and after it.
HEADER_HELP = (
    "An HTTP header sent with every URL read (repeatable), e.g. 'Authorization: Bearer ...' "
    "or 'X-Scope-OrgID: acme' (NAME=VALUE works too; also OTEL_REPLAY_HTTP_HEADERS); never "
    "printed."
)


paths_argument = click.argument("paths", nargs=-1, required=True, metavar="PATH...")
#: ``-H`` after the subcommand, on every command that reads URLs.
headers_option = click.option(
    "--header",
    "-H",
    "read_headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    callback=read_headers,
    expose_value=False,
    help=HEADER_HELP,
)
run_option = click.option(
    "--run", "run_id", metavar="ID", help="Only the run whose id starts with ID."
)
jobs_option = click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes reading a big dump [default: the CPU count over 64 MB, else 1].",
)
trace_option = click.option(
    "--trace",
    "trace_id",
    metavar="ID",
    help="Only the trace whose id starts with ID (a big dump is read through its index).",
)


#: The user's agent, as regress and replay call it.
agent_option = click.option(
    "--agent",
    "agent_ref",
    required=True,
    metavar="MODULE:FUNC",
    help="Your agent, called as FUNC(question, **kwargs) and given, by the names of its "
    "parameters, model= (the pinned model; a model= that takes a name, annotated str or "
    "with a text default, keeps that default, else gets the recorded name), base_url= (the "
    "replay's loopback server), or "
    "client= (an OpenAI or Anthropic client, async for an async FUNC, pointed at it); with "
    "none of them, the clients it makes itself reach the replay through OPENAI_BASE_URL and "
    "ANTHROPIC_BASE_URL. An async FUNC is run to completion.",
)
agent_kwargs_option = click.option(
    "--kwarg",
    "kwargs",
    multiple=True,
    metavar="NAME=VALUE",
    help="A keyword argument for the agent: VALUE as JSON, else text; @FIELD takes a field of "
    "the recorded fingerprint (user_id=@user.id). Repeatable.",
)


def positive_option(
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
