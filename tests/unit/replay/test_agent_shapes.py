"""Every way an agent takes its model, replayed the same way, with every replay option.

A newcomer's agent (``_weather_agent``: the OpenAI or Anthropic SDK, two
tools) is recorded through ``RecordingTransport`` against a model server on
127.0.0.1, then replayed through :func:`otel_replay.call_agent` in each shape:
``client=``, ``base_url=``, a client it makes from the provider variables,
``model=``; sync and async.  Each selective-replay option must take effect in
every shape: an override of a model answer or of a tool result, ``live_from``
and ``model="live"`` (an agent reaching the model over HTTP used to get the
recording whatever the option said).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from tests.fixtures.weather_agent import (
    FINAL,
    PROVIDERS,
    QUESTION,
    import_agent,
    record,
    shape_cases,
    write_agent,
)

pytest.importorskip("anthropic")

OPTIONS = ("override_answer", "override_tool", "live_from", "model_live")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    """Per provider: the recorded run's file and the agent module."""
    out = {}
    for provider in PROVIDERS:
        directory = tmp_path_factory.mktemp(provider)
        module = import_agent(write_agent(directory, provider))
        path = directory / "runs.otlp"
        assert record(path, module, provider) == FINAL
        out[provider] = (path, module)
    return out


def replayed(
    recorded: dict[str, tuple[Path, Any]], provider: str, entry: str, **options: Any
) -> tuple[Any, otel_replay.ReplaySession, BaseException | None]:
    """The agent's answer (None when it raised), its session, and the error raised."""
    path, module = recorded[provider]
    session = otel_replay.replay(path, **options)
    answer, error = None, None
    try:
        with session:
            answer = otel_replay.call_agent(getattr(module, entry), session, QUESTION)
    except Exception as exc:  # the test says which it expects
        error = exc
    return answer, session, error


@pytest.mark.parametrize(("provider", "entry"), shape_cases((None,)))
def test_every_shape_replays_the_recording(
    recorded: dict[str, tuple[Path, Any]], provider: str, entry: str
) -> None:
    answer, session, error = replayed(recorded, provider, entry)
    assert error is None and answer == FINAL
    assert session.report().matched
    assert [name for name, _ in session.tool_calls] == ["get_weather", "get_time"]


def live_model(answers: list[str]) -> Callable[..., Any]:
    """A live model that answers in text, counting what it was asked."""

    def live(messages: Any, *, system: Any = None, tools: Any = None, **params: Any) -> str:
        answers.append(params.get("model") or "")
        return "live: nothing to add"

    return live


@pytest.mark.parametrize(("provider", "entry", "option"), shape_cases(OPTIONS))
def test_every_option_applies_in_every_shape(
    recorded: dict[str, tuple[Path, Any]], provider: str, entry: str, option: str
) -> None:
    asked: list[str] = []
    live = live_model(asked)
    if option == "override_answer":  # the last model step answers otherwise
        answer, session, error = replayed(
            recorded, provider, entry, override={5: "Overridden: it rains in Paris."}
        )
        assert error is None, error
        assert answer == "Overridden: it rains in Paris."
        assert session.plan.forked
    elif option == "override_tool":  # get_weather's result changes: the model is asked live
        answer, session, error = replayed(
            recorded,
            provider,
            entry,
            override={2: {"city": "Paris", "temperature_c": -5, "sky": "snow"}},
            live=live,
        )
        assert error is None, error
        assert answer == "live: nothing to add"
        assert asked  # the request after the fork went to the live model
    elif option == "live_from":  # the model runs live from step 3 on
        answer, session, error = replayed(recorded, provider, entry, live_from=3, live=live)
        assert error is None, error
        assert answer == "live: nothing to add"
        assert session.plan.gone_live and len(asked) == 1
        assert [name for name, _ in session.tool_calls] == ["get_weather"]
    else:  # every recorded request is also sent to the live model, pinned
        answer, session, error = replayed(recorded, provider, entry, model="live", live=live)
        assert error is None, error
        assert answer == FINAL  # the agent is served the recording
        assert [e.index for e in session.drift.entries] == [1, 3, 5]
        assert all(not e.same for e in session.drift.entries)
        assert set(asked) == {"gpt-4o-mini" if provider == "openai" else "claude-3-5-haiku-latest"}
