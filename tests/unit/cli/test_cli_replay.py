"""``otel-replay replay``: the user's agent against a recording, from the command line.

The worked example's case file and agent; the "live" model is the example's
scripted model (deterministic, no network), named by ``--live``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.cli import cli_run
from tests.fixtures.data import ROOT
from tests.fixtures.lost_parts import without
from tests.fixtures.weather_agent import (
    FINAL,
    PROVIDERS,
    import_agent,
    record,
    shape_cases,
    write_agent,
)

CASE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
AGENT = "examples.order_support.agent:run_agent"

LIVE = """\
from examples.order_support.scripted_model import ScriptedModel

asked = []


def model(messages, **params):
    asked.append(params.get("model"))
    return ScriptedModel().respond(messages, **params)
"""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copy(CASE, tmp_path / "case.otlp")
    (tmp_path / "mylive.py").write_text(LIVE)
    return tmp_path


def otel_replay(cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it in their project directory (in this process: what
    the replay does is tested here, not its process)."""
    return cli_run(*args, cwd=cwd)


def test_the_recorded_run_replays(workdir: Path) -> None:
    done = otel_replay(
        workdir, "replay", "case.otlp", "--agent", AGENT, "--kwarg", "user_id=@user.id"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MATCHED — 3 of 3 recorded model/tool steps replayed" in done.stdout
    assert "answer: Order #4421 (Widget Pro) is shipped." in done.stdout


def test_the_fix_diverges_exit_1(workdir: Path) -> None:
    done = otel_replay(
        workdir,
        "replay",
        "case.otlp",
        "--agent",
        AGENT,
        "--kwarg",
        "user_id=@user.id",
        "--kwarg",
        "fixed=true",
        "--json",
    )
    assert done.returncode == 1
    report = json.loads(done.stdout)["report"]
    assert not report["matched"] and report["divergence"]["index"] == 2


def test_from_step_n_the_fixed_tool_and_the_model_run_live(workdir: Path) -> None:
    done = otel_replay(
        workdir,
        "replay",
        "case.otlp",
        "--agent",
        AGENT,
        "--kwarg",
        "user_id=@user.id",
        "--kwarg",
        "fixed=true",
        "--from",
        "2",
        "--live",
        "mylive:model",
        "-o",
        "live.otlp",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer: Order #4430 (Widget Mini) is processing." in done.stdout
    assert "live from step 2" in done.stdout
    diff = otel_replay(workdir, "diff", "case.otlp", "live.otlp", "--no-timing")
    assert diff.returncode == 1
    assert "first divergence: A step 2 (tool lookup_order" in diff.stdout
    assert "result:" in diff.stdout  # the live lookup found the user's own order only


def test_override_forks_the_run(workdir: Path) -> None:
    done = otel_replay(
        workdir,
        "replay",
        "case.otlp",
        "--agent",
        AGENT,
        "--kwarg",
        "user_id=@user.id",
        "--override",
        "2=[]",
        "--live",
        "mylive:model",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "forked at step 2" in done.stdout
    assert "answer: I could not find an order for you" in done.stdout


def test_model_live_prints_the_drift(workdir: Path) -> None:
    done = otel_replay(
        workdir,
        "replay",
        "case.otlp",
        "--agent",
        AGENT,
        "--kwarg",
        "user_id=@user.id",
        "--model",
        "live",
        "--live",
        "mylive:model",
        "--json",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    drift = json.loads(done.stdout)["drift"]["entries"]
    # The scripted model answers as it did when the case was recorded (call ids aside).
    assert [(e["index"], e["same"]) for e in drift] == [(1, True), (3, True)]


def test_bad_usage(workdir: Path) -> None:
    no_live = otel_replay(workdir, "replay", "case.otlp", "--agent", AGENT, "--from", "2")
    assert no_live.returncode == 2 and "need --live" in no_live.stderr
    missing = otel_replay(workdir, "replay", "case.otlp", "--agent", "nosuch.module:run")
    assert missing.returncode == 2 and "nosuch.module:run: cannot import it" in missing.stderr
    bad = otel_replay(workdir, "replay", "case.otlp", "--agent", AGENT, "--override", "x=1")
    assert bad.returncode == 2 and "expected STEP=VALUE" in bad.stderr


PARCELS = """\
import dataclasses
from typing import Any

import otel_replay


@dataclasses.dataclass
class Parcel:
    parcel_id: str


@otel_replay.tool
def find(parcel_id: str) -> Any:  # no annotation that names the class
    return Parcel(parcel_id)


def agent(question, model=None):
    found = find("P-1")
    return f"{type(found).__name__} {found}"
"""


def test_type_trust_imported_rebuilds_the_agent_s_own_classes(tmp_path: Path) -> None:
    (tmp_path / "parcels.py").write_text(PARCELS)
    record = (
        "import otel_replay, parcels\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "p = TracerProvider()\n"
        "p.add_span_processor(otel_replay.ReplaySpanProcessor())\n"
        "p.add_span_processor(otel_replay.RecordingSpanProcessor("
        "otel_replay.FileSpanExporter('parcels.otlp')))\n"
        "otel_replay.use_tracer_provider(p)\n"
        "with otel_replay.agent_run('parcels', input='where?') as run:\n"
        "    run.record(parcels.agent('where?'))\n"
        "p.shutdown()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")])}
    subprocess.run([sys.executable, "-c", record], cwd=tmp_path, env=env, check=True, timeout=60)
    plain = otel_replay(tmp_path, "replay", "parcels.otlp", "--agent", "parcels:agent")
    assert "answer: dict {'parcel_id': 'P-1'}" in plain.stdout, plain.stdout + plain.stderr
    assert "parcels:Parcel (dataclass) handed back as plain JSON" in plain.stdout
    trusted = otel_replay(
        tmp_path, "replay", "parcels.otlp", "--agent", "parcels:agent", "--type-trust", "imported"
    )
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    assert "answer: Parcel Parcel(parcel_id='P-1')" in trusted.stdout


AGENTS = """\
import openai

import otel_replay
from examples.client_only.agent import lookup_order, run_agent

tool = otel_replay.tool(lookup_order)


def with_base_url(question, base_url):
    return run_agent(openai.OpenAI(api_key="unused", base_url=base_url), tool)


def with_client(question, client):
    return run_agent(client, tool)


async def with_async_client(question, client):
    reply = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content


def with_nothing(question):
    return run_agent(openai.OpenAI(), tool)  # its base URL and key from the environment
"""


@pytest.mark.parametrize(
    "agent",
    [
        "with_base_url",
        pytest.param("with_client", marks=pytest.mark.slow),
        pytest.param("with_nothing", marks=pytest.mark.slow),
    ],
)
def test_agents_that_take_a_base_url_a_client_or_nothing(tmp_path: Path, agent: str) -> None:
    pytest.importorskip("openinference.instrumentation.openai")
    from examples.client_only.agent import record

    record(tmp_path / "run.otlp", decorate=True)  # an OpenAI SDK loop, its tool decorated
    (tmp_path / "replayed_agents.py").write_text(AGENTS)
    done = otel_replay(
        tmp_path, "replay", "run.otlp", "--agent", f"replayed_agents:{agent}", "--json"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert doc["report"]["matched"] and doc["answer"] == "ORD-5521 is processing."
    assert [k for _, k, _ in map(dict.values, doc["report"]["replayed"])] == [
        "model",
        "tool",
        "model",
    ]


UNDECLARED = """\
import openai

import otel_replay
from examples.client_only.agent import lookup_order, run_agent


@otel_replay.tool(name="lookup_order")
def lookup(order_id):  # no return annotation: the trace cannot say what it returned
    return lookup_order(order_id)


def agent(question, base_url):
    return run_agent(openai.OpenAI(api_key="unused", base_url=base_url), lookup)
"""


def test_a_result_known_only_as_sent_text_is_refused_unless_told(tmp_path: Path) -> None:
    """A client-only trace (no tool span): the loop sends json.dumps(result), so the text the
    model was sent is JSON, the tool's value or that text; refused naming the step, unless
    --results-from-messages says how the agent sends results."""
    pytest.importorskip("openinference.instrumentation.openai")
    from examples.client_only.agent import record

    record(tmp_path / "run.otlp", decorate=False)
    (tmp_path / "undeclared.py").write_text(UNDECLARED)
    args = ("replay", "run.otlp", "--agent", "undeclared:agent", "--json")
    refused = otel_replay(tmp_path, *args)
    assert refused.returncode == 4, refused.stdout + refused.stderr
    said = json.loads(refused.stdout)["report"]
    assert said["verdict"] == "refused" and said["refused_before_run"] is False
    (item,) = said["refused"]
    assert item["kind"] == "result_as_sent" and "(tool lookup_order" in item["what"]
    assert "only the text the model was sent" in item["what"]
    told = otel_replay(tmp_path, *args, "--results-from-messages", "json")
    assert told.returncode == 0, told.stdout + told.stderr
    doc = json.loads(told.stdout)
    assert doc["report"]["matched"] and doc["answer"] == "ORD-5521 is processing."
    assert any("value of the JSON text the model was sent" in n for n in doc["report"]["notes"])


@pytest.mark.slow
def test_an_agent_that_asks_something_else_diverges_loudly(tmp_path: Path) -> None:
    pytest.importorskip("openinference.instrumentation.openai")
    from examples.client_only.agent import record

    record(tmp_path / "run.otlp", decorate=True)
    (tmp_path / "replayed_agents.py").write_text(AGENTS)
    done = otel_replay(
        tmp_path, "replay", "run.otlp", "--agent", "replayed_agents:with_async_client", "--json"
    )
    assert done.returncode == 1
    report = json.loads(done.stdout)["report"]
    assert not report["matched"] and report["divergence"]["index"] is not None


# --- a newcomer's own agent, every way it takes the model ------------------------------------
WEATHER_LIVE = """\
def model(messages, **params):
    return "live: nothing to add"
"""

#: Each option as given on the command line, and what the replay must show of it.
OPTION_ARGS = {
    "override_answer": ["--override", '5="Overridden: it rains in Paris."'],
    "override_tool": [
        "--override",
        '2={"city": "Paris", "temperature_c": -5, "sky": "snow"}',
        "--live",
        "mylive:model",
    ],
    "live_from": ["--from", "3", "--live", "mylive:model"],
    "model_live": ["--model", "live", "--live", "mylive:model"],
}


@pytest.fixture(scope="module")
def weather_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per provider: a directory holding the agent, the live model and the recorded run."""
    out = {}
    for provider in PROVIDERS:
        directory = tmp_path_factory.mktemp(f"weather-{provider}")
        module = import_agent(write_agent(directory, provider))
        assert record(directory / "runs.otlp", module, provider) == FINAL
        (directory / "mylive.py").write_text(WEATHER_LIVE)
        out[provider] = directory
    return out


@pytest.mark.parametrize(
    ("provider", "entry", "option"), shape_cases(tuple(OPTION_ARGS), quick="one")
)
def test_every_option_applies_whichever_way_the_agent_takes_the_model(
    weather_runs: dict[str, Path], provider: str, entry: str, option: str
) -> None:
    cwd = weather_runs[provider]
    done = otel_replay(
        cwd,
        "replay",
        "runs.otlp",
        "--agent",
        f"weather_agent:{entry}",
        *OPTION_ARGS[option],
        "--json",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    if option == "override_answer":
        assert doc["answer"] == "Overridden: it rains in Paris."
        assert "forked at step 5" in doc["report"]["notes"]
    elif option == "override_tool":
        assert doc["answer"] == "live: nothing to add"
        assert "forked at step 2" in doc["report"]["notes"]
    elif option == "live_from":
        assert doc["answer"] == "live: nothing to add"
        assert "live from step 3" in doc["report"]["notes"]
    else:
        assert doc["answer"] == FINAL
        assert [e["index"] for e in doc["drift"]["entries"]] == [1, 3, 5]


@pytest.mark.parametrize("step", [2, 4])
def test_an_override_the_agent_goes_past_is_named_exit_2(
    weather_runs: dict[str, Path], step: int
) -> None:
    """The agent calls its tools directly (no @otel_replay.tool): an override of a tool
    step cannot apply, and the command says so rather than replaying as if it had."""
    cwd = weather_runs["openai"]
    source = (cwd / "weather_agent.py").read_text().replace("@otel_replay.tool\n", "")
    (cwd / "plain_agent.py").write_text(source)
    done = otel_replay(
        cwd, "replay", "runs.otlp", "--agent", "plain_agent:run_agent", "--override", f"{step}=[]"
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"--override {step}: the replay went past step {step} (tool get_" in done.stderr
    assert "record it with @otel_replay.tool" in done.stderr


def test_from_past_the_last_step_is_named_exit_2(weather_runs: dict[str, Path]) -> None:
    cwd = weather_runs["openai"]
    done = otel_replay(
        cwd,
        "replay",
        "runs.otlp",
        "--agent",
        "weather_agent:run_agent",
        "--from",
        "9",
        "--live",
        "mylive:model",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--from 9: the replay never reached step 9 (the run has 6 steps)" in done.stderr


def test_help_names_every_way_the_agent_is_called(workdir: Path) -> None:
    done = otel_replay(workdir, "replay", "--help")
    text = " ".join(done.stdout.split())
    for way in ("model=", "base_url=", "client=", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "async"):
        assert way in text, way


ENTERED = """\
import pathlib

from examples.order_support.agent import run_agent as _run_agent


def run_agent(question, *, model, user_id):
    pathlib.Path("entered").write_text("yes")
    return _run_agent(question, model=model, user_id=user_id)
"""


def test_a_recording_that_lacks_what_the_replay_needs_is_refused_exit_4(workdir: Path) -> None:
    """Refused, not diverged: before the agent runs (nothing it does happens), naming the
    step and what is missing; a live tool supplies the result, and the replay runs."""
    lost = without(
        workdir / "case.otlp",
        workdir / "lost.otlp",
        "gen_ai.tool.call.result",
        lambda name: name.startswith("execute_tool"),
    )
    assert lost == 1
    (workdir / "entered_agent.py").write_text(ENTERED)
    args = [
        "replay",
        "lost.otlp",
        "--agent",
        "entered_agent:run_agent",
        "--kwarg",
        "user_id=@user.id",
    ]
    done = otel_replay(workdir, *args)
    assert done.returncode == 4, done.stdout + done.stderr
    head, said = done.stdout.splitlines()[:2]
    assert "REFUSED — the trace lacks 1 item(s) the replay needs; the agent was not run" in head
    assert "DIVERGED" not in done.stdout
    assert said.startswith("  refused: step 2 (tool lookup_order") and said.endswith(
        "no result was recorded for this tool call"
    )
    assert not (workdir / "entered").exists()

    done = otel_replay(workdir, *args, "--json")
    assert done.returncode == 4, done.stdout + done.stderr
    report = json.loads(done.stdout)["report"]
    assert report["verdict"] == "refused" and report["refused_before_run"] is True
    assert [(r["index"], r["kind"]) for r in report["refused"]] == [(2, "no_result")]
    assert report["replayed"] == [] and not (workdir / "entered").exists()

    done = otel_replay(workdir, *args, "--tools", "live")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MATCHED — 3 of 3 recorded model/tool steps replayed" in done.stdout
    assert (workdir / "entered").exists()
