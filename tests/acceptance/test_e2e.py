"""End to end, each stage in its own process: record -> file -> show --json -> replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.fixtures.data import ROOT

AGENT = textwrap.dedent(
    """
    import json, sys
    import otel_replay
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    VERSION = sys.argv[2]

    @otel_replay.tool
    def read_file(name: str) -> bytes:
        return {"a.bin": b"\\x00\\xffhello\\x80", "b.txt": "v2".encode()}[name] if VERSION == "v1" else b"live!"

    @otel_replay.tool
    def parse(data: str) -> dict:
        return {"words": data.split(), "version": VERSION}

    class Model:
        def __init__(self):
            self.turn = 0
        def respond(self, messages, **kw):
            self.turn += 1
            if self.turn == 1:
                return {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "read_file", "arguments": {"name": "a.bin"}}]}
            if self.turn == 2:
                arg = "x y z"
                return {"role": "assistant", "parts": [{"type": "tool_call", "id": "c2", "name": "parse", "arguments": {"data": arg}}]}
            return {"role": "assistant", "parts": [{"type": "text", "content": "done: " + json.dumps(messages[-1]["parts"][0]["response"])}]}

    def agent(model):
        tools = {"read_file": read_file, "parse": parse}
        messages = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
        results = []
        with otel_replay.agent_run("e2e", input="go") as run:
            while True:
                with otel_replay.model_call(provider="test", model="m", messages=messages) as call:
                    reply = model.respond(messages)
                    call.record(reply)
                messages.append(reply)
                calls = [p for p in reply["parts"] if p["type"] == "tool_call"]
                if not calls:
                    run.record(reply["parts"][0]["content"])
                    return reply["parts"][0]["content"], results
                for c in calls:
                    with otel_replay.tool_call_id(c["id"]):
                        args = dict(c["arguments"])
                        if VERSION == "changed" and c["name"] == "parse":
                            args["data"] += "!"  # the code change under test
                        r = tools[c["name"]](**args)
                    results.append(r)
                    shown = r.decode("latin-1") if isinstance(r, bytes) else r
                    messages.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": c["id"], "response": shown}]})

    def dump(answer, results):
        return json.dumps({"answer": answer, "results": [r.hex() if isinstance(r, bytes) else r for r in results]})

    if sys.argv[1] == "record":
        provider = TracerProvider()
        provider.add_span_processor(otel_replay.ReplaySpanProcessor())
        provider.add_span_processor(otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(sys.argv[3])))
        trace.set_tracer_provider(provider)
        print(dump(*agent(Model())))
        provider.shutdown()
    else:
        try:
            with otel_replay.replay(sys.argv[3]) as session:
                out = agent(session.model)
            print(dump(*out))
        except otel_replay.ReplayDivergence as d:
            print(json.dumps({"divergence": d.to_json()}))
    """
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_record_show_replay_in_separate_processes(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    trace_file = tmp_path / "run.otlp"

    recorded = run(str(script), "record", "v1", str(trace_file))
    assert recorded.returncode == 0, recorded.stderr
    original = json.loads(recorded.stdout)
    assert original["results"][0] == b"\x00\xffhello\x80".hex()

    shown = run("-m", "otel_replay.cli.main", "show", "--json", str(trace_file))
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    (r,) = doc["runs"]
    assert r["replayable"] is True
    kinds = [s["kind"] for s in r["steps"]]
    assert kinds.count("model") == 3 and kinds.count("tool") == 2
    tools = [s for s in r["steps"] if s["kind"] == "tool"]
    assert tools[1]["tool_name"] == "parse" and tools[1]["arguments"] == {"data": "x y z"}
    assert tools[1]["result"] == {"words": ["x", "y", "z"], "version": "v1"}

    # The world changed (v2), the replay must not notice: byte-for-byte the same.
    replayed = run(str(script), "replay", "v2", str(trace_file))
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout) == original


def test_changed_agent_diverges_at_the_right_step_in_a_fresh_process(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    trace_file = tmp_path / "run.otlp"
    assert run(str(script), "record", "v1", str(trace_file)).returncode == 0
    doc = json.loads(run("-m", "otel_replay.cli.main", "show", "--json", str(trace_file)).stdout)
    parse_step = next(s for s in doc["runs"][0]["steps"] if s.get("tool_name") == "parse")

    # The pinned model asks for parse("x y z"); the changed agent alters the call.
    out = run(str(script), "replay", "changed", str(trace_file))
    assert out.returncode == 0, out.stderr
    divergence = json.loads(out.stdout)["divergence"]
    assert divergence["index"] == parse_step["index"]
    assert divergence["span_id"] == parse_step["span_id"]
    assert divergence["kind"] == "tool" and divergence["name"] == "parse"
