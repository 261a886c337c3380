"""ClickHouse sources without a ClickHouse: names, types given back, what a missing client says.

The tables themselves are read in the chdb tier (``tests/unit/sources/test_clickhouse.py``).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import otel_replay
from otel_replay import attributes as A
from otel_replay.otlp.errors import FormatError
from otel_replay.sources.clickhouse.column_types import (
    attribute_type,
    text_contents,
    typed_attributes,
    typed_value,
)
from otel_replay.sources.clickhouse.database import Location
from otel_replay.sources.clickhouse.go_json import go_float
from tests.fixtures.cli import cli_process
from tests.fixtures.clickhouse import as_string
from tests.fixtures.go_lists import go_list


def test_a_server_name_gives_host_port_database_table_and_tls() -> None:
    where = Location.parse("clickhouse://reader@ch.example:9440/otel?table=traces&secure=1")
    assert (where.host, where.port, where.user, where.database) == (
        "ch.example",
        9440,
        "reader",
        "otel",
    )
    assert (where.table, where.lookup_table, where.secure) == ("traces", "traces_trace_id_ts", True)
    plain = Location.parse("clickhouse://ch.example")
    assert (plain.port, plain.user, plain.database, plain.table) == (
        8123,
        "default",
        "default",
        "otel_traces",
    )
    assert plain.logs == "otel_logs" and Location.parse("clickhouses://h?logs=").logs == ""
    assert Location.parse("clickhouses://h").port == 8443


def test_the_password_comes_from_the_environment_first(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Location.parse("clickhouse://u:in%20url@h").password == "in url"
    monkeypatch.setenv("OTEL_REPLAY_CLICKHOUSE_PASSWORD", "from-env")
    where = Location.parse("clickhouse://u:in-url@h")
    assert where.password == "from-env" and "from-env" not in repr(where)


def test_a_database_directory_is_named_by_its_path() -> None:
    where = Location.parse("chdb:///var/lib/otel%20db?database=otel&table=t")
    assert where.embedded and (where.path, where.database, where.table) == (
        "/var/lib/otel db",
        "otel",
        "t",
    )
    assert Location.parse("chdb://relative/dir").path == "relative/dir"


@pytest.mark.parametrize(
    "name",
    [
        "chdb://",
        "clickhouse:///db",
        "clickhouse://h:port",
        "clickhouse://h/x;y",
        "chdb:///d?table=a.b",
    ],
)
def test_names_that_name_no_table_are_refused(name: str) -> None:
    with pytest.raises(FormatError):
        Location.parse(name)


@pytest.mark.skipif(importlib.util.find_spec("chdb") is not None, reason="chdb is installed here")
def test_without_chdb_the_error_says_what_to_install(tmp_path: object) -> None:
    shown = cli_process("show", "chdb:///nowhere")
    assert shown.returncode == 2 and "pip install 'otel-replay[chdb]'" in shown.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("clickhouse_connect") is not None, reason="clickhouse-connect is here"
)
def test_without_clickhouse_connect_the_error_says_what_to_install() -> None:
    runs = otel_replay.load("clickhouse://u:pw-789@127.0.0.1:1/otel")
    (problem,) = runs.problems
    assert "pip install 'otel-replay[clickhouse]'" in str(problem) and "pw-789" not in str(problem)


# --- types given back --------------------------------------------------------------


def test_the_conventions_types_are_known_by_name() -> None:
    assert attribute_type("gen_ai.usage.input_tokens") == "int"
    assert attribute_type("ai.settings.maxOutputTokens") == "int"
    assert attribute_type("gen_ai.request.temperature") == "number"
    assert attribute_type("gen_ai.response.finish_reasons") == "strings"
    assert attribute_type("otel_replay.bytes.result") == "bytes"
    assert attribute_type("llm.input_messages.3.message.content") == "list"
    assert attribute_type("gen_ai.input.messages") is None
    assert attribute_type("user.id") is None


_INTS = st.integers(-(2**63), 2**63 - 1)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)


@given(_INTS)
def test_an_int_reads_back_from_the_exporters_text(value: int) -> None:
    assert typed_value("int", as_string(value)) == value


@given(_FLOATS)
def test_a_double_reads_back_from_the_exporters_text(value: float) -> None:
    back = typed_value("number", as_string(value))
    assert back == value
    assert value == 0 or math.copysign(1, float(back)) == math.copysign(1, value)


@given(st.lists(st.text()))
def test_a_list_of_strings_reads_back_from_the_exporters_json(value: list[str]) -> None:
    assert typed_value("strings", as_string(value)) == value


@given(st.lists(st.one_of(st.integers(-(2**53), 2**53), _FLOATS)))
def test_a_list_of_numbers_reads_back_from_the_exporters_json(value: list[float]) -> None:
    # Past 2**53 an integer text is read as the double it is written from (documented).
    assert typed_value("numbers", as_string(value)) == value


@given(st.binary())
def test_bytes_read_back_from_the_exporters_base64(value: bytes) -> None:
    assert typed_value("bytes", as_string(value)) == value


def test_go_writes_doubles_as_javascript_does() -> None:
    # encoding/json's float format (pdata's float64AsString): 'f' unless tiny or huge.
    cases = {1.0: "1", 0.5: "0.5", 100.0: "100", 1e-7: "1e-7", 1e21: "1e+21", -0.0: "-0"}
    assert {v: go_float(v) for v in cases} == cases
    assert as_string(float("nan")) == "json: unsupported value: NaN"


def test_texts_that_are_not_the_type_stay_texts() -> None:
    values = {
        "gen_ai.usage.input_tokens": "12 tokens",
        "gen_ai.request.temperature": "warm",
        "gen_ai.response.finish_reasons": "stop",
        "gen_ai.request.stream": "yes",
        "otel_replay.bytes.result": "not base64!",
        "user.id": "42",
    }
    assert typed_attributes(values) == values
    assert typed_attributes({"gen_ai.usage.input_tokens": "99999999999999999999"}) == {
        "gen_ai.usage.input_tokens": "99999999999999999999"  # past int64: not the exporter's
    }


_BLOCK = st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=12)})


@given(
    index=st.integers(0, 40),
    side=st.sampled_from(["input", "output"]),
    blocks=st.lists(_BLOCK, min_size=1, max_size=4),
    strings=st.lists(st.text(max_size=8), min_size=1, max_size=4),
)
def test_message_content_that_reads_as_json_blocks_stays_the_string_it_was(
    index: int, side: str, blocks: list[dict[str, str]], strings: list[str]
) -> None:
    """An OpenInference message content is a string (the instrumentation's JSON text of the
    blocks an Anthropic tool result was sent as) or an array attribute of strings: the
    table's text of a list of maps is that string, never a list (an attribute array holds
    primitives only), while a list of strings is the array it was."""
    name = f"llm.{side}_messages.{index}.message.content"
    text = json.dumps(blocks, ensure_ascii=False)
    assert typed_attributes({name: text})[name] == text
    assert typed_attributes({name: as_string(strings)})[name] == strings


#: Names whose attributes the conventions make lists, of each kind of list.
_LIST_NAMES = st.sampled_from(
    [
        "gen_ai.response.finish_reasons",
        "llm.input_messages.4.message.content",
        "llm.output_messages.0.message.content",
        A.HTTP_CHUNK_SIZES,
    ]
)
_BLOCKS = st.lists(st.dictionaries(st.text(max_size=6), st.text(max_size=8), max_size=3))
_ITEMS = st.one_of(st.lists(st.text(max_size=12)), st.lists(st.integers(-(2**53), 2**53)), _BLOCKS)


@given(
    name=_LIST_NAMES,
    items=_ITEMS,
    spelt=st.sampled_from(["list", "dumps", "dumps_ascii", "indented"]),
)
def test_a_string_that_spells_a_list_otherwise_than_go_reads_back_as_that_string(
    name: str, items: list[Any], spelt: str
) -> None:
    """The text of a list in the table is Go's JSON of it: a string attribute holding a list
    spelt as Python spells it (a LangChain ToolMessage's content) reads back as that
    string, the list itself (of texts, numbers, or LiteLLM's blocks as maps) as the list;
    only a string spelt exactly as Go spells the list is the list (the table cannot tell
    them apart)."""
    kind = attribute_type(name)
    assert kind in ("strings", "numbers", "list")
    if kind == "strings":
        items = [v if type(v) is str else json.dumps(v) for v in items]
    elif kind == "numbers":
        items = [len(str(v)) for v in items]
    value: Any = {
        "list": items,
        "dumps": json.dumps(items, ensure_ascii=False),
        "dumps_ascii": json.dumps(items),
        "indented": json.dumps(items, indent=1),
    }[spelt]
    back = typed_attributes({name: as_string(value)})[name]
    if as_string(value) == as_string(items):
        event("a string spelt as Go spells the list")
        assert back == items
    else:
        assert back == value and type(back) is type(value)


#: Instrumentations, the type each gives a message content (read in their sources): the
#: LangChain instrumentors (Python, JS), OpenAI's and CrewAI's listener set strings only; LiteLLM
#: sets strings (chat completions) and arrays of blocks (Responses API inputs); one no
#: convention reads (and a table that names no scope) keeps the name's reading.
_CONTENT_SCOPES = {
    "openinference.instrumentation.langchain": "text",
    "@arizeai/openinference-instrumentation-langchain": "text",
    "openinference.instrumentation.openai": "text",
    "openinference.instrumentation.crewai._event_listener": "text",
    "openinference.instrumentation.litellm": "list",
    "some.other.instrumentation": "list",
    "": "list",
}
_GO_LISTS = st.one_of(st.lists(st.text(max_size=12), max_size=4), _BLOCKS)


@given(
    scope=st.sampled_from(sorted(_CONTENT_SCOPES)),
    name=st.builds(
        "llm.{}_messages.{}.message.content".format,
        st.sampled_from(["input", "output"]),
        st.integers(0, 40),
    ),
    items=_GO_LISTS,
    as_text=st.booleans(),
)
def test_a_message_content_reads_back_as_the_type_its_instrumentation_sets(
    scope: str, name: str, items: list[Any], as_text: bool
) -> None:
    """The table keeps a string spelt exactly as Go spells a list and that list as one text
    (a LangChain tool's list of texts; CrewAI's empty list ``[]``): the span's scope
    says which it was.  An instrumentation that sets strings only gets the string back
    whatever its text; one that sets arrays too gets the array back."""
    value: Any = as_string(items) if as_text else items
    back = typed_attributes({name: as_string(value)}, scope)[name]
    if _CONTENT_SCOPES[scope] == "text":
        assert back == as_string(items)
        assert type(back) is str
    else:
        event(f"read as a list ({'a string' if as_text else 'a list'} was written)")
        assert back == items


@given(
    scope=st.one_of(st.sampled_from(sorted(_CONTENT_SCOPES)), st.text(max_size=30)),
    name=st.one_of(
        st.builds(
            "llm.{}_messages.{}.message.content".format,
            st.sampled_from(["input", "output"]),
            st.integers(0, 40),
        ),
        _LIST_NAMES,
        st.sampled_from(["input.value", "tool.parameters", "user.id"]),
    ),
    value=st.one_of(
        _GO_LISTS,
        _GO_LISTS.map(as_string),
        _GO_LISTS.map(json.dumps),
        st.text(max_size=20),
    ),
)
def test_an_attribute_read_as_a_list_no_name_or_scope_fixes_is_said_guessed(
    scope: str, name: str, value: Any
) -> None:
    """Of every attribute, through the exporter's spelling: one read as the list its text
    spells, though neither its name nor the instrumentation's scope fixes its type (a
    string spelt so reads the same: a message content of an instrumentation that may set
    either), is said guessed; one whose name or scope fixes its type, or that stays the
    string, is not."""
    text = as_string(value)
    guessed: list[str] = []
    back = typed_attributes({name: text}, scope, guessed)[name]
    open_type = attribute_type(name, scope) == "list" and not text_contents(scope)
    if open_type and go_list(text):
        event(f"guessed ({'a string' if isinstance(value, str) else 'a list'} was written)")
        assert guessed == [name] and back == json.loads(text)
    else:
        assert guessed == []


_JSON_ROWS = st.lists(
    st.lists(st.one_of(st.text(max_size=6), st.integers(), st.lists(st.text(max_size=4)))),
    max_size=12,
)


@given(
    rows=_JSON_ROWS,
    bad=st.one_of(st.none(), st.sampled_from(["[1,", "{}", "[1] [2]", "x", "[1],[2"])),
    place=st.integers(0, 12),
    cuts=st.lists(st.integers(0, 2000), max_size=6),
)
def test_an_answer_in_any_pieces_gives_its_rows_line_by_line(
    rows: list[list[Any]], bad: str | None, place: int, cuts: list[int]
) -> None:
    """A ``JSONCompactEachRow`` answer, cut anywhere into pieces, with blank lines and at
    most one line that is not one list: the rows of its lines, each read as that line
    alone reads; the wrong line refused where it starts."""
    from otel_replay.sources.clickhouse.database import _lines

    lines = [json.dumps(r) for r in rows]
    lines[min(place, len(lines)) : min(place, len(lines))] = [""]
    if bad is not None:
        lines.insert(min(place, len(lines)), bad)
    text = ("\n".join(lines) + "\n").encode()
    at = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    chunks = [text[a:b] for a, b in itertools.pairwise(at)]
    if bad is None:
        assert list(_lines(chunks, "t", list)) == rows
        return
    with pytest.raises(FormatError) as refused:
        list(_lines(chunks, "t", list))
    assert f"byte {text.index((bad + chr(10)).encode())}" in str(refused.value)
