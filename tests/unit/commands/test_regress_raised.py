"""``otel-replay regress --allow-failed`` of a run whose agent raised writes a test that
expects that error.

A newcomer recorded an agent that raised after its last model call, locked the run
in with ``--allow-failed`` (to pin a known failure) and ran the written test: it
failed at once with the very error it was meant to pin, since it asserted the last
model text as the final answer the agent never returned.  Drawn over exceptions
(built-in, the agent's own, nested classes; messages of any text, empty too),
recorded by running the real package in a process of its own; every written test
passes against the agent as it was and fails once the agent stops raising.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.runs.verdict import same_type
from tests.fixtures.data import ROOT

AGENT = """
import json, os, sys
from pathlib import Path

import otel_replay

CASES = json.loads((Path(__file__).parent / "cases.json").read_text())


class AgentFault(Exception):
    pass


class Outer:
    class Inner(LookupError):
        pass


KINDS = {"ValueError": ValueError, "RuntimeError": RuntimeError, "KeyError": KeyError,
         "AgentFault": AgentFault, "Outer.Inner": Outer.Inner}


@otel_replay.tool
def lookup(query: str) -> dict:
    return {"query": query, "found": 1}


class Model:
    def respond(self, messages, **kw):
        if messages[-1]["role"] == "user":
            return {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1",
                    "name": "lookup", "arguments": {"query": "q"}}]}
        return {"role": "assistant", "parts": [{"type": "text", "content": "It is found."}]}


def ask(model, messages):
    with otel_replay.model_call(provider="scripted", model="m-1", messages=messages) as call:
        reply = model.respond(messages)
        call.record(reply)
    messages.append(reply)
    return reply


def run_agent(question, *, model):
    messages = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    with otel_replay.agent_run("raiser", input=question) as run:
        (c,) = ask(model, messages)["parts"]  # one tool call, then the answer
        with otel_replay.tool_call_id(c["id"]):
            result = lookup(**c["arguments"])
        response = {"type": "tool_call_response", "id": c["id"], "response": result}
        messages.append({"role": "tool", "parts": [response]})
        reply = ask(model, messages)
        answer = reply["parts"][0]["content"]
        if os.environ.get("RAISER_FIXED"):
            run.record(answer)
            return answer
        if os.environ.get("RAISER_OTHER"):
            raise OSError("not what was recorded")
        kind, message = CASES[question]
        raise KINDS[kind](message)


if __name__ == "__main__":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    exporter = otel_replay.FileSpanExporter(sys.argv[1])
    provider.add_span_processor(otel_replay.RecordingSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    for question in CASES:
        try:
            run_agent(question, model=Model())
        except Exception:
            pass
    provider.shutdown()
"""

_KINDS = ["ValueError", "RuntimeError", "KeyError", "AgentFault", "Outer.Inner"]
_LETTERS = "abcXYZ 019 .,:;'\"\\\n\t-_é中😀{}[]"


def _cases(seed: int, n: int) -> dict[str, tuple[str, str]]:
    """``n`` questions, each with the exception kind and message its run raises."""
    draw = random.Random(seed)
    cases = {}
    for i in range(n):
        message = "".join(draw.choice(_LETTERS) for _ in range(draw.randrange(0, 40)))
        cases[f"case {i}: where is it?"] = (draw.choice(_KINDS), message)
    return cases


def _python(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(cwd), str(ROOT / "src")])
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path, **env},
        timeout=300,
        check=False,
    )


def _recorded(
    folder: Path, cases: dict[str, tuple[str, str]], name: str = "runs.otlp", **env: str
) -> list[otel_replay.Run]:
    """One run of the agent per case, recorded by a process of its own to ``name``."""
    (folder / "cases.json").write_text(json.dumps(cases))
    (folder / "raising_agent.py").write_text(AGENT)
    recorded = _python("raising_agent.py", name, cwd=folder, **env)
    assert recorded.returncode == 0, recorded.stderr
    runs = otel_replay.load(folder / name)
    assert len(runs) == len(cases)
    return runs


def test_replay_of_a_run_that_raised_follows_it_when_the_agent_raises_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``replay --agent`` of a run whose agent raised: raising the same error again is the
    recording followed (exit 0, said so); another error, or none, is named beside it."""
    cases = _cases(seed=3434, n=8)
    runs = _recorded(tmp_path, cases)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "raising_agent", raising=False)
    path = str(tmp_path / "runs.otlp")
    for run in runs:
        kind, message = cases[run.question() or ""]
        args = ["replay", path, "--run", run.run_id, "--agent", "raising_agent:run_agent"]
        same = CliRunner().invoke(cli, args)
        assert same.exit_code == 0, same.output
        assert "MATCHED" in same.output and ", as the recorded run did" in same.output
        doc = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
        assert doc["raised_as_recorded"] is True
        said = repr(message) if kind == "KeyError" else message  # str(KeyError) quotes
        assert kind in doc["recorded_error"] and said in doc["recorded_error"]
        monkeypatch.setenv("RAISER_OTHER", "1")
        other = CliRunner().invoke(cli, args)
        monkeypatch.delenv("RAISER_OTHER")
        assert other.exit_code == 1, other.output
        assert "OSError" in other.output and "the agent raised something else" in other.output
        monkeypatch.setenv("RAISER_FIXED", "1")
        fixed = CliRunner().invoke(cli, args)
        monkeypatch.delenv("RAISER_FIXED")
        assert "the recorded run raised" in fixed.output and "did not raise" in fixed.output


@pytest.mark.slow  # two pytest processes and a recording one: about 15 s
def test_a_locked_in_raise_is_expected_by_the_written_test(tmp_path: Path) -> None:
    cases = _cases(seed=34, n=10)
    runs = _recorded(tmp_path, cases)
    tests = tmp_path / "tests_written"
    for n, run in enumerate(runs):
        out = tests / f"test_raised_{n}.py"
        args = ["regress", str(tmp_path / "runs.otlp"), "--run", run.run_id, "-o", str(out)]
        args += ["--agent", "raising_agent:run_agent"]
        refused = CliRunner().invoke(cli, args)
        assert refused.exit_code == 1 and "ended in error" in refused.output, refused.output
        done = CliRunner().invoke(cli, [*args, "--allow-failed"])
        assert done.exit_code == 0, done.output
        assert "FINAL_ANSWER" not in out.read_text()  # the agent returned none
    pytest_args = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    as_recorded = _python(*pytest_args, str(tests), cwd=tmp_path)
    assert f"{len(cases)} passed" in as_recorded.stdout, as_recorded.stdout[-3000:]
    fixed = _python(*pytest_args, str(tests), cwd=tmp_path, RAISER_FIXED="1")
    assert f"{len(cases)} failed" in fixed.stdout, fixed.stdout[-3000:]
    assert "DID NOT RAISE" in fixed.stdout


def test_diff_of_a_run_that_raised_names_the_error_and_no_answer(tmp_path: Path) -> None:
    """``diff`` of a run whose agent raised and the same run that returned: the raised
    run has no final answer (its last model text was never returned) and the error is
    named; two runs that raised alike are equal."""
    cases = _cases(seed=343, n=6)
    raised = _recorded(tmp_path, cases)
    again = _recorded(tmp_path, cases, "again.otlp")
    fixed = _recorded(tmp_path, cases, "fixed.otlp", RAISER_FIXED="1")
    by_question = {r.question(): r for r in fixed}
    for run, twin in zip(raised, again, strict=True):
        kind, _ = cases[run.question() or ""]
        returned = by_question[run.question()]
        a, b = (
            f"{tmp_path / 'fixed.otlp'}#{returned.run_id}",
            f"{tmp_path / 'runs.otlp'}#{run.run_id}",
        )
        done = CliRunner().invoke(cli, ["diff", a, b])
        assert done.exit_code == 1, done.output
        lines = done.output.splitlines()
        assert "first divergence: A step 0 (agent" in done.output  # its status, its output
        final = next(line for line in lines if line.startswith("final answer: "))
        assert final.endswith("{+null+}"), final  # B answered nothing
        said = next(line for line in lines if line.startswith("raised: "))
        assert said.startswith("raised: [-null-]{+") and kind in said, said
        doc = json.loads(CliRunner().invoke(cli, ["diff", a, b, "--json"]).output)
        fields = {c["field"]: c for c in doc["run_changes"]}
        assert fields["final_output"]["b"] is None and kind in fields["raised"]["b"]
        same = CliRunner().invoke(cli, ["diff", b, f"{tmp_path / 'again.otlp'}#{twin.run_id}"])
        assert same.exit_code == 0, same.output


def test_the_report_gives_a_run_that_raised_no_answer(tmp_path: Path) -> None:
    """``report -o DIR``: the index and the page of a run whose agent raised show no final
    answer (its last model text was shown as one); a run that returned shows its own."""
    cases = _cases(seed=3443, n=4)
    _recorded(tmp_path, cases)
    _recorded(tmp_path, cases, "fixed.otlp", RAISER_FIXED="1")
    for name, answered in (("runs.otlp", False), ("fixed.otlp", True)):
        pages = tmp_path / f"{name}.pages"
        done = CliRunner().invoke(cli, ["report", str(tmp_path / name), "-o", str(pages)])
        assert done.exit_code == 0, done.output
        index = (pages / "index.html").read_text()
        assert index.count("It is found.") == (len(cases) if answered else 0)
        for page in pages.glob("run-*.html"):
            assert ('id="answer"' in page.read_text()) is answered, page


def test_the_replayed_run_of_a_raise_diffs_equal_to_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``replay -o FILE`` writes the replayed run raising as the recorded one did: its agent
    span in error with the exception's type and message, no final answer.  ``diff``
    of the recording against it is equal (it showed a status change at the agent step
    and a final answer the agent never returned)."""
    cases = _cases(seed=77, n=5)
    runs = _recorded(tmp_path, cases)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "raising_agent", raising=False)
    path = str(tmp_path / "runs.otlp")
    for n, run in enumerate(runs):
        out = str(tmp_path / f"replay{n}.otlp")
        args = ["replay", path, "--run", run.run_id, "--agent", "raising_agent:run_agent"]
        done = CliRunner().invoke(cli, [*args, "-o", out])
        assert done.exit_code == 0, done.output
        (replayed,) = otel_replay.load(out)
        agent = replayed.steps[0]
        assert agent.kind == "agent" and agent.status == "ERROR"
        compared = CliRunner().invoke(cli, ["diff", f"{path}#{run.run_id}", out])
        assert compared.exit_code == 0, compared.output


_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_DOTTED = st.lists(_NAME, min_size=1, max_size=3).map(".".join)


@given(module=_DOTTED, other=_DOTTED, qualname=_DOTTED)
def test_a_scripts_class_is_the_same_type_imported(module: str, other: str, qualname: str) -> None:
    """One class recorded from ``python agent.py`` (``__main__.X``) and replayed with
    ``agent`` imported (``agent.X``) is one type; two modules' classes are not."""
    assert same_type(f"__main__.{qualname}", f"{module}.{qualname}")
    assert same_type(f"{module}.{qualname}", f"__main__.{qualname}")
    assert same_type(qualname, qualname) and not same_type(qualname, None)
    if module != other:
        assert not same_type(f"{module}.{qualname}", f"{other}.{qualname}")
