"""A type the exporter's table cannot tell is said, from the reader to the run's kit check.

The Collector's ClickHouse exporter keeps every attribute as a string, a list
as Go's JSON of it: a message content an instrumentation may set as a string
or a list reads as the list its text spells, and the run says so of its step.
"""

from __future__ import annotations

import copy
import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.sources.clickhouse.column_types import text_contents
from otel_replay.sources.reader import RecordReader
from tests.conformance.checks import find_cases
from tests.fixtures.clickhouse import as_string, fill
from tests.fixtures.go_lists import go_list

pytestmark = pytest.mark.chdb

#: A real trace whose message contents are strings and lists of blocks (LiteLLM's
#: Responses API inputs).
CASE = next(c for c in find_cases() if c.id == "litellm_openinference/responses")
_CONTENT = re.compile(r"llm\.(?:input|output)_messages\.\d+\.message\.content")

#: Scopes that fix no type for a message content: LiteLLM's (it sets both), one no
#: convention reads, none at all; any other name that is no strings-only instrumentation.
_SCOPES = st.one_of(
    st.sampled_from(["openinference.instrumentation.litellm", "some.other.instrumentation", ""]),
    st.from_regex(r"[a-z@/_-]{1,10}(\.[a-z_]{1,10}){0,3}", fullmatch=True).filter(
        lambda s: not text_contents(s)
    ),
)
_TEXTS = st.text(st.characters(codec="utf-8"), max_size=12)
_LISTS = st.one_of(
    st.lists(_TEXTS, max_size=3),
    st.lists(st.fixed_dictionaries({"type": st.just("input_text"), "text": _TEXTS}), max_size=2),
)
#: A content as an instrumentation sets it: a list, or a string (spelt as Go spells a
#: list, as Python does, or any text).
_VALUES = st.one_of(_LISTS, _LISTS.map(as_string), _LISTS.map(json.dumps), _TEXTS)


@settings(max_examples=12, deadline=None)
@given(scope=_SCOPES, data=st.data())
def test_a_content_read_as_the_list_its_text_spells_is_said_ambiguous(
    scope: str, data: st.DataObject
) -> None:
    """Every message content of a real trace drawn anew (strings, lists, strings spelt as
    Go spells a list), under a scope that fixes no type: one whose text the table keeps
    as a list's reads as that list, and its step says the type is ambiguous in the run's
    problems; any other reads back as the string written, with nothing said."""
    records = [copy.deepcopy(r) for f in CASE.trace_files() for r in RecordReader(str(f))]
    written: dict[tuple[str, str], str] = {}
    for record in records:
        names = [n for n in getattr(record, "attributes", {}) if _CONTENT.fullmatch(n)]
        if names:
            record.scope_name = scope
        for name in names:
            value = data.draw(_VALUES, label=name)
            record.attributes[name] = value
            written[(record.span_id, name)] = as_string(value)
    assert written  # the case holds message contents
    with tempfile.TemporaryDirectory() as tmp:
        runs = otel_replay.load(fill(Path(tmp) / "db", records))
    steps = {s.span_id: (run, s) for run in runs for s in run.steps}
    for (span_id, name), text in written.items():
        run, step = steps[span_id]
        said = [n for n in step.notes if repr(name) in n]
        if go_list(text):
            event("read as a list")
            assert step.attributes[name] == json.loads(text)
            assert len(said) == 1 and "ambiguous" in said[0]
            assert f"{step.label()}: {said[0]}" in run.kit.problems
        else:
            assert step.attributes[name] == text and not said
