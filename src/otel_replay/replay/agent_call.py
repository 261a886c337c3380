"""How a replay calls the user's agent: one definition for ``otel-replay replay --agent``
and the tests ``otel-replay regress`` writes.

``call_agent(agent, session, question, **kwargs)`` calls
``agent(question, **kwargs)`` and gives it, by the names of its parameters,
what it takes to reach the replay:

- ``model``: the session's pinned model (``session.model``), unless that
  parameter takes a model's *name* (annotated ``str`` or ``str | None``, or
  with a text default, as in ``model="gpt-4o-mini"``): it keeps its default
  (without one, it is given the recorded model's name), and the agent reaches
  the replay by one of the others or the variables below;
- ``base_url``: the session's loopback server (with ``/v1`` for an OpenAI
  recording, bare for an Anthropic one);
- ``client``: an OpenAI or Anthropic client (the recording's provider),
  async for an async agent, pointed at that server.

An agent that takes none of them makes its clients itself: the provider
variables (``OPENAI_BASE_URL``, ``OPENAI_API_BASE``, ``ANTHROPIC_BASE_URL``,
and a placeholder key where none is set) point them at the replay while it
runs.  Where no provider key is set, a placeholder is, for the clients an
agent makes itself (the SDKs refuse to make one without).  An async agent
is run to completion, and a client given to it is closed in its loop.

Every replay option (``live``, ``live_from``, ``override``,
``model="live"``) applies whichever way the agent reaches the model: the
server and transports answer through the session's pinned model and its plan.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, get_args

if TYPE_CHECKING:
    from ..runs.model import Run
    from .session import ReplaySession

#: What an agent may take to reach the replay, by parameter name.
REACH = ("model", "base_url", "client")
_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def call_agent(
    agent: Callable[..., Any], session: ReplaySession, question: Any, /, **kwargs: Any
) -> Any:
    """``agent(question, **kwargs)``, given what it takes to reach ``session`` (see the module).

    Call it inside the session's ``with`` block (the pytest marker's
    ``otel_replay_session`` is inside it).  A keyword in ``kwargs`` wins over
    what the replay would give under the same name.
    """
    try:
        params = inspect.signature(agent).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    asynchronous = inspect.iscoroutinefunction(agent)
    anthropic = provider_of(session.run) == "anthropic"
    reach = {name for name in REACH if name in params}
    given: dict[str, Any] = {}
    if "model" in params and takes_model_name(params["model"]):
        reach.discard("model")  # a model's name: the pinned model would reach the SDK as one
        if params["model"].default is inspect.Parameter.empty and "model" not in kwargs:
            given["model"] = recorded_model(session.run)
    if "model" in reach and "model" not in kwargs:
        given["model"] = session.model
    if "base_url" in params and "base_url" not in kwargs:
        given["base_url"] = session.base_url if anthropic else session.base_url + "/v1"
    client = None
    if "client" in params and "client" not in kwargs:
        client = given["client"] = _client(session, anthropic=anthropic, asynchronous=asynchronous)
    given.update(kwargs)
    # An agent given a base URL makes its client too, and the SDKs refuse to make one
    # without a key: a placeholder where none is set (the replay needs none).
    environment = {k: "unused-by-replay" for k in _KEY_VARIABLES if not os.environ.get(k)}
    if not reach:
        environment.update(_provider_environment(session))
    with _environ(environment):
        try:
            answer = agent(question, **given)
            if inspect.isawaitable(answer):
                answer = asyncio.run(_awaited(answer, client))
                client = None
        finally:
            if client is not None:
                client.close()
    return answer


#: A text annotation spelling ``str`` or an optional ``str`` (``from __future__ import
#: annotations`` leaves every annotation as its text).
_TEXT_ANNOTATION = re.compile(
    r"\s*(?:(?:typing\.)?Optional\[\s*str\s*\]|str\s*(?:\|\s*None\s*)?|None\s*\|\s*str)\s*"
)


def takes_model_name(param: inspect.Parameter) -> bool:
    """Whether an agent's ``model`` parameter takes the name of a model (``model:
    str``, ``model: str | None = None``, ``model="gpt-4o-mini"``) rather than a model
    to call: given the pinned model, such an agent would send it to its SDK as a name."""
    if isinstance(param.default, str):
        return True
    annotation = param.annotation
    if isinstance(annotation, str):
        # A quoted annotation under ``from __future__ import annotations`` keeps its quotes.
        return _TEXT_ANNOTATION.fullmatch(annotation.strip().strip("'\"")) is not None
    if annotation is str:
        return True
    args = set(get_args(annotation))
    return str in args and args <= {str, type(None)}


async def _awaited(awaitable: Any, client: Any) -> Any:
    """The agent's answer, and the async client given to it closed in the same loop (closed
    after the loop is gone, its connections would complain)."""
    try:
        return await awaitable
    finally:
        if client is not None:
            await client.close()


def recorded_model(run: Run) -> str | None:
    """The model the run's first model call asked for, by name (None: none recorded)."""
    for step in run.model_steps():
        if step.model is not None and step.model.request_model:
            return step.model.request_model
    return None


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
        # optional: the agent's own SDK
        import anthropic as sdk

        cls: Any = sdk.AsyncAnthropic if asynchronous else sdk.Anthropic
        return cls(api_key="unused", base_url=session.base_url)
    # optional: the agent's own SDK
    import openai

    cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return cls(api_key="unused", base_url=session.base_url + "/v1")


def _provider_environment(session: ReplaySession) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": session.base_url + "/v1",
        "OPENAI_API_BASE": session.base_url + "/v1",
        "ANTHROPIC_BASE_URL": session.base_url,
    }


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
