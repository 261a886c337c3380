"""A crafted trace file runs none of its code: not when read, shown, checked, diffed,
converted, served from a URL or replayed, and not through a generated regression test.

Each hostile value is planted where a real recording keeps it (the payload companions of a
tool span, a snapshot, the recorded exception type, the final answer) and tries to create a
marker file: by naming ``os:system`` or ``builtins:exec`` as the class to rebuild a value
with, or a module whose import creates the marker.  The tests assert the marker never
appears, and that reading still shows the recorded data.  The commands run in this
process (every module a fresh one would lack already imported, which makes rebuilding easier,
not harder, and a stack already deep with the test runner's frames, which makes nesting
harder to survive).
"""

from __future__ import annotations

import ast
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace

import otel_replay
from otel_replay import attributes as A
from tests.fixtures.cli import cli_process, cli_run
from tests.fixtures.http import POLL_S
from tests.fixtures.recording import recording

MODULE = "otel_replay_hostile_module"


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The file a successful attack creates; a module on the path creates it when imported."""
    path = tmp_path / "PWNED"
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / f"{MODULE}.py").write_text(
        f"open({str(path)!r}, 'w').close()\n"
        "class Thing:\n    model_validate = classmethod(lambda cls, v: open(v, 'w'))\n"
        "class Boom(Exception):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(lib), os.environ.get("PYTHONPATH", "")]))
    yield path
    assert MODULE not in sys.modules, "the planted module was imported"
    assert not path.exists(), "the trace ran its code"


def _tagged(kind: str, cls: str, **fields: Any) -> bytes:
    return json.dumps({"$py": kind, "cls": cls, **fields}).encode()


def hostile_results(marker: Path) -> dict[str, bytes]:
    """Tool results (``pyjson`` payloads, no digest: "unverified") that name code to run."""
    touch = f"touch {marker}"
    return {
        "system_path": _tagged("path", "os:system", v=touch),
        "exec_tuple": _tagged("namedtuple", "builtins:exec", v=[f"open({str(marker)!r},'w')"]),
        "eval_enum": _tagged("enum", "builtins:eval", name="x"),
        "popen_dataclass": _tagged("dataclass", "subprocess:Popen", v={"args": touch}),
        "import_model": _tagged("pydantic", f"{MODULE}:Thing", v=str(marker)),
        "nested": json.dumps(
            {"$py": "tuple", "v": [{"$py": "path", "cls": "os:system", "v": touch}]}
        ).encode(),
    }


def write_hostile_trace(path: Path, marker: Path) -> None:
    """A real run (our processor and exporter) whose spans carry the hostile payloads."""
    with recording(path) as provider:
        tracer = provider.get_tracer("hostile")
        with otel_replay.agent_run("agent", input="go") as run:
            for name, data in hostile_results(marker).items():
                with tracer.start_as_current_span(
                    f"execute_tool {name}",
                    attributes={
                        A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                        A.TOOL_NAME: name,
                        A.TOOL_CALL_ARGUMENTS: "{}",
                        A.TOOL_CALL_RESULT: "see bytes",
                        A.TYPE + A.TOOL_CALL_RESULT: "pyjson",
                        A.BYTES + A.TOOL_CALL_RESULT: data,
                    },
                ):
                    pass
            with tracer.start_as_current_span(
                "execute_tool failing",
                attributes={
                    A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                    A.TOOL_NAME: "failing",
                    A.TOOL_CALL_ARGUMENTS: "{}",
                    A.ERROR_TYPE: f"{MODULE}.Boom",
                },
            ) as span:
                span.set_status(trace.StatusCode.ERROR, "boom")
            otel_replay.snapshot("state", {"ok": 1})
            run.record("done")


@pytest.fixture
def hostile(tmp_path: Path, marker: Path) -> Path:
    path = tmp_path / "hostile.otlp"
    write_hostile_trace(path, marker)
    return path


def test_load_and_show_read_the_values_without_rebuilding_them(hostile: Path) -> None:
    (run,) = otel_replay.load(hostile)
    results = {s.tool.tool_name: s.tool.result for s in run.tool_steps() if s.tool}
    assert results["system_path"] == f"touch {hostile.parent / 'PWNED'}"
    assert results["exec_tuple"] == [f"open({str(hostile.parent / 'PWNED')!r},'w')"]
    assert results["nested"] == [f"touch {hostile.parent / 'PWNED'}"]


@pytest.mark.parametrize(
    "command",
    [
        ["show"],
        ["show", "--json"],
        ["ls"],
        ["check"],
        ["check", "--json"],
    ],
)
def test_cli_commands_run_none_of_the_file_s_code(hostile: Path, command: list[str]) -> None:
    (run,) = otel_replay.load(hostile)
    proc = cli_run(*command, hostile)
    assert proc.returncode in (0, 1), proc.stderr
    assert run.run_id[:8] in proc.stdout  # the run was read and printed


def test_diff_and_convert_run_none_of_the_file_s_code(hostile: Path, tmp_path: Path) -> None:
    assert cli_run("diff", hostile, hostile).returncode in (0, 1)
    converted = tmp_path / "converted.jsonl"
    proc = cli_run("convert", hostile, "-o", converted, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert converted.stat().st_size > 0


def test_a_url_is_read_the_same_safe_way(hostile: Path) -> None:
    data = hostile.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hostile.otlp"
        proc = cli_run("show", "--json", url)
        assert proc.returncode == 0, proc.stderr
        assert "system_path" in proc.stdout
    finally:
        server.shutdown()


@pytest.mark.parametrize("type_trust", ["registered", "imported"])
def test_replay_hands_back_plain_values_and_a_stand_in_exception(
    hostile: Path, type_trust: Any
) -> None:
    (run,) = otel_replay.load(hostile)
    with otel_replay.replay(run, require_complete=False, type_trust=type_trust) as session:
        got = {name: stub(name) for name in hostile_results(hostile.parent / "PWNED")}
        with pytest.raises(Exception) as info:
            stub("failing")
        assert session.state_at("state") == {"ok": 1}
    assert got["system_path"] == f"touch {hostile.parent / 'PWNED'}"
    assert got["import_model"] == str(hostile.parent / "PWNED")
    # A stand-in of the recorded name: the module that defines it was not imported.
    assert type(info.value).__name__ == "Boom" and type(info.value).__module__ == MODULE
    notes = "\n".join(session.report().notes)
    assert "os:system (path) handed back as plain JSON" in notes
    assert "builtins:exec (namedtuple)" in notes


def stub(name: str) -> Any:
    """Call a tool of the recorded name (the stub answers; the body never runs)."""

    @otel_replay.tool(name=name)
    def call() -> Any:
        raise AssertionError("the stub should have answered")

    return call()


HOSTILE_ANSWER = "A''';__import__('os').system('touch PWNED')#\"\"\" \\"


def test_a_generated_regression_test_runs_none_of_the_recorded_strings(
    tmp_path: Path, marker: Path
) -> None:
    path = tmp_path / "run.otlp"
    question = "Q\"\"\"; __import__('os').system('touch PWNED'); '''"
    with recording(path) as provider:
        tracer = provider.get_tracer("hostile")
        with otel_replay.agent_run('ag"""ent\n__import__("os")', input=question) as run:
            with tracer.start_as_current_span(
                "execute_tool x",
                attributes={
                    A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                    A.TOOL_NAME: "t'''\"\"\"; import os; os.system('touch PWNED')",
                    A.TOOL_CALL_ARGUMENTS: json.dumps({"q": "'''; x = 1 #", "n": float("nan")}),
                    A.TOOL_CALL_RESULT: "r",
                },
            ):
                pass
            run.record(HOSTILE_ANSWER)
    agent = tmp_path / "hostile_agent.py"
    agent.write_text("def run(question, model=None):\n    return 'not the answer'\n")
    test = tmp_path / "test_locked.py"
    proc = cli_process("regress", path, "--agent", "hostile_agent:run", "-o", test)
    assert proc.returncode == 0, proc.stderr
    # The recorded strings are in the module as data, exactly as recorded.
    constants = {
        node.targets[0].id: node.value
        for node in ast.parse(test.read_text()).body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    assert ast.literal_eval(constants["FINAL_ANSWER"]) == HOSTILE_ANSWER
    assert ast.literal_eval(constants["QUESTION"]) == question
    assert ast.literal_eval(constants["AGENT_NAME"]) == 'ag"""ent\n__import__("os")'
    pytest_run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ["PYTHONPATH"]]),
        },
    )
    # It ran, and failed on the answer (the agent answers something else): nothing else ran.
    assert pytest_run.returncode == 1, pytest_run.stdout + pytest_run.stderr
    assert "assert answer == FINAL_ANSWER" in pytest_run.stdout


@pytest.mark.parametrize("depth", [100_000, 900])
def test_json_attributes_nested_too_deep_cost_only_their_value(tmp_path: Path, depth: int) -> None:
    """``"[" * 100000`` breaks ``json.loads``; 900 levels parse and break what walks them."""
    deep = "[" * depth + "]" * depth
    path = tmp_path / "deep.otlp"
    with recording(path) as provider:
        tracer = provider.get_tracer("hostile")
        with otel_replay.agent_run("agent", input="go") as run:
            for key in (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, A.TOOL_DEFINITIONS, "input.value"):
                attrs = {A.OPERATION_NAME: "chat", A.REQUEST_MODEL: "m", key: deep}
                with tracer.start_as_current_span("chat m", attributes=attrs):
                    pass
            attrs = {
                A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                A.TOOL_NAME: "t",
                A.TOOL_CALL_ARGUMENTS: deep,
                A.TOOL_CALL_RESULT: deep,
            }
            with tracer.start_as_current_span("execute_tool t", attributes=attrs):
                pass
            run.record("done")
    (loaded,) = otel_replay.load(path)
    assert len(loaded.model_steps()) == 4 and len(loaded.tool_steps()) == 1
    assert loaded.kit.verdict != "full"
    for command in (["show"], ["show", "--json"], ["ls"], ["check"], ["diff", path]):
        proc = cli_run(*command, path)
        assert proc.returncode in (0, 1), (command, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, command
