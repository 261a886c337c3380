"""``otel-replay replay`` and ``otel-replay regress``: a recorded run replayed with the
user's agent, and a pytest test written that replays it.

Heavy modules (the replay session, the run model) are imported inside the commands,
marked ``lazy``, so that ``--help`` stays fast.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

import click

from .. import settings
from ..replay.options import FROM_MESSAGES, MODEL_MODES, TOOL_POLICIES
from ..trusted_types import TYPE_TRUSTS
from .loading import load_runs, pick, report_problems
from .options import agent_kwargs_option, agent_option, headers_option, run_option, verbose_option
from .output import REFUSED, dumps, fail
from .printable import printable

if TYPE_CHECKING:
    from ..replay.options import FromMessages, ModelMode, ToolPolicy
    from ..trusted_types import TypeTrust


@click.command()
@click.argument("path", metavar="PATH")
@run_option
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="FILE.py",
    help="The test file to write; the recording is copied beside it (FILE.otlp, its blobs).",
)
@agent_option
@agent_kwargs_option
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
@headers_option
@verbose_option
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
    it in anyway); a run whose trace lacks what the replay needs with exit 4,
    naming every item.
    """
    from ..commands.regress import RegressError, RunFailed, RunRefused, write_regression  # lazy

    runs = load_runs((path,), run_id)
    report_problems(runs)
    pick(runs, run_id, path, "--run ID")
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
    except (RunFailed, RunRefused) as exc:
        click.echo(f"otel-replay: error: {printable(str(exc), lines=True)}", err=True)
        sys.exit(REFUSED if isinstance(exc, RunRefused) else 1)
    except (RegressError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.filename or output}: {exc.strerror or exc}")
    click.echo(f"wrote {test} (run {runs[0].run_id}), recording {recording}")


@click.command(name="replay")
@click.argument("path", metavar="PATH")
@run_option
@agent_option
@agent_kwargs_option
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
@headers_option
@verbose_option
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
    replayed tool) is named, with exit 2.  A replay that cannot be exact (the
    trace lacks a tool's result, a model's answer, ... that it needs) is
    REFUSED, every item named, with exit 4: before the agent runs when the
    replay will certainly need the item (--tools live, --from and --override
    supply some), else at its step.
    """
    if isolate:
        _isolate()
    # The replay machinery (the session, the SDKs' transports): lazy.
    from ..commands.regress import RegressError
    from ..commands.rerun import import_ref, overrides, raised_as_recorded, rerun, unapplied
    from ..replay.divergence import ReplayError
    from ..replay.options import ReplayOptions
    from ..runs.verdict import outcome

    if (live_from is not None or model_mode != "pinned") and live_ref is None:
        fail("--from, --model live and --model candidate need --live MODULE:FUNC (your model)")
    runs = load_runs((path,), run_id)
    report_problems(runs)
    pick(runs, run_id, path, "--run ID")
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
        fail(str(exc))
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
        click.echo(dumps(doc))
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
    written = done.session.recorded_as
    if record_to is not None and written is not None:
        # Said as every -o is, with the diff that compares the two (on stderr beside --json).
        recording, replayed = printable(path), printable(record_to)
        click.echo(
            f"wrote the replayed run {written} to {replayed}; compare it with: "
            f"otel-replay diff '{recording}#{runs[0].run_id}' '{replayed}#{written}'",
            err=as_json,
        )
    ignored = unapplied(done)
    for line in ignored:
        click.echo(f"otel-replay: error: {printable(line)}", err=True)
    if ignored:
        sys.exit(2)
    if done.report.refusal is not None:
        sys.exit(REFUSED)
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
    from ..replay import isolation  # lazy, as the replay machinery is

    if isolation.isolated():
        try:
            isolation.loopback_up()
        except OSError as exc:
            fail(f"--isolate: cannot bring up loopback in the network namespace: {exc}")
        return
    reason = isolation.unavailable()
    if reason is None:
        sys.exit(isolation.run_isolated(["-m", "otel_replay.cli.main", *sys.argv[1:]]))
    click.echo(
        f"otel-replay: warning: --isolate: {reason}; only the in-process network guard applies "
        "(it cannot stop subprocesses or native code)",
        err=True,
    )
