"""``otel-replay replay``: run the user's agent against a recorded run from the command line.

The agent is named ``MODULE:FUNC`` and called with the run's recorded input
(``FUNC(question, **kwargs)``) and, by the names of its parameters, what it
takes to reach the replay: ``model`` (the session's pinned model, the
convention of ``otel-replay regress``), ``base_url`` (the session's loopback
server, with ``/v1`` for an OpenAI recording), or ``client`` (an OpenAI or
Anthropic client, async for an async agent, pointed at it).  An agent that
takes none of them makes its clients itself: the provider variables
(``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``OPENAI_API_BASE``, and a
placeholder key where none is set) point them at the replay while it runs.
An async agent is run to completion.  The
selective-replay options of :func:`otel_replay.replay` are all there: a live
model (``MODULE:FUNC``, see :mod:`otel_replay.replay.selective`), ``--from N``,
``--override N=JSON``, ``--model live`` for the drift report.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import inspect
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..replay.divergence import ReplayDivergence
from ..replay.options import ReplayOptions
from ..replay.session import ReplayReport, ReplaySession, replay
from ..runs.model import Run
from .regress import RegressError, agent_kwargs, question_of

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def import_ref(ref: str) -> Callable[..., Any]:
    """The function ``MODULE:FUNC`` names (the current directory is importable, as for pytest)."""
    if not _REF.match(ref):
        raise RegressError(f"{ref!r} is not MODULE:FUNC (e.g. myapp.agent:run_agent)")
    module, _, name = ref.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise RegressError(f"{ref}: cannot import it ({exc})") from exc
    if not callable(fn):
        raise RegressError(f"{ref} is not callable")
    return fn  # type: ignore[no-any-return]


def overrides(pairs: Sequence[str]) -> dict[int, Any]:
    """``N=JSON`` pairs (a text VALUE that is not JSON is kept as text)."""
    out: dict[int, Any] = {}
    for pair in pairs:
        index, sep, raw = pair.partition("=")
        if not sep or not index.strip().isdigit():
            raise RegressError(f"--override {pair!r}: expected STEP=VALUE (VALUE as JSON)")
        try:
            out[int(index)] = json.loads(raw)
        except ValueError:
            out[int(index)] = raw
    return out


@dataclasses.dataclass
class Rerun:
    session: ReplaySession
    report: ReplayReport
    answer: Any
    error: BaseException | None


def rerun(
    run: Run,
    agent: str,
    *,
    kwargs: Sequence[str] = (),
    question: str | None = None,
    options: ReplayOptions | None = None,
) -> Rerun:
    """Replay ``run`` with the agent ``agent``; a divergence is in the report, not raised."""
    fn = import_ref(agent)
    args = agent_kwargs(run, kwargs)
    asked = question if question is not None else question_of(run)
    opts = options or ReplayOptions()
    session = replay(run, options=opts)
    answer: Any = None
    error: BaseException | None = None
    try:
        with session:
            answer = call_agent(fn, session, asked, args)
            if isinstance(answer, str) and opts.live_from is None and not opts.override:
                session.check_output(answer)
    except ReplayDivergence:
        pass  # in the report
    except Exception as exc:  # the agent's own failure: say it, do not hide the report
        error = exc
    return Rerun(session, session.report(), answer, error)


#: What an agent may take to reach the replay, by parameter name.
REACH = ("model", "base_url", "client")
#: Provider variables that point clients an agent makes itself at the replay.
_BASE_URL_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL")
_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def call_agent(
    fn: Callable[..., Any], session: ReplaySession, question: Any, kwargs: dict[str, Any]
) -> Any:
    """``fn(question, **kwargs)`` with what it takes to reach the replay (see the module)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    asynchronous = inspect.iscoroutinefunction(fn)
    anthropic = provider_of(session.run) == "anthropic"
    given: dict[str, Any] = {}
    if "model" in params:
        given["model"] = session.model
    if "base_url" in params:
        given["base_url"] = session.base_url if anthropic else session.base_url + "/v1"
    if "client" in params:
        given["client"] = _client(session, anthropic=anthropic, asynchronous=asynchronous)
    given.update(kwargs)
    environment = _provider_environment(session) if not set(REACH) & set(params) else {}
    with _environ(environment):
        answer = fn(question, **given)
        if inspect.isawaitable(answer):
            answer = asyncio.run(_awaited(answer))
    return answer


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def provider_of(run: Run) -> str:
    """``anthropic`` or ``openai``: the API the run's model calls were made to."""
    for step in run.model_steps():
        m = step.model
        raw_path = m.raw.path if m is not None and m.raw is not None else None
        if raw_path is not None:
            return "anthropic" if raw_path.rstrip("/").endswith("/messages") else "openai"
        provider = (step.attributes.get("gen_ai.provider.name") or "").lower()
        if provider:
            return "anthropic" if "anthropic" in provider else "openai"
    return "openai"


def _client(session: ReplaySession, *, anthropic: bool, asynchronous: bool) -> Any:
    if anthropic:
        import anthropic as sdk

        cls: Any = sdk.AsyncAnthropic if asynchronous else sdk.Anthropic
        return cls(api_key="unused", base_url=session.base_url)
    import openai

    cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return cls(api_key="unused", base_url=session.base_url + "/v1")


def _provider_environment(session: ReplaySession) -> dict[str, str]:
    env = {
        "OPENAI_BASE_URL": session.base_url + "/v1",
        "OPENAI_API_BASE": session.base_url + "/v1",
        "ANTHROPIC_BASE_URL": session.base_url,
    }
    for key in _KEY_VARIABLES:
        if not os.environ.get(key):
            env[key] = "unused-by-replay"
    return env


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
