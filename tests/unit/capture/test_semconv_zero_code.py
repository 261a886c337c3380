"""Zero code: under opentelemetry-instrument, every configured exporter sends the added GenAI attributes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from otel_replay.sources.reader import SpanReader

#: Spans as OpenInference writes them for one chat call (no gen_ai.* at all).
AGENT = textwrap.dedent(
    """
    from opentelemetry import trace

    tracer = trace.get_tracer("openinference.instrumentation.openai", "0.1.66")
    with tracer.start_as_current_span("ChatCompletion") as span:
        span.set_attributes({
            "openinference.span.kind": "LLM",
            "llm.provider": "openai",
            "llm.system": "openai",
            "llm.model_name": "gpt-4o-mini",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Where is ORD-5521?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "It shipped.",
        })
    print("done")
    """
)


def run_instrumented(
    tmp_path: Path, script: str = AGENT, **env: str
) -> subprocess.CompletedProcess[str]:
    found = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    if found is None:
        pytest.fail("opentelemetry-instrument is not installed (the test extra installs it)")
    path = tmp_path / "agent.py"
    path.write_text(script)
    full_env = {
        **os.environ,
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_REPLAY_FILE": str(tmp_path / "runs.otlp"),
        **env,
    }
    done = subprocess.run(
        [found, sys.executable, str(path)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def console_spans(stdout: str) -> list[dict[str, object]]:
    """The ConsoleSpanExporter's JSON documents in ``stdout``."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while (i := stdout.find("{", i)) >= 0:
        doc, i = decoder.raw_decode(stdout, i)
        out.append(doc)
    return out


@pytest.mark.slow  # a real process under opentelemetry-instrument: the slow tier
def test_file_and_console_exporters_both_get_genai_attributes(tmp_path: Path) -> None:
    done = run_instrumented(tmp_path, OTEL_TRACES_EXPORTER="console,otel_replay_file")
    (record,) = SpanReader(tmp_path / "runs.otlp")
    a = record.attributes
    assert a["llm.model_name"] == "gpt-4o-mini"  # the original stays
    assert a["gen_ai.request.model"] == "gpt-4o-mini"
    assert a["gen_ai.operation.name"] == "chat"
    assert json.loads(a["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Where is ORD-5521?"}]}
    ]
    (shown,) = console_spans(done.stdout)
    attrs = shown["attributes"]
    assert isinstance(attrs, dict)
    assert attrs["gen_ai.input.messages"] == a["gen_ai.input.messages"]
    assert attrs["llm.model_name"] == "gpt-4o-mini"


@pytest.mark.slow  # a real process under opentelemetry-instrument: the slow tier
def test_switched_off_by_one_variable(tmp_path: Path) -> None:
    done = run_instrumented(
        tmp_path, OTEL_TRACES_EXPORTER="console,otel_replay_file", OTEL_REPLAY_SEMCONV="false"
    )
    (record,) = SpanReader(tmp_path / "runs.otlp")
    assert not any(k.startswith("gen_ai.") for k in record.attributes)
    (shown,) = console_spans(done.stdout)
    attrs = shown["attributes"]
    assert isinstance(attrs, dict)
    assert not any(k.startswith("gen_ai.") for k in attrs)


@pytest.mark.slow  # a real process under opentelemetry-instrument: the slow tier
def test_sdk_disabled_turns_the_hook_and_the_framework_patches_off(tmp_path: Path) -> None:
    """``OTEL_SDK_DISABLED=true`` wins over every otel-replay variable."""
    probe = textwrap.dedent(
        """
        from opentelemetry import trace
        from pydantic_ai.toolsets.function import FunctionToolset

        provider = trace.get_tracer_provider()
        print("installed", getattr(provider, "_otel_replay_installed", False))
        print("patched", bool(getattr(FunctionToolset.call_tool, "__otel_replay_wrapped__", None)))
        """
    )
    env = {"OTEL_TRACES_EXPORTER": "console,otel_replay_file", "OTEL_REPLAY_PROCESSOR": "true"}
    on = run_instrumented(tmp_path, script=probe, **env)
    assert "installed True" in on.stdout and "patched True" in on.stdout
    off = run_instrumented(tmp_path, script=probe, OTEL_SDK_DISABLED="true", **env)
    assert "installed False" in off.stdout and "patched False" in off.stdout


def test_sdk_disabled_leaves_the_frameworks_unpatched(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic_ai.toolsets.function import FunctionToolset

    import otel_replay

    before = FunctionToolset.call_tool
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert otel_replay.instrument_pydantic_ai() is False
    assert otel_replay.instrument_openai_agents() is False
    assert FunctionToolset.call_tool is before
