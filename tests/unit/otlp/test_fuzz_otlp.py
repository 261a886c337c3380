"""A structure-aware fuzzer of OTLP requests, against every command that reads them.

Each case starts from a real recording (the order-support example's dump, the
third-party recordings in ``tests/data/thirdparty``) as OTLP/JSON, mutates it
where its structure says a reader looks (any field given a value of another
type, every attribute name the dialects and the run builder read given a value
of every other type, attribute keys that are no text, lone surrogates in text,
times out of range, duplicated, missing and cyclic ids, deep values), and
writes it beside a good run (the example with a trace id of its own) as JSON
lines and, when protobuf can hold it, as a 4-byte framed protobuf dump.

Then ``ls``, ``show``, ``show --json``, ``check``, ``report``, ``diff``,
``regress``, ``convert`` (to both formats, read back), ``export`` (to a
collector on 127.0.0.1), serve's loading path and :func:`otel_replay.load` read the file,
and for every one of them:

- nothing raises: a bad record is at most one line ``otel-replay: error:
  FILE: ... at byte N`` naming the file and where the record starts;
- the good run is still there;
- what is written (terminal, JSON, HTML, a test file) is valid UTF-8.

The attribute names are found in the source (every dotted string literal of
the dialects, the run builder and the attribute constants), not typed here, so
a name a dialect starts reading is fuzzed from then on.
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import re
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.otlp.json_reader import JsonShapeError, request_from_json
from otel_replay.otlp.json_writer import request_to_json
from otel_replay.otlp.sniff import iter_records
from tests.fixtures.data import ROOT, THIRDPARTY, found

#: Bad records are reported after the output, as the CLI does; here they are asserted.
pytestmark = pytest.mark.filterwarnings("ignore::otel_replay.runs.load.LoadWarning")
SRC = ROOT / "src" / "otel_replay"
EXAMPLE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"


# --- seeds: real recordings as OTLP/JSON requests ----------------------------------------


def _example_docs() -> list[dict[str, Any]]:
    docs = []
    for _, body in iter_records(EXAMPLE):
        request = ExportTraceServiceRequest.FromString(body)
        docs.append(json.loads(request_to_json(request)))
    return docs


def _thirdparty_docs() -> list[dict[str, Any]]:
    docs = []
    for path in found(THIRDPARTY, "**/traces.otlp.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip():
                docs.append(json.loads(line))
    return docs


#: The good run planted beside every mutated record: the example, with a trace id of its own.
GOOD_TRACE = "600d" * 8


def _good_doc() -> dict[str, Any]:
    (doc,) = _example_docs()
    for span in _spans(doc):
        span["traceId"] = GOOD_TRACE
    return doc


def _spans(doc: Any) -> list[dict[str, Any]]:
    """The span objects of a request (those still in the shape OTLP/JSON gives them)."""

    def inner(d: Any, key: str) -> list[Any]:
        found = d.get(key) if isinstance(d, dict) else None
        return found if isinstance(found, list) else []

    return [
        span
        for rs in inner(doc, "resourceSpans")
        for ss in inner(rs, "scopeSpans")
        for span in inner(ss, "spans")
        if isinstance(span, dict)
    ]


def _with_logs() -> list[list[dict[str, Any]]]:
    """Recordings whose messages are log records beside their spans (each file's lines)."""
    out = []
    for logs in found(ROOT / "tests" / "data", "**/logs.otlp.jsonl"):
        lines = [*logs.with_name("traces.otlp.jsonl").read_text().splitlines()]
        lines += logs.read_text().splitlines()
        out.append([json.loads(line) for line in lines if line.strip()])
    return out


SEEDS = _example_docs() + _thirdparty_docs()
#: What the fuzzer mutates a request of: every seed alone, and the recordings with logs.
RECORDINGS = [[doc] for doc in SEEDS] + _with_logs()
GOOD = _good_doc()
GOOD_SPANS = len(_spans(GOOD))


# --- what the dialects and the run builder read, from their source ------------------------

_DOTTED = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+\.?")
_NAME = re.compile(r"[a-z][a-z0-9_.]*")
#: Calls whose first argument is an attribute name: ``span.get(NAME)``, ``span.text(NAME)``...
_READS = frozenset({"get", "text", "json", "pop", "setdefault", "_text", "_int", "_str"})
_READERS = [SRC / "attributes.py", SRC / "payload" / "attributes.py"]
_READERS += sorted((SRC / "dialects").glob("*.py")) + sorted((SRC / "runs").glob("*.py"))


def _literals(paths: list[Path]) -> tuple[set[str], set[str]]:
    """The dotted string literals of ``paths``, and the first arguments of their reads."""
    dotted: set[str] = set()
    read: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if _DOTTED.fullmatch(node.value) and not node.value.endswith((".py", ".json")):
                    dotted.add(node.value)
            elif isinstance(node, ast.Call) and node.args:
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                first = node.args[0]
                text = first.value if isinstance(first, ast.Constant) else None
                if name in _READS and isinstance(text, str) and _NAME.fullmatch(text):
                    read.add(text)
    return dotted, read


# The library's sources are parsed when a test first draws from them (not when the module is
# collected: every test worker collects every module, one runs these tests).
@functools.cache
def _read_names() -> tuple[list[str], list[str]]:
    """The attribute names the attribute constants, the dialects, the run builder and the
    payload readers may read (every dotted literal, every literal they get or read by), and
    the prefixes among them (``otel_replay.sha256.``, ``gen_ai.prompt.``)."""
    dotted, read = _literals(_READERS)
    names = sorted(n for n in dotted | read if not n.endswith("."))
    prefixes = sorted(n for n in dotted if n.endswith("."))
    return names, prefixes


@functools.cache
def _scopes() -> list[str]:
    """The instrumentation scopes the dialects know a stack by (their dotted literals)."""
    return sorted(_literals(sorted((SRC / "dialects").glob("*.py")))[0])


def attribute_names() -> st.SearchStrategy[str]:
    """A name read, alone or after a prefix (``otel_replay.sha256.gen_ai.input.messages``,
    ``gen_ai.prompt.0.content``)."""
    names, prefixes = _read_names()
    name = st.sampled_from(names)
    indexed = st.sampled_from(["0.content", "0.role", "1.tool_calls.0.name", "0"])
    return name | st.builds(str.__add__, st.sampled_from(prefixes), name | indexed)


# --- values of every type -----------------------------------------------------------------

#: Text a reader may trip on: a lone surrogate each way, JSON of the wrong shape, numbers.
_TEXTS = st.sampled_from(
    [
        "",
        "abc",
        "\ud800",
        "a\udfffb",
        "-1",
        "NaN",
        "1e400",
        "[1, 2]",
        '{"a": 1}',
        '[{"role": 5, "parts": "x"}]',
        '[{"role": "user", "content": "\\ud800"}]',
        "[" * 300 + "]" * 300,
        "null",
        "chat",
    ]
) | st.text(max_size=12)

_NUMBERS = st.sampled_from([0, -1, -(2**63), 2**63, 2**64, 2**70, 1.5, -0.0, 1.5e300, -1e308])

#: Any JSON value: what a field of the wrong type may hold.
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | _NUMBERS | st.integers() | _TEXTS | st.just(float("nan")),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["a", "key", "value", "stringValue", "values"]), inner, max_size=3
        )
    ),
    max_leaves=6,
)


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "bottom"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


#: OTLP/JSON ``AnyValue``s of every type, well and badly formed.
ANY_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.builds(lambda t: {"stringValue": t}, _TEXTS)
    | st.builds(lambda n: {"intValue": n}, st.integers() | _NUMBERS | st.just("abc"))
    | st.builds(lambda n: {"intValue": str(n)}, st.integers())
    | st.builds(lambda n: {"doubleValue": n}, _NUMBERS | st.sampled_from(["NaN", "Infinity", "x"]))
    | st.builds(lambda b: {"boolValue": b}, JSON_VALUES)
    # "7aCA": the bytes of half a surrogate pair, as an exact payload's bytes may hold them
    | st.builds(lambda b: {"bytesValue": b}, st.sampled_from(["", "AAEC", "!!", "YWJj", "7aCA"]))
    | st.builds(lambda v: {"stringValue": v}, JSON_VALUES)
    | st.sampled_from([{}, None, 5, "x", [], {"arrayValue": None}, {"kvlistValue": {}}])
    | st.builds(_deep, st.sampled_from([40, 70])),
    lambda inner: (
        st.builds(lambda vs: {"arrayValue": {"values": vs}}, st.lists(inner, max_size=3))
        | st.builds(
            lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}},
            st.lists(st.tuples(_TEXTS | st.integers(), inner), max_size=3),
        )
    ),
    max_leaves=5,
)

#: Times of every kind a JSON writer might put: out of range, floats, text, NaN.
BAD_TIMES = st.sampled_from(
    [-5, -1, 2**64, 2**64 - 1, 2**70, 10**30, 1.5, 1.5e300, -1e300, "abc", "NaN", "-5", "1e400",
     "Infinity", str(2**64), "", True, None, [], {}, float("nan"), float("inf")]
)  # fmt: skip


# --- mutations ----------------------------------------------------------------------------


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a JSON value (the root excluded)."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, inner in items:
        yield (*path, key)
        yield from _nodes(inner, (*path, key))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _attribute_lists(doc: Any) -> list[list[Any]]:
    """Every ``attributes`` list of the request: resources', scopes', spans', events', links'."""
    return [
        _get(doc, p)
        for p in _nodes(doc)
        if p[-1] == "attributes" and isinstance(_get(doc, p), list)
    ]


def _wrong_field(data: st.DataObject, doc: Any) -> None:
    """Any field of the request, at any depth, given any JSON value."""
    paths = list(_nodes(doc))
    if paths:
        _set(doc, data.draw(st.sampled_from(paths), "field"), data.draw(JSON_VALUES, "value"))


def _read_attribute(data: st.DataObject, doc: Any) -> None:
    """An attribute a dialect or the run builder reads, given a value of any type, on a
    span (or its resource, an event)."""
    lists = _attribute_lists(doc)
    if not lists:
        return
    attrs = data.draw(st.sampled_from(lists), "attributes")
    for _ in range(data.draw(st.integers(1, 4), "how many")):
        name = data.draw(attribute_names(), "name")
        value = data.draw(ANY_VALUES, "value")
        for kv in attrs:
            if isinstance(kv, dict) and kv.get("key") == name:
                kv["value"] = value
                break
        else:
            attrs.append({"key": name, "value": value})


def _retyped_attribute(data: st.DataObject, doc: Any) -> None:
    """An attribute the record has, given a value of another type."""
    kvs = [kv for attrs in _attribute_lists(doc) for kv in attrs if isinstance(kv, dict)]
    if kvs:
        data.draw(st.sampled_from(kvs), "attribute")["value"] = data.draw(ANY_VALUES, "value")


def _bad_key(data: st.DataObject, doc: Any) -> None:
    """An attribute key that is no text (a number, a list...) or text with a surrogate."""
    kvs = [kv for attrs in _attribute_lists(doc) for kv in attrs if isinstance(kv, dict)]
    if kvs:
        key = data.draw(
            st.sampled_from([5, -1, 1.5, None, True, [], {}, ["a"], "\ud800", "gen_ai.\udc00"])
            | JSON_VALUES,
            "key",
        )
        data.draw(st.sampled_from(kvs), "attribute")["key"] = key


_TIME_FIELDS = ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "observedTimeUnixNano")


def _bad_time(data: st.DataObject, doc: Any) -> None:
    """A span's or event's time out of range, a float, text or NaN."""
    timed = [p[:-1] for p in _nodes(doc) if p[-1] in _TIME_FIELDS and len(p) > 1]
    holders = [_get(doc, p) for p in timed] or _spans(doc)
    if holders:
        holder = data.draw(st.sampled_from(holders), "holder")
        field = data.draw(st.sampled_from(_TIME_FIELDS[:2]), "field")
        if "timeUnixNano" in holder:
            field = "timeUnixNano"
        holder[field] = data.draw(BAD_TIMES, "time")


def _surrogate(data: st.DataObject, doc: Any) -> None:
    """A lone surrogate inside any text: a name, a value, a key, or JSON text's string."""
    paths = [p for p in _nodes(doc) if isinstance(_get(doc, p), str)]
    if not paths:
        return
    path = data.draw(st.sampled_from(paths), "text")
    text = _get(doc, path)
    lone = data.draw(st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"]), "surrogate")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, (list, dict)) and data.draw(st.booleans(), "inside its JSON"):
        # Inside the JSON an attribute holds (messages, arguments): escaped there.
        inner = [p for p in _nodes(parsed) if isinstance(_get(parsed, p), str)]
        if inner:
            at = data.draw(st.sampled_from(inner), "inner text")
            _set(parsed, at, _get(parsed, at) + lone)
            _set(doc, path, json.dumps(parsed))
            return
    cut = data.draw(st.integers(0, len(text)), "at")
    _set(doc, path, text[:cut] + lone + text[cut:])


def _inner_json(data: st.DataObject, doc: Any) -> None:
    """A value inside the JSON an attribute holds (messages, their parts, tool calls and
    definitions, arguments) given a value of any type."""
    paths = [p for p in _nodes(doc) if isinstance(_get(doc, p), str)]
    holding = []
    for path in paths:
        try:
            parsed = json.loads(_get(doc, path))
        except ValueError:
            continue
        if isinstance(parsed, (list, dict)) and parsed:
            holding.append((path, parsed))
    if not holding:
        return
    path, parsed = data.draw(st.sampled_from(holding), "JSON text")
    for _ in range(data.draw(st.integers(1, 3), "how many")):
        inner = list(_nodes(parsed))
        if inner:
            _set(parsed, data.draw(st.sampled_from(inner), "inside"), data.draw(JSON_VALUES))
    _set(doc, path, json.dumps(parsed))


def _ids(data: st.DataObject, doc: Any) -> None:
    """Span ids duplicated, missing, a span its own parent, two spans each other's parent."""
    spans = _spans(doc)
    if not spans:
        return
    how = data.draw(st.sampled_from(["duplicate", "missing", "self", "cycle", "orphan", "trace"]))
    a = data.draw(st.sampled_from(spans), "span")
    b = data.draw(st.sampled_from(spans), "other span")
    if how == "duplicate":
        b["spanId"] = a.get("spanId")
    elif how == "missing":
        a.pop(data.draw(st.sampled_from(["spanId", "traceId", "parentSpanId"]), "id"), None)
    elif how == "self":
        a["parentSpanId"] = a.get("spanId")
    elif how == "cycle":
        a["parentSpanId"], b["parentSpanId"] = b.get("spanId"), a.get("spanId")
    elif how == "orphan":
        a["parentSpanId"] = "00000000000000aa"
    else:
        a["traceId"] = data.draw(st.sampled_from(["", "0" * 32, "f" * 32, "ab" * 16]), "trace")


def _other_stack(data: st.DataObject, doc: Any) -> None:
    """The spans of a scope said to come from another stack a dialect knows."""
    scopes = [p for p in _nodes(doc) if p[-1] == "scope" and isinstance(_get(doc, p), dict)]
    if scopes:
        scope = _get(doc, data.draw(st.sampled_from(scopes), "scope"))
        scope["name"] = data.draw(st.sampled_from(_scopes()), "stack")


MUTATIONS: dict[str, Callable[[st.DataObject, Any], None]] = {
    "other stack": _other_stack,
    "wrong field": _wrong_field,
    "read attribute": _read_attribute,
    "retyped attribute": _retyped_attribute,
    "bad key": _bad_key,
    "bad time": _bad_time,
    "surrogate": _surrogate,
    "ids": _ids,
    "inner JSON": _inner_json,
}


def mutated(data: st.DataObject, doc: Any) -> Any:
    """A copy of request ``doc`` with one to three mutations."""
    doc = copy.deepcopy(doc)
    for name in data.draw(st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=3)):
        MUTATIONS[name](data, doc)
    return doc


# --- the files: the mutated record beside the good run -------------------------------------


def _json_line(doc: Any) -> bytes:
    # As a careless writer would: NaN and lone surrogates as JSON allows Python to spell them.
    return json.dumps(doc).encode() + b"\n"


def _laid_out(records: list[bytes], bad: int, bad_first: bool) -> tuple[bytes, int]:
    """The records of a recording (``bad`` the mutated one) and the good run's record
    (last of ``records``) after or before them; the mutated record's offset."""
    *recording, good = records
    before = [good] if not bad_first else []
    offset = sum(len(r) for r in [*before, *recording[:bad]])
    return b"".join([*before, *recording, *([good] if bad_first else [])]), offset


def json_lines(docs: list[Any], bad: int, bad_first: bool) -> tuple[bytes, int]:
    """JSON lines of a recording whose request ``bad`` is mutated, and the good run."""
    return _laid_out([_json_line(d) for d in (*docs, GOOD)], bad, bad_first)


def framed_proto(docs: list[Any], bad: int, bad_first: bool) -> tuple[bytes, int] | None:
    """The same as a 4-byte framed protobuf dump, when protobuf can hold the requests."""
    try:
        bodies = [request_from_json(d).SerializeToString() for d in (*docs, GOOD)]
    except (JsonShapeError, UnicodeError, ValueError):
        return None
    return _laid_out([struct.pack(">I", len(b)) + b for b in bodies], bad, bad_first)


# --- the commands --------------------------------------------------------------------------

_ERROR = re.compile(r"^otel-replay: error: (?P<path>.+?): .* at (?:byte|record) (?P<at>\d+)")


def _invoke(args: list[str]) -> Any:
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.exc_info,
    )
    out = result.stdout_bytes + result.stderr_bytes
    out.decode("utf-8")  # valid UTF-8: no lone surrogate was written
    assert b"Traceback" not in out, out.decode()
    return result


def _errors_name_the_file(result: Any, path: Path, offsets: set[int]) -> None:
    for line in result.stderr.splitlines():
        if line.startswith("otel-replay: error:"):
            match = _ERROR.match(line)
            assert match and match["path"] == str(path), line
            assert int(match["at"]) in offsets, (line, offsets)


def _listed(result: Any) -> bool:
    return GOOD_TRACE[:16] in result.stdout


def commands(path: Path, bad_offset: int, out: Path) -> None:
    """Every command on ``path`` (a bad record at ``bad_offset`` beside the good run)."""
    offsets = {bad_offset, 0}  # 0: a fault of the whole input
    for args in (
        ["ls", "--no-cache", str(path)],
        ["show", str(path)],
        ["show", "--json", str(path)],
        ["check", str(path)],
        ["report", "-o", str(out / "report"), str(path)],
    ):
        result = _invoke(args)
        _errors_name_the_file(result, path, offsets)
        if args[0] == "report":
            index = (out / "report" / "index.html").read_text(encoding="utf-8")
            assert GOOD_TRACE[:16] in index
            for page in (out / "report").glob("*.html"):
                page.read_bytes().decode("utf-8")
        else:
            assert _listed(result), (args, result.output)
        if args[1] == "--json":
            json.loads(result.stdout)
    _convert_and_export(path, out, offsets)
    runs = otel_replay.load(path)
    assert GOOD_TRACE in {t for r in runs for t in r.trace_ids}
    others = [r for r in runs if GOOD_TRACE not in r.trace_ids]
    for run in runs:
        run.to_json()  # written by show --json, above
        run.final_output()
    _serve_loading(runs)
    _regress(path, GOOD_TRACE[:16], out / "test_good.py")
    for other in others[:1]:
        _invoke(["show", str(path), "--run", other.run_id])
        _invoke(["diff", f"{path}#{GOOD_TRACE[:16]}", f"{path}#{other.run_id}"])
        _regress(path, other.run_id, out / "test_bad.py")


#: The OTLP/HTTP collector ``export`` sends to (see :func:`_collector`).
_ENDPOINT: list[str] = []


def _convert_and_export(path: Path, out: Path, offsets: set[int]) -> None:
    """``convert`` to each format (the good run converted, and read back) and ``export``
    to a collector on 127.0.0.1 (the good run's spans sent)."""
    for fmt in ("json", "proto"):
        converted = out / f"converted.{fmt}"
        result = _invoke(["convert", "--format", fmt, "-o", str(converted), str(path)])
        _errors_name_the_file(result, path, offsets)
        runs = otel_replay.load(converted)
        assert GOOD_TRACE in {t for r in runs for t in r.trace_ids}, fmt
    (endpoint,) = _ENDPOINT
    result = _invoke(["export", "--endpoint", endpoint, "--trace", GOOD_TRACE, str(path)])
    _errors_name_the_file(result, path, offsets)
    assert result.stdout.startswith(f"sent {GOOD_SPANS} spans"), result.output


@pytest.fixture(scope="module", autouse=True)
def _collector() -> Iterator[None]:
    from tests.fixtures.secrets import collector

    with collector() as (endpoint, _):
        _ENDPOINT.append(endpoint)
        yield
        _ENDPOINT.clear()


def _regress(path: Path, run_id: str, test: Path) -> None:
    """``regress`` of one run: the test it writes (if any) is Python, in UTF-8."""
    args = ["regress", str(path), "--run", run_id, "--agent", "agent:run", "-o", str(test)]
    result = _invoke(args)
    if result.exit_code == 0:
        source = test.read_bytes()
        compile(source.decode("utf-8"), str(test), "exec")


def _serve_loading(runs: Any) -> None:
    """What ``serve`` does with the runs before it listens: each checked, the good ones
    made an engine."""
    from otel_replay.replay.engine import ReplayEngine
    from otel_replay.replay.servable import servable

    good = [r for r in runs if not any(p.kind == "inspect_only" for p in servable(r))]
    ReplayEngine(good)


@pytest.fixture(scope="module", autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """What ``ls`` keeps between runs is kept away from the user's own."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


def _case(data: st.DataObject, tmp: Path) -> None:
    docs = list(data.draw(st.sampled_from(RECORDINGS), "recording"))
    bad = data.draw(st.integers(0, len(docs) - 1), "mutated request")
    docs[bad] = mutated(data, docs[bad])
    bad_first = data.draw(st.booleans(), "bad first")
    files = [("jsonl", json_lines(docs, bad, bad_first))]
    proto = framed_proto(docs, bad, bad_first)
    if proto is not None:
        files.append(("otlp", proto))
    for suffix, (content, offset) in files:
        out = Path(tempfile.mkdtemp(dir=tmp))
        path = out / f"input.{suffix}"
        path.write_bytes(content)
        commands(path, offset, out)
        shutil.rmtree(out)


_QUICK = settings(
    max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


@_QUICK
@given(st.data())
def test_every_command_reads_a_mutated_request_beside_a_good_run(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    _case(data, tmp_path_factory.mktemp("fuzz"))


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_every_command_reads_many_mutated_requests(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    _case(data, tmp_path_factory.mktemp("fuzz"))


# --- the classes the fuzzer found, each drawn wide ------------------------------------------

from otel_replay.sources.reader import RecordReader  # noqa: E402


def _with_good(tmp_path: Path, bad: Any, *, raw: bytes | None = None) -> tuple[Path, int]:
    """JSON lines: the good run, the bad request, the good run again (another trace id):
    the bad line's offset.  ``raw``: the bad line's bytes as they are."""
    again = copy.deepcopy(GOOD)
    for span in _spans(again):
        span["traceId"] = "beef" * 8
    first = _json_line(GOOD)
    line = raw if raw is not None else _json_line(bad)
    path = tmp_path / "in.jsonl"
    path.write_bytes(first + line + _json_line(again))
    return path, len(first)


def _costs_its_line(path: Path, offset: int, says: str) -> None:
    """The bad line is one fault, at its offset, saying ``says``; both good runs are read."""
    reader = RecordReader(path)
    traces = {r.trace_id for r in reader}
    assert {GOOD_TRACE, "beef" * 8} <= traces, reader.problems
    (problem,) = reader.problems
    assert (problem.path, problem.offset) == (str(path), offset), problem
    assert says in problem.reason and "\n" not in str(problem), problem
    result = _invoke(["ls", "--no-cache", str(path)])
    assert result.exit_code == 2 and _listed(result) and "beefbeef" in result.stdout
    (line,) = result.stderr.splitlines()
    assert _ERROR.match(line) and f"at byte {offset}" in line, line


_NOT_TEXT = JSON_VALUES.filter(lambda v: not isinstance(v, str))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(key=_NOT_TEXT, where=st.integers(0, 1000), data=st.data())
def test_an_attribute_key_that_is_not_text_costs_its_line(
    tmp_path_factory: pytest.TempPathFactory, key: Any, where: int, data: st.DataObject
) -> None:
    """A key that is a number, a list, null...: on a span, its resource, an event, a
    link, or inside a kvlist value."""
    bad = copy.deepcopy(data.draw(st.sampled_from(SEEDS), "seed"))
    lists = _attribute_lists(bad)
    kvs = [kv for attrs in lists for kv in attrs if isinstance(kv, dict)]
    kvs[where % len(kvs)]["key"] = key
    _costs_its_line(*_with_good(tmp_path_factory.mktemp("key"), bad), "attribute key")


_TIMES = st.sampled_from(
    [-5, -1, 2**64, 2**70, 10**30, 1.5, 1.5e300, -1e300, "abc", "NaN", "-5", "1e400",
     "Infinity", str(2**64), "", True, [], {}, [1], float("nan"), float("inf"), 0.5]
)  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    field=st.sampled_from(["startTimeUnixNano", "endTimeUnixNano", "event timeUnixNano"]),
    time=_TIMES,
    seed=st.sampled_from(range(len(SEEDS))),
)
def test_a_time_out_of_range_or_no_integer_costs_its_line(
    tmp_path_factory: pytest.TempPathFactory, field: str, time: Any, seed: int
) -> None:
    """Negative, past 64 bits, fractional, NaN, infinite, text: no time a writer meant."""
    bad = copy.deepcopy(SEEDS[seed])
    span = _spans(bad)[0]
    if field.startswith("event"):
        span.setdefault("events", []).append({"name": "e", "timeUnixNano": time})
    else:
        span[field] = time
    path, offset = _with_good(tmp_path_factory.mktemp("time"), bad)
    _costs_its_line(path, offset, field.removeprefix("event "))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_line_with_a_field_of_the_wrong_type_costs_only_that_line(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Any field at any depth given any JSON value: the line is read, or it is one fault;
    the good runs before and after it are read either way."""
    bad = copy.deepcopy(data.draw(st.sampled_from(SEEDS), "seed"))
    _wrong_field(data, bad)
    path, offset = _with_good(tmp_path_factory.mktemp("field"), bad)
    reader = RecordReader(path)
    traces = {r.trace_id for r in reader}
    assert {GOOD_TRACE, "beef" * 8} <= traces, reader.problems
    assert all(p.offset == offset and "\n" not in str(p) for p in reader.problems)


#: Well-formed AnyValues of any type.
_WELL_FORMED: st.SearchStrategy[Any] = st.recursive(
    st.builds(lambda t: {"stringValue": t}, _TEXTS)
    | st.builds(lambda n: {"intValue": str(n)}, st.integers(-(2**63), 2**63 - 1))
    | st.builds(lambda b: {"boolValue": b}, st.booleans()),
    lambda inner: (
        st.builds(lambda vs: {"arrayValue": {"values": vs}}, st.lists(inner, max_size=3))
        | st.builds(
            lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}},
            st.lists(st.tuples(st.text(max_size=5), inner), max_size=3),
        )
    ),
    max_leaves=4,
)
#: AnyValues of every type but text, well formed: what a dialect may find where it reads text.
_OTHER_TYPES = {
    "array": st.builds(
        lambda vs: {"arrayValue": {"values": vs}}, st.lists(_WELL_FORMED, max_size=3)
    ),
    "kvlist": st.builds(
        lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}},
        st.lists(st.tuples(st.text(max_size=5), _WELL_FORMED), max_size=3),
    ),
    "int": st.builds(lambda n: {"intValue": str(n)}, st.integers(-(2**63), 2**63 - 1)),
    "double": st.builds(lambda x: {"doubleValue": x}, st.floats(allow_nan=False, width=64)),
    "bool": st.builds(lambda b: {"boolValue": b}, st.booleans()),
    "bytes": st.just({"bytesValue": "7aCA"}),
}


@pytest.mark.parametrize("kind", sorted(_OTHER_TYPES))
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_an_operation_name_of_another_type_names_no_operation(
    tmp_path_factory: pytest.TempPathFactory, kind: str, data: st.DataObject
) -> None:
    """``gen_ai.operation.name`` as an array, a map, a number...: on spans of any stack a
    dialect knows, as JSON and as protobuf; every run is still read and shown."""
    bad = copy.deepcopy(data.draw(st.sampled_from(SEEDS), "seed"))
    value = data.draw(_OTHER_TYPES[kind], "value")
    for rs in bad["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            ss.setdefault("scope", {})["name"] = data.draw(st.sampled_from(_scopes()), "stack")
    for span in _spans(bad):
        attrs = [a for a in span.get("attributes", []) if a["key"] != "gen_ai.operation.name"]
        span["attributes"] = [*attrs, {"key": "gen_ai.operation.name", "value": value}]
    out = tmp_path_factory.mktemp("op")
    files = [json_lines([bad], 0, True), framed_proto([bad], 0, True)]
    for n, (content, _) in enumerate(f for f in files if f is not None):
        path = out / f"in{n}.otlp"
        path.write_bytes(content)
        traces = {t for r in otel_replay.load(path, strict=True) for t in r.trace_ids}
        assert GOOD_TRACE in traces and len(traces) > 1
        for args in (["ls", "--no-cache"], ["show"], ["check"]):
            result = _invoke([*args, str(path)])
            assert result.exit_code in (0, 1) and _listed(result), result.output


def _strings(value: Any) -> Iterator[str]:
    """Every string in a record's value, keys included."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), raw=st.booleans())
def test_half_a_surrogate_pair_anywhere_is_read_as_a_replacement_character(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, raw: bool
) -> None:
    """In a name, a value, an attribute key, or the JSON an attribute holds; escaped
    (``\\ud800``) or as its bytes (which JSON readers take too): every string read is
    text an encoder can write, every run is kept, and every command writes UTF-8."""
    bad = copy.deepcopy(data.draw(st.sampled_from(SEEDS), "seed"))
    for _ in range(data.draw(st.integers(1, 3), "how many")):
        _surrogate(data, bad)
    line = json.dumps(bad, ensure_ascii=not raw).encode("utf-8", "surrogatepass") + b"\n"
    out = tmp_path_factory.mktemp("surrogate")
    path, offset = _with_good(out, bad, raw=line)
    reader = RecordReader(path)
    records = list(reader)
    # Half a pair in an id, a time or an enum's name makes them no id, time or name.
    assert all(p.offset == offset for p in reader.problems), reader.problems
    assert {GOOD_TRACE, "beef" * 8} <= {r.trace_id for r in records}
    for record in records:
        fields = [record.name, record.attributes, record.resource, record.scope_name]
        fields += [(e.name, e.attributes) for e in record.events]  # type: ignore[union-attr]
        for text in _strings(fields):
            text.encode("utf-8")
    for args in (["ls", "--no-cache"], ["show"], ["show", "--json"], ["check"]):
        result = _invoke([*args, str(path)])
        assert result.exit_code in (0, 1, 2) and _listed(result), result.output
    _invoke(["report", "-o", str(out / "report"), str(path)])


def test_an_agent_s_own_half_surrogate_is_shown_escaped(tmp_path: Path) -> None:
    """A string the agent itself held half a pair in, recorded exactly by the SDK and our
    exporter, is shown as its escape by every command, piped as a user runs them."""
    from tests.fixtures.cli import cli_process
    from tests.fixtures.recording import recording

    @otel_replay.tool(name="lookup")
    def lookup(query: str) -> str:
        return "result \ud800 and \udfff"

    path = tmp_path / "run.otlp"
    with recording(path), otel_replay.agent_run("agent", input="question") as run:
        lookup(query="q")
        run.record("answer")
    for args in (["show"], ["show", "--json"], ["check"], ["ls", "--no-cache"]):
        done = cli_process(*args, path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        if args[0] == "show":
            assert "\\ud800" in done.stdout, done.stdout
    (run_,) = otel_replay.load(path)
    assert run_.steps[1].tool is not None
    assert run_.steps[1].tool.result == "result \ud800 and \udfff"  # read exactly, shown escaped
    report = tmp_path / "report"
    done = cli_process("report", "-o", report, path)
    assert done.returncode == 0, done.stderr
    assert any("\\ud800" in p.read_text(encoding="utf-8") for p in report.glob("run-*.html"))


_CALL_FIELDS = re.compile(r"(tool_call\.(id|function\.name)|tool_call_id)$")


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_tool_call_s_name_or_id_of_another_type_is_read_around(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """A tool call's id or name that is a list, a map, a number...: in the messages a span
    holds as JSON (``gen_ai.output.messages``' tool_call parts) and in OpenInference's
    flattened attributes (``llm.output_messages.0.message.tool_calls.0.tool_call.id``)."""
    with_calls = [
        d for d in SEEDS if "tool_call" in json.dumps(d)
    ]  # the recordings whose model called a tool
    bad = copy.deepcopy(data.draw(st.sampled_from(with_calls), "seed"))
    other = _NOT_TEXT.filter(lambda v: v is not None and v == v)  # NaN: not JSON text
    for attrs in _attribute_lists(bad):
        for kv in attrs:
            value = kv.get("value") or {}
            if _CALL_FIELDS.search(kv.get("key", "")):
                kv["value"] = data.draw(st.one_of(*_OTHER_TYPES.values()), "attribute")
            elif (
                isinstance(value.get("stringValue"), str) and '"tool_call"' in value["stringValue"]
            ):
                messages = json.loads(value["stringValue"])
                for part in (p for m in messages for p in m.get("parts", [])):
                    if part.get("type") == "tool_call":
                        part[data.draw(st.sampled_from(["id", "name"]))] = data.draw(other)
                value["stringValue"] = json.dumps(messages)
    path, _ = _with_good(tmp_path_factory.mktemp("calls"), bad)
    assert len(otel_replay.load(path)) >= 3
    for args in (["ls", "--no-cache"], ["show"], ["check"], ["show", "--json"]):
        result = _invoke([*args, str(path)])
        assert _listed(result) and "beefbeef" in result.stdout, result.output


def test_the_found_classes_as_a_user_meets_them(tmp_path: Path) -> None:
    """One dump holding a record of each class, beside good runs, read by the real CLI
    in its own process: each bad record one line naming the file and its offset, the rest
    listed, shown and checked, never a traceback."""
    from tests.fixtures.cli import cli_process

    def retraced(doc: Any, trace: str) -> Any:
        doc = copy.deepcopy(doc)
        for span in _spans(doc):
            span["traceId"] = trace
        return doc

    def spans_where(doc: Any, change: Callable[[dict[str, Any]], None]) -> Any:
        for span in _spans(doc):
            change(span)
        return doc

    def attribute(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
        def change(span: dict[str, Any]) -> None:
            kept = [a for a in span.get("attributes", []) if a["key"] != name]
            span["attributes"] = [*kept, {"key": name, "value": value}]

        return change

    array = {"arrayValue": {"values": [{"stringValue": "chat"}]}}
    good = [retraced(GOOD, "a1" * 16), retraced(GOOD, "a2" * 16)]
    readable = {  # runs of odd values, still read
        "a3" * 16: spans_where(
            retraced(GOOD, "a3" * 16), attribute("gen_ai.operation.name", array)
        ),
        "a4" * 16: spans_where(
            retraced(GOOD, "a4" * 16), attribute("gen_ai.agent.name", {"stringValue": "x\ud800"})
        ),
    }
    bad = [  # records that are not OTLP
        spans_where(retraced(GOOD, "b1" * 16), lambda s: s["attributes"].append({"key": 5})),
        spans_where(retraced(GOOD, "b2" * 16), lambda s: s.update(startTimeUnixNano=-5)),
        spans_where(retraced(GOOD, "b3" * 16), lambda s: s.update(endTimeUnixNano=1.5e300)),
        spans_where(retraced(GOOD, "b4" * 16), lambda s: s.update(status=["x"])),
    ]
    lines = [_json_line(d) for d in (good[0], *bad, *readable.values(), good[1])]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"".join(lines))
    offsets = {sum(map(len, lines[:i])) for i in range(1, 1 + len(bad))}
    listed = ["a1" * 8, "a2" * 8, *(t[:16] for t in readable)]
    for args in (["ls", "--no-cache"], ["show"], ["check"], ["show", "--json"]):
        done = cli_process(*args, path)
        # check: runs that may have lost records fail it (1); the others: faults are 2
        expected = 1 if args[0] == "check" else 2
        assert "Traceback" not in done.stderr and done.returncode == expected, (args, done.stderr)
        errors = done.stderr.splitlines()
        assert {int(m["at"]) for m in map(_ERROR.match, errors) if m} == offsets, errors
        assert all(str(path) in e for e in errors) and len(errors) == len(bad), errors
        assert all(run in done.stdout for run in listed), (args, done.stdout)
    report = tmp_path / "report"
    done = cli_process("report", "-o", report, path)
    assert "Traceback" not in done.stderr and len(list(report.glob("run-*.html"))) == 4
    done = cli_process("diff", f"{path}#{'a1' * 8}", f"{path}#{'a3' * 8}")
    assert "Traceback" not in done.stderr and done.returncode in (1, 2), done.stderr


def _json_attributes() -> dict[str, list[int]]:
    """The attributes of the seeds holding JSON with a list inside (messages, tool
    definitions, request parameters...), and which seeds hold each."""
    found: dict[str, list[int]] = {}
    for n, doc in enumerate(SEEDS):
        for attrs in _attribute_lists(doc):
            for kv in attrs:
                text = (kv.get("value") or {}).get("stringValue")
                try:
                    parsed = json.loads(text) if isinstance(text, str) else None
                except ValueError:
                    continue
                if any(isinstance(_get(parsed, p), list) for p in _nodes(parsed)):
                    found.setdefault(kv["key"], []).append(n)
    return found


JSON_ATTRIBUTES = _json_attributes()


@pytest.mark.parametrize("name", sorted(JSON_ATTRIBUTES))
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_list_inside_an_attribute_s_json_of_another_type_is_read_around(
    tmp_path_factory: pytest.TempPathFactory, name: str, data: st.DataObject
) -> None:
    """Every attribute the recordings hold JSON with lists in (messages, tool definitions,
    a framework's request parameters), one of those lists made a number, text, a map...:
    the runs are still read and shown."""
    bad = copy.deepcopy(SEEDS[data.draw(st.sampled_from(JSON_ATTRIBUTES[name]), "seed")])
    not_list = JSON_VALUES.filter(lambda v: not isinstance(v, list) and v == v)
    for attrs in _attribute_lists(bad):
        for kv in attrs:
            if kv.get("key") == name:
                parsed = json.loads(kv["value"]["stringValue"])
                lists = [p for p in [(), *_nodes(parsed)] if isinstance(_get(parsed, p), list)]
                if not lists:
                    continue
                at = data.draw(st.sampled_from(lists), "list")
                if at:
                    _set(parsed, at, data.draw(not_list))
                else:  # the attribute's whole value
                    parsed = data.draw(not_list)
                kv["value"]["stringValue"] = json.dumps(parsed)
    path, _ = _with_good(tmp_path_factory.mktemp("lists"), bad)
    assert len(otel_replay.load(path)) >= 3
    for args in (["ls", "--no-cache"], ["show"], ["check"]):
        result = _invoke([*args, str(path)])
        assert _listed(result) and "beefbeef" in result.stdout, result.output


#: What a list in recorded JSON may be instead: each type once.
_NOT_LISTS = (True, 5, 1.5, "text", {"k": 1})


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(JSON_ATTRIBUTES))
def test_every_list_inside_an_attribute_s_json_made_each_other_type_is_read_around(
    tmp_path: Path, name: str
) -> None:
    """The drawn test above, made exhaustive over recordings and types, and over the first
    lists of each (a message's parts as ``true`` once slipped through eight draws)."""
    positions = []
    for seed in (SEEDS[i] for i in JSON_ATTRIBUTES[name]):
        found = []
        for attrs in _attribute_lists(seed):
            for k, kv in enumerate(attrs):
                if kv.get("key") == name:
                    parsed = json.loads(kv["value"]["stringValue"])
                    found += [
                        (seed, attrs, k, p)
                        for p in _nodes(parsed)
                        if isinstance(_get(parsed, p), list)
                    ]
        positions += found[:6]
    assert positions
    for n, (seed, attrs, k, at) in enumerate(positions):
        for value in _NOT_LISTS:
            original = attrs[k]["value"]["stringValue"]
            parsed = json.loads(original)
            _set(parsed, at, value)
            attrs[k]["value"]["stringValue"] = json.dumps(parsed)
            try:
                directory = tmp_path / f"{n}-{type(value).__name__}"
                directory.mkdir()
                path, _ = _with_good(directory, seed)
                runs = otel_replay.load(path)
                assert len(runs) >= 3
                for run in runs:
                    assert run.steps is not None and run.kit is not None
            finally:
                attrs[k]["value"]["stringValue"] = original
