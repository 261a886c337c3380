"""Content an instrumentation left out, with a placeholder in its place, is not recorded.

Strands writes ``"<replaced>"`` for a value it cannot serialize (an image's
bytes), OpenInference ``"__REDACTED__"`` for content it was told to hide: a
reader that took them at their word would call the run ``full`` and replay the
placeholder where the model was sent the real value.  The verdict says what is
left out, wherever the placeholder stands (a tool's arguments or result, a
model call's messages, at any depth); the same words inside longer text are
ordinary content.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.dialects.placeholders import PLACEHOLDERS, placeholder_in
from otel_replay.runs import verdict as V
from tests.fixtures.data import TESTS
from tests.fixtures.recording import recording

# Recorded by running Strands 1.62 (tests/tool_results/record.py, see tests/data/README.md).
STRANDS_IMAGE = TESTS / "data/tool_results/strands_image/traces.binpb"


def test_a_strands_image_result_is_not_recorded() -> None:
    (run,) = otel_replay.load(STRANDS_IMAGE)
    kit = run.kit
    assert kit.verdict == "model-only" and not kit.replayable
    tool = next(s for s in run.steps if s.kind == "tool")
    assert f"steps[{tool.index}].result" in kit.missing
    assert any("'<replaced>'" in p and "not in the trace" in p for p in kit.problems)
    assert V.run_verdict(run).replay_problem == V.LEFT_OUT


_LEAVES = st.none() | st.booleans() | st.integers() | st.text(max_size=6)


def _holding(marker: str) -> st.SearchStrategy[Any]:
    """JSON values holding ``marker`` as a whole string somewhere inside."""
    return st.recursive(
        st.just(marker),
        lambda inner: (
            st.tuples(st.lists(_LEAVES, max_size=3), inner, st.integers(0, 3)).map(
                lambda t: [*t[0][: t[2]], t[1], *t[0][t[2] :]]
            )
            | st.tuples(st.dictionaries(st.text(max_size=5), _LEAVES, max_size=3), inner).map(
                lambda t: {**t[0], "\x00slot": t[1]}
            )
        ),
        max_leaves=6,
    )


MARKERS = st.sampled_from(sorted(PLACEHOLDERS))


def _record(path: Path, arguments: Any, result: Any, output: Any) -> otel_replay.Run:
    @otel_replay.tool
    def look(**kwargs: Any) -> Any:
        return result

    question = {"role": "user", "parts": [{"type": "text", "content": "look"}]}
    call = {"type": "tool_call", "id": "c1", "name": "look", "arguments": arguments}
    with recording(path), otel_replay.agent_run("a", input="look") as run:
        with otel_replay.model_call(provider="p", model="m", messages=[question]) as span:
            span.record({"role": "assistant", "parts": [call]})
        with otel_replay.tool_call_id("c1"):
            look(**arguments)
        sent = {"type": "tool_call_response", "id": "c1", "response": json.dumps(result)}
        msgs = [question, {"role": "assistant", "parts": [call]}, {"role": "tool", "parts": [sent]}]
        with otel_replay.model_call(provider="p", model="m", messages=msgs) as span:
            span.record({"role": "assistant", "parts": [{"type": "text", "content": output}]})
        run.record("done")
    (built,) = otel_replay.load(path)
    return built


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(marker=MARKERS, where=st.sampled_from(["arguments", "result", "output"]), data=st.data())
def test_a_placeholder_anywhere_is_content_left_out(
    tmp_path: Path, marker: str, where: str, data: st.DataObject
) -> None:
    held = data.draw(_holding(marker))
    arguments = {"q": held} if where == "arguments" else {"q": "x"}
    result = held if where == "result" else {"ok": 1}
    output = marker if where == "output" else "fine"
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "r.otlp"  # one file per example
    run = _record(path, arguments, result, output)
    kit = run.kit
    assert kit.verdict != "full" and not kit.replayable, kit
    assert V.LEFT_OUT in (V.run_verdict(run).replay_problem or "")
    assert any(repr(marker) in p for p in kit.problems), kit.problems


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(marker=MARKERS, before=st.text(min_size=1, max_size=5), after=st.text(max_size=5))
def test_the_words_inside_longer_text_are_content(
    tmp_path: Path, marker: str, before: str, after: str
) -> None:
    text = before + marker + after
    assert placeholder_in({"a": [text]}) is None
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "r.otlp"  # one file per example
    run = _record(path, {"q": text}, {"r": text}, text)
    assert run.kit.verdict == "full" and run.kit.replayable, run.kit


@pytest.mark.parametrize("marker", sorted(PLACEHOLDERS))
def test_ls_check_and_show_say_it(tmp_path: Path, marker: str) -> None:
    from click.testing import CliRunner

    from otel_replay.cli.main import cli

    path = tmp_path / "r.otlp"
    _record(path, {"q": "x"}, {"image": marker}, "fine")
    for command in ("ls", "check", "show"):
        done = CliRunner().invoke(cli, [command, str(path)])
        assert "does not replay: content left out by the tracing" in done.output, done.output
