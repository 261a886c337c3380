"""``ls`` lines computed from span records are the lines of the runs built.

The first ``ls`` of a file computes the line of a plain run from its span
records (:mod:`otel_replay.runs.quick_summary`) and builds every other run.
The oracle is the full path: every run read, built, repaired and summarized
(:func:`~otel_replay.runs.summary.summarize`).  Both must give the same lines,
byte for byte as ``ls --json`` prints them, on every trace we hold, on
damaged copies, and on runs drawn and recorded by our own capture; and each
kind of run a repair would change, or the quick path cannot tell, is built.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

import otel_replay
from otel_replay import attributes as A
from otel_replay.cli.main import cli
from otel_replay.commands import summary_cache
from otel_replay.dialects.litellm import SCOPE as LITELLM_SCOPE
from otel_replay.runs import quick_summary as quick
from otel_replay.runs.load import read_runs
from otel_replay.runs.stream import map_runs, windows
from otel_replay.runs.summary import RunSummary, summarize
from tests.fixtures.agent import WORLD, call, calls, record_run, say
from tests.fixtures.data import ROOT
from tests.unit.runs.test_pending_runs import PARAMS

EXAMPLE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"


def full_lines(paths: list[str]) -> tuple[str, list[str]]:
    """The oracle: every run built and summarized, in ``ls`` order, as ``ls --json`` says
    them; and the problems met."""
    runs = read_runs(paths)
    lines = sorted((summarize(r) for r in runs), key=lambda s: (s.start_ns, s.run_id))
    return _json(lines), [str(p) for p in runs.problems]


def listed_lines(paths: list[str]) -> tuple[str, list[str]]:
    """What a first ``ls`` computes (no saved summaries)."""
    found, problems = summary_cache.summaries(paths, use_cache=False, jobs=1)
    return _json(found), [str(p) for p in problems]


def _json(lines: list[RunSummary]) -> str:
    return json.dumps([s.to_json() for s in lines], ensure_ascii=False)


def quick_lines(paths: list[str]) -> int:
    """How many runs of ``paths`` have their line computed from their records."""
    return sum(quick.quick_summary(r) is not None for r in read_runs(paths, pending=True))


def assert_same_lines(paths: list[str]) -> None:
    assert listed_lines(paths) == full_lines(paths)


# --- every trace we hold -------------------------------------------------------------


@pytest.mark.parametrize("files", PARAMS)
def test_corpus_lines_are_the_built_lines(files: list[Path]) -> None:
    assert_same_lines([str(f) for f in files])


def test_our_own_recording_is_listed_from_its_records() -> None:
    assert quick_lines([str(EXAMPLE)]) == 1
    assert_same_lines([str(EXAMPLE)])


def test_ls_json_is_byte_identical(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "runs.otlp"
    for question in ("Where is my order?", "Cancel it", "Is it late?"):
        record_run(path, [call("lookup_order", "c1", query=question), say("Shipped.")])
    assert quick_lines([str(path)]) == 3

    def ls_json() -> str:
        result = CliRunner().invoke(cli, ["ls", "--json", str(path)])
        assert result.exit_code == 0, result.output
        summary_cache.cache_path(str(path)).unlink(missing_ok=True)  # type: ignore[union-attr]
        return result.stdout

    fast = ls_json()
    monkeypatch.setattr(summary_cache, "quick_summary", lambda run: None)
    assert ls_json() == fast


# --- drawn runs, recorded by our capture ----------------------------------------------

_ARGS = st.sampled_from(["a", "b", "my order"])
_CALL = st.one_of(
    st.builds(lambda q: ("lookup_order", {"query": q}), _ARGS),
    st.builds(lambda o: ("check_eligibility", {"order_id": o}), _ARGS),
    st.builds(lambda q: ("flaky_lookup", {"query": q}), _ARGS),
    st.builds(lambda s: ("fetch_price", {"sku": s}), _ARGS),
)
_ANSWER = st.sampled_from(
    [
        "Order #4421 is shipped.",
        "I'm sorry, I was unable to find it.",
        "Thought: done.\nFinal Answer: it failed",
        "<replaced>",
        "",
    ]
)
_BODY = st.sampled_from(
    ['{"sku": "w-1", "price": 12.5}', '{"sku": "w-1", "pri', "HTTP/1.1 503 Service", "ok"]
)


@st.composite
def scripts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A scripted model's replies: turns of one or more tool calls, then an answer."""
    replies = []
    for turn in range(draw(st.integers(0, 5))):
        asked = draw(st.lists(_CALL, min_size=1, max_size=3))
        replies.append(calls(*((n, f"c{turn}_{k}", a) for k, (n, a) in enumerate(asked))))
    replies.append(say(draw(_ANSWER)))
    return replies


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(runs=st.lists(scripts(), min_size=1, max_size=3), fail=st.integers(0, 2), body=_BODY)
def test_drawn_runs_list_as_built(
    tmp_path: Path, runs: list[list[dict[str, Any]]], fail: int, body: str
) -> None:
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "runs.otlp"
    WORLD["body"] = body
    try:
        for k, replies in enumerate(runs):
            WORLD["fail"] = fail if k == 0 else 0  # a tool that times out: a failed step
            record_run(path, replies, user=f"u_{k}")
    finally:
        WORLD["fail"] = 0
        WORLD.pop("body", None)
    assert_same_lines([str(path)])


def test_drawn_runs_take_the_quick_path(tmp_path: Path) -> None:
    # The drawn runs above exercise the quick path: runs with no failed tool are plain.
    path = tmp_path / "runs.otlp"
    asked = [call("fetch_price", f"c{k}", sku="a") for k in range(4)]
    record_run(path, [*asked, say("Done.")])
    record_run(path, [say("I'm sorry, I was unable to find it.")])
    assert quick_lines([str(path)]) == 2
    assert_same_lines([str(path)])


# --- damaged copies -------------------------------------------------------------------


def _plain_recording(path: Path) -> None:
    record_run(path, [call("lookup_order", "c1", query="a"), say("Shipped.")])
    record_run(path, [call("check_eligibility", "c1", order_id="4421"), say("Yes.")])


@pytest.mark.parametrize("source", ["ours", "example"])
def test_damaged_copies_list_as_built(tmp_path: Path, source: str) -> None:
    original = tmp_path / "original.otlp"
    if source == "ours":
        _plain_recording(original)
    else:
        original.write_bytes(EXAMPLE.read_bytes())
    data = original.read_bytes()
    assert quick_lines([str(original)]) >= 1
    damaged = 0
    for k, at in enumerate(range(7, len(data), max(1, len(data) // 24))):
        copy = Path(tempfile.mkdtemp(dir=tmp_path)) / "copy.otlp"
        if k % 2:
            copy.write_bytes(data[:at])  # cut short
        else:
            copy.write_bytes(data[:at] + bytes([data[at] ^ 0x5A]) + data[at + 1 :])
        assert_same_lines([str(copy)])
        damaged += 1
    assert damaged >= 20


# --- each kind of run the quick path leaves to the full one ----------------------------

Spec = dict[str, Any]


def _exact(key: str, value: Any) -> dict[str, str]:
    """``key`` recorded with its digest, as our capture records content."""
    text = json.dumps(value)
    return {
        key: text,
        A.SHA256 + key: hashlib.sha256(text.encode()).hexdigest(),
        A.TYPE + key: "json",
    }


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def _result(call_id: str | None, value: Any) -> dict[str, Any]:
    return {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": call_id, "response": value}],
    }


_ASK = call("lookup_order", "c1", query="a")


def base_run() -> list[Spec]:
    """An agent's run: a model call asking for a tool, the tool, a model call answering."""
    first = [_user("where?")]
    second = [*first, _ASK, _result("c1", [1])]
    return [
        {"name": "invoke_agent support", "parent": None, "at": (0, 100),
         "attrs": {A.OPERATION_NAME: "invoke_agent", A.AGENT_NAME: "support"}},
        {"name": "chat m", "parent": 0, "at": (10, 20),
         "attrs": {A.OPERATION_NAME: "chat", A.REQUEST_MODEL: "m",
                   **_exact(A.INPUT_MESSAGES, first), **_exact(A.OUTPUT_MESSAGES, [_ASK])}},
        {"name": "execute_tool lookup_order", "parent": 0, "at": (30, 40),
         "attrs": {A.OPERATION_NAME: "execute_tool", A.TOOL_NAME: "lookup_order",
                   A.TOOL_CALL_ID: "c1", **_exact(A.TOOL_CALL_ARGUMENTS, {"query": "a"}),
                   **_exact(A.TOOL_CALL_RESULT, [1])}},
        {"name": "chat m", "parent": 0, "at": (50, 60),
         "attrs": {A.OPERATION_NAME: "chat", A.REQUEST_MODEL: "m",
                   **_exact(A.INPUT_MESSAGES, second),
                   **_exact(A.OUTPUT_MESSAGES, [say("Shipped.")])}},
    ]  # fmt: skip


def write_run(path: Path, spans: list[Spec], scope: str = "app") -> None:
    """Write ``spans`` with the OpenTelemetry SDK to ``path`` (times in µs from now)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(otel_replay.FileSpanExporter(path)))
    tracer = provider.get_tracer(scope)
    base = 1_700_000_000_000_000_000
    made: list[trace.Span] = []
    ends: list[int] = []
    for spec in spans:
        parent = spec["parent"]
        context = trace.set_span_in_context(made[parent]) if parent is not None else None
        start, end = spec["at"]
        span = tracer.start_span(spec["name"], context=context, start_time=base + start * 1000)
        span.set_attributes(spec["attrs"])
        if spec.get("error"):
            span.set_status(Status(StatusCode.ERROR, "boom"))
        if spec.get("event"):
            span.add_event("note", {"k": "v"})
        made.append(span)
        ends.append(base + end * 1000)
    for span, end_ns in reversed(list(zip(made, ends, strict=True))):
        span.end(end_time=end_ns)
    provider.shutdown()


def _model(spans: list[Spec], k: int) -> Spec:
    return [s for s in spans if s["attrs"].get(A.OPERATION_NAME) == "chat"][k]


def _tool(spans: list[Spec]) -> Spec:
    return next(s for s in spans if s["attrs"].get(A.OPERATION_NAME) == "execute_tool")


def _set_input(spans: list[Spec], k: int, messages: list[dict[str, Any]]) -> None:
    _model(spans, k)["attrs"].update(_exact(A.INPUT_MESSAGES, messages))


def _set_output(spans: list[Spec], k: int, messages: list[dict[str, Any]] | None) -> None:
    attrs = _model(spans, k)["attrs"]
    for key in (A.OUTPUT_MESSAGES, A.SHA256 + A.OUTPUT_MESSAGES, A.TYPE + A.OUTPUT_MESSAGES):
        attrs.pop(key, None)
    if messages is not None:
        attrs.update(_exact(A.OUTPUT_MESSAGES, messages))


def _nest(spans: list[Spec], child: Spec, parent_op: str) -> None:
    parent = next(i for i, s in enumerate(spans) if s["attrs"].get(A.OPERATION_NAME) == parent_op)
    start, end = spans[parent]["at"]
    spans.append({**child, "parent": parent, "at": (start + 1, end - 1)})


#: Each kind of run the quick path does not compute, and how a plain run becomes one.
KINDS: dict[str, Callable[[list[Spec]], None]] = {
    "a span with an event": lambda s: s[1].update(event=True),
    "a step that failed": lambda s: _tool(s).update(error=True),
    "an attribute no plain span has": lambda s: s[1]["attrs"].update({"llm.model_name": "m"}),
    "a name GenAI replaced": lambda s: s[1]["attrs"].update({"gen_ai.system": "openai"}),
    "a model call with no input": lambda s: [
        s[1]["attrs"].pop(k) for k in list(s[1]["attrs"]) if "input.messages" in k
    ],
    "a payload not byte-exact": lambda s: _tool(s)["attrs"].update(
        {A.SHA256 + A.TOOL_CALL_RESULT: "0" * 64}
    ),
    "a tool span with no call id": lambda s: _tool(s)["attrs"].pop(A.TOOL_CALL_ID),
    "a tool result with no digest": lambda s: _tool(s)["attrs"].pop(A.SHA256 + A.TOOL_CALL_RESULT),
    "a tool span inside a tool span": lambda s: _nest(s, _tool(s), "execute_tool"),
    "a model span inside a model span": lambda s: _nest(s, _model(s, 0), "chat"),
    "model spans that overlap": lambda s: _model(s, 1).update(at=(15, 60)),
    "an input turn that lost its calls": lambda s: _set_input(
        s, 1, [_user("where?"), say(""), _result("c1", [1])]
    ),
    "a tool result with no call id": lambda s: _set_input(
        s, 1, [_user("where?"), _ASK, _result(None, [1])]
    ),
    "an answer the next input proves": lambda s: _set_output(s, 0, None),
    "an answer the next input completes": lambda s: _set_output(s, 0, [say("Let me look.")]),
    "a call answered under another id": lambda s: _set_output(
        s, 0, [call("lookup_order", "fc_1", query="a")]
    ),
    "a call an input leaves open": lambda s: _set_input(s, 1, [_user("where?"), _ASK]),
    "a tool the model before it did not call": lambda s: _tool(s)["attrs"].update(
        {A.TOOL_NAME: "other_tool"}
    ),
    "a call no tool span records": lambda s: s.remove(_tool(s)),
}


def test_a_plain_run_is_listed_from_its_records(tmp_path: Path) -> None:
    path = tmp_path / "plain.otlp"
    write_run(path, base_run())
    assert quick_lines([str(path)]) == 1
    assert_same_lines([str(path)])


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_is_built(tmp_path: Path, kind: str) -> None:
    spans = base_run()
    KINDS[kind](spans)
    path = tmp_path / "run.otlp"
    write_run(path, spans)
    assert quick_lines([str(path)]) == 0
    assert_same_lines([str(path)])


def test_a_dialects_scope_is_built(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    write_run(path, base_run(), scope=LITELLM_SCOPE)
    assert quick_lines([str(path)]) == 0
    assert_same_lines([str(path)])


def test_a_run_that_lost_records_is_built(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    write_run(path, base_run())
    write_run(path, base_run())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])  # the second request cut short
    runs = read_runs([str(path)], pending=True)
    assert runs.problems and all(r.read_faults for r in runs)
    assert quick_lines([str(path)]) == 0
    assert_same_lines([str(path)])


def test_a_dump_read_in_windows_lists_as_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []

    def summarize_built(run: Any) -> RunSummary:
        built.append(run.run_id)
        return summarize(run)

    monkeypatch.setattr(summary_cache, "summarize", summarize_built)
    path = tmp_path / "runs.otlp"
    for k in range(8):
        record_run(path, [call("lookup_order", f"c{k}", query=str(k)), say("Shipped.")])
    write_run(path, base_run())
    KINDS["a call no tool span records"](spans := base_run())
    write_run(path, spans)  # and a run that is built
    window = path.stat().st_size // 6
    assert windows([str(path)], window) is not None
    mapped = map_runs([str(path)], summary_cache._line, window_bytes=window, pending=True)
    lines = sorted((s for s, _ in mapped.values), key=lambda s: (s.start_ns, s.run_id))
    assert _json(lines) == full_lines([str(path)])[0]
    assert len(lines) == 10 and len(built) == 1  # the windows' runs came unbuilt


def _drop_tool(spans: list[Spec]) -> None:
    spans.remove(_tool(spans))
    _set_output(spans, 0, [say("No tool needed.")])
    _set_input(spans, 1, [_user("where?"), say("No tool needed."), _user("and?")])


def _no_content(spans: list[Spec]) -> None:
    _drop_tool(spans)
    for k in (0, 1):
        _set_input(spans, k, [{"role": "user", "parts": [{"type": "text", "content": ""}]}])
        _set_output(spans, k, [])


def _spelled(key: str, value: Any) -> dict[str, str]:
    """``key`` recorded with its digest, each ``<`` of its text spelled as an escape."""
    text = json.dumps(value).replace("<", "\\u003c")
    return {
        key: text,
        A.SHA256 + key: hashlib.sha256(text.encode()).hexdigest(),
        A.TYPE + key: "json",
    }


def _blocks_result(call_id: str, texts: list[str]) -> dict[str, Any]:
    """A tool's result as text blocks, which a reader joins into one string."""
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "content": [{"type": "text", "text": t} for t in texts],
    }


def _history_lost(spans: list[Spec]) -> None:
    """The second model call sent the first one's input again: the result of the call the
    first asked for is not in it (a third call's input holds it, so no repair applies)."""
    first = [_user("where?"), call("lookup_order", "c0", query="b"), _result("c0", [0])]
    _set_input(spans, 0, first)
    _set_input(spans, 1, first)
    third = [*first, say("Shipped."), _ASK, _result("c1", [1])]
    spans.append(
        {"name": "chat m", "parent": 0, "at": (70, 80),
         "attrs": {A.OPERATION_NAME: "chat", A.REQUEST_MODEL: "m",
                   **_exact(A.INPUT_MESSAGES, third),
                   **_exact(A.OUTPUT_MESSAGES, [say("Shipped.")])}}
    )  # fmt: skip


#: Runs the quick path computes, each line through another branch of the verdict or the
#: anomalies.
QUICK_KINDS: dict[str, Callable[[list[Spec]], None]] = {
    "an empty answer": lambda s: _set_output(s, 1, []),
    "an answer left out by the tracing": lambda s: _set_output(s, 1, [say("<replaced>")]),
    "a result left out by the tracing": lambda s: _tool(s)["attrs"].update(
        _exact(A.TOOL_CALL_RESULT, {"rows": ["__REDACTED__"]})
    ),
    "a placeholder spelled with escapes": lambda s: _model(s, 1)["attrs"].update(
        _spelled(A.INPUT_MESSAGES, [_user("where?"), _ASK, _result("c1", "<replaced>")])
    ),
    "a placeholder its reader joins": lambda s: _set_input(
        s, 1, [_user("where?"), _ASK, _blocks_result("c1", ["__RED", "ACTED__"])]
    ),
    "an answer that is no message list": lambda s: s[-1]["attrs"].update(
        _exact(A.OUTPUT_MESSAGES, 5)
    ),
    "an answer with an error phrase": lambda s: _set_output(s, 1, [say("I'm sorry, it failed.")]),
    "the last answer not recorded": lambda s: _set_output(s, 1, None),
    "a result cut off": lambda s: _tool(s)["attrs"].update(
        _exact(A.TOOL_CALL_RESULT, '{"rows": [1, 2')
    ),
    "a result with HTTP 503": lambda s: _tool(s)["attrs"].update(
        _exact(A.TOOL_CALL_RESULT, {"status": 503})
    ),
    "no tool at all": _drop_tool,
    "usage recorded": lambda s: _model(s, 0)["attrs"].update(
        {A.USAGE_INPUT_TOKENS: 7, A.USAGE_OUTPUT_TOKENS: "3", A.RESPONSE_MODEL: "m-2"}
    ),
    "the run's user and build": lambda s: s[0]["attrs"].update(
        {A.USER_ID: "u_1", A.CONVERSATION_ID: "s_9", A.FP + "commit": "abc"}
    ),
    "an agent that offered tools": lambda s: s[0]["attrs"].update({A.TOOL_DEFINITIONS: "[]"}),
    "no content at all": _no_content,
    "a model input without the history before it": _history_lost,
}


@pytest.mark.parametrize("kind", list(QUICK_KINDS))
def test_each_quick_kind_lists_as_built(tmp_path: Path, kind: str) -> None:
    spans = base_run()
    QUICK_KINDS[kind](spans)
    path = tmp_path / "run.otlp"
    write_run(path, spans)
    assert quick_lines([str(path)]) == 1
    assert_same_lines([str(path)])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kinds=st.lists(st.sampled_from([*KINDS, *QUICK_KINDS]), max_size=4, unique=True),
)
def test_drawn_mixtures_list_as_built(tmp_path: Path, kinds: list[str]) -> None:
    spans = base_run()
    for kind in kinds:
        try:
            {**KINDS, **QUICK_KINDS}[kind](spans)
        except (StopIteration, IndexError, KeyError, ValueError):
            assume(False)  # one change undid what another needs
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "run.otlp"
    write_run(path, spans)
    assert_same_lines([str(path)])
