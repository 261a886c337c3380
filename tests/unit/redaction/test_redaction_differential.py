"""The redaction engine finds exactly what it found before it was made fast.

``_redaction_reference.py`` is the engine's text scan frozen as it stood;
every text drawn here goes through both, as text and as bytes, with the
default settings, with personal data, and with a user's own patterns, and the
two must agree to the character (and on whether anything changed at all).
The engine's layers beyond the reference (escapes decoded more than once,
base64 runs anywhere: ``Redactor._deeper``) are off for that comparison; with
them on, every character the engine hid without them is still hidden.

The engine runs twice for each setting: with its native prefilter (where the
``fast`` extra is installed: Hyperscan tells it where to look) and with its
pure-Python pass alone (``prefilter=False``: the path taken where the extra is
missing), and both must agree with the reference.

The texts are drawn from every class the redaction tests use (secret names in
every wrapping, the secret families, a public scanner's catalogue, the
look-alikes), cut and run together with the engine's own trigger words in
any case, the characters that start and end a word, JSON escapes, UTF-16 and
base64, so that triggers overlap, run on and stand inside one another; text
dense with triggers (configuration, headers, command lines and JSON, a
trigger every few words and a secret of the catalogue on every line, as the
redaction benchmark's); and the repository's own text files are a corpus of
real code, prose and data.
"""

from __future__ import annotations

import base64
import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from benchmarks.bench_redaction import DENSE_LINES as BENCHMARK_LINES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.redaction import INSIDE_WORDS, VALUE_PATTERNS, Redactor
from tests.fixtures.data import ROOT
from tests.fixtures.redaction_reference import ReferenceRedactor
from tests.fixtures.secrets import SECRET_SHAPES
from tests.fixtures.tiers import tiered
from tests.unit.redaction.test_redaction import (
    _WORDS,
    HIDDEN,
    KEPT,
    WRAPPINGS,
    credentials,
    secret_names,
)
from tests.unit.redaction.test_secret_catalogue import draw_secret, rules

#: A user's own value patterns: one hiding a group, one hiding the whole match.
USER_PATTERNS = (r"cust-[0-9]{6}", r"(?i)acct=(?P<v>\w+)")


def _core(engine: Redactor) -> Redactor:
    """``engine`` with its layers beyond the reference off."""
    engine._deeper = False
    engine._json_members = False
    return engine


#: Per setting: the engine's arguments, and its frozen reference.
_SETTINGS_OF: dict[str, tuple[dict[str, Any], ReferenceRedactor]] = {
    "default": ({}, ReferenceRedactor()),
    "personal data": ({"personal_data": True}, ReferenceRedactor(personal_data=True)),
    "user patterns": (
        {"keys": ["custom_id"], "patterns": USER_PATTERNS},
        ReferenceRedactor(USER_PATTERNS),
    ),
}
#: (the engine, its frozen reference) per setting and path: the native prefilter (where
#: the fast extra is installed) and the pure-Python pass alone.
ENGINES = {
    f"{setting}, {path}": (_core(Redactor(**kwargs, prefilter=prefilter)), reference)
    for setting, (kwargs, reference) in _SETTINGS_OF.items()
    for path, prefilter in (("prefiltered", True), ("pure", False))
}
#: The engine as it runs, with its layers beyond the reference.
DEEPER = Redactor()

TRIGGERS = sorted({t for shape in VALUE_PATTERNS for t in shape.triggers} | set(INSIDE_WORDS))


def _overlaps() -> list[str]:
    # Every trigger a rest of a word starts (it runs on) or that starts the rest (it stands
    # inside), found through the triggers' starts: a look at every pair of triggers costs
    # twenty times as much, at every import of the module by a test worker.
    starting: dict[str, list[str]] = {}
    for other in TRIGGERS:
        for i in range(1, len(other) + 1):
            starting.setdefault(other[:i], []).append(other)
    found = set()
    for word in TRIGGERS:
        for k in range(1, len(word)):
            rest = word[k:]
            found.update(word[:k] + other for other in starting.get(rest, ()))
            if any(rest[:i] in TRIGGER_SET for i in range(1, len(rest) + 1)):
                found.add(word)
    return sorted(found)


TRIGGER_SET = frozenset(TRIGGERS)
#: Triggers that run on into another (``dapi`` + ``api_key``) or hold one inside them.
OVERLAPS = _overlaps()

#: What starts, ends and joins words and values: a trigger is looked for after them.
JOINERS = [
    *" \t\n\r",
    *"\"'=:-_.,;/?&@#{}[]()<>|`~+%*!",
    "\\n",
    "\\r",
    '\\"',
    "://",
    ": ",
    " = ",
    "--",
    "[REDACTED]",
    # Escapes: a URL's, JSON text's and HTML's.
    "%20",
    "%3D",
    "%3a",
    "%2",
    "\\u003d",
    "\\u0022",
    "&quot;",
    "&#x3A;",
    "&amp;",
    "\x00",
    # Characters whose lower case is longer or shorter, or not ASCII.
    "\u0130",
    "\u212a",
    "\u00e9",
    "\u00df",
    "\ufb03",
]

_CATALOGUE = rules()


@st.composite
def _cased(draw: st.DrawFn, words: st.SearchStrategy[str]) -> str:
    word = draw(words)
    flips = draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    return "".join(c.upper() if up else c for c, up in zip(word, flips, strict=True))


@st.composite
def _catalogue_secret(draw: st.DrawFn) -> str:
    rule = draw(st.sampled_from(_CATALOGUE))
    secret, whole = draw_secret(rule, random.Random(draw(st.integers(0, 2**32))))
    name = rule["id"].replace("-", "_")
    return draw(
        st.sampled_from(
            [whole, secret, f"{name.upper()}={secret}", f"{name}: {secret}", f"the key {secret}."]
        )
    )


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode()


_piece: st.SearchStrategy[str] = st.one_of(
    st.builds(
        lambda w, n, v: WRAPPINGS[w](n, v),
        st.sampled_from(sorted(WRAPPINGS)),
        secret_names(),
        credentials,
    ),
    SECRET_SHAPES.map(lambda pair: pair[0]),
    _catalogue_secret(),
    st.sampled_from([text for text, _ in HIDDEN] + KEPT + _WORDS),
    _cased(st.sampled_from(TRIGGERS)),
    st.sampled_from(JOINERS),
    credentials,
    st.text(max_size=12),
)
#: Names made of triggers run together and around other letters (``dapi_key``,
#: ``xaccesstoken``), given a value: a trigger inside another's word.
_named_value = st.builds(
    lambda words, sep, value: "".join(words) + sep + value,
    st.lists(
        st.one_of(
            _cased(st.sampled_from(TRIGGERS)),
            _cased(st.sampled_from(OVERLAPS)),
            st.sampled_from(["x", "d", "my", *"_-."]),
        ),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from(["=", ": ", " = ", '": "', "=>", " ", "\\n", "\n"]),
    st.one_of(credentials, st.sampled_from(_WORDS)),
)
#: A piece, or a piece base64-encoded (alone or as a JSON string).
_pieces = st.one_of(
    _piece,
    _named_value,
    _piece.map(_b64),
    _piece.map(lambda p: json.dumps({"content": _b64(p * 2)})),
)


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Pieces run together (a trigger inside, after or over another), maybe as JSON."""
    text = "".join(draw(st.lists(_pieces, min_size=1, max_size=12)))
    form = draw(st.sampled_from(["plain", "json", "base64"]))
    if form == "json":
        return json.dumps({"messages": [{"content": text}]}, ensure_ascii=draw(st.booleans()))
    return _b64(text) if form == "base64" else text


#: Lines of configuration, headers, command lines and JSON, a trigger every few words (the
#: redaction benchmark's, and more): ``{s}`` a value (a secret mostly), ``{name}`` a
#: trigger word (``str.format`` fields).
DENSE_LINES = (
    *BENCHMARK_LINES,
    "{name}={s}",
    "{name}: {s}",
    '"{name}": "{s}",',
    "the {name} is {s}.",
    "| {name} | {s} |",
    "--{name} {s}",
    "{name}:\\n  {s}",
    "{name}:\n  {s}",
    "{s}",
)


@st.composite
def _rule_secret(draw: st.DrawFn) -> str:
    """A secret of one rule of the public scanner's catalogue, as the rule finds it."""
    rule = draw(st.sampled_from(_CATALOGUE))
    return draw_secret(rule, random.Random(draw(st.integers(0, 2**32))))[0]


_value = st.one_of(_rule_secret(), _catalogue_secret(), credentials, st.sampled_from(_WORDS))
_dense_line = st.builds(
    lambda line, name, value: line.format(name=name, s=value),
    st.sampled_from(DENSE_LINES),
    st.one_of(st.sampled_from(TRIGGERS), _cased(st.sampled_from(TRIGGERS)), secret_names()),
    _value,
)


@st.composite
def dense_texts(draw: st.DrawFn) -> str:
    """Lines dense with triggers and secrets, one after another (maybe as JSON text)."""
    lines = draw(st.lists(_dense_line, min_size=1, max_size=40))
    text = draw(st.sampled_from(["\n", "\r\n", "\\n", " ", "; "])).join(lines)
    if draw(st.booleans()):
        return json.dumps({"messages": [{"content": text}]})
    return text


def _covered(spans: list[tuple[int, int]]) -> set[int]:
    return {i for s, e in spans for i in range(s, e)}


def _agree(text: str) -> None:
    for name, (engine, reference) in ENGINES.items():
        out, expected = engine.text(text), reference.text(text)
        assert out == expected, (name, text, out, expected)
        assert (out is text) == (expected is text), (name, text)
    # With the deeper layers: at least what the reference hides.
    wide = DEEPER._wide(text) if "\x00" in text else text
    core = ENGINES["default, prefiltered"][0]
    assert _covered(core._hidden(wide)) <= _covered(DEEPER._hidden(wide)), text


def _agree_bytes(data: bytes) -> None:
    for name, (engine, reference) in ENGINES.items():
        out, expected = engine.data(data), reference.data(data)
        assert out == expected, (name, data, out, expected)
        assert (out is data) == (expected is data), (name, data)


_CODECS = ["utf-8", "utf-16-le", "utf-16-be", "utf-16", "latin-1"]
_SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def _in_any_text(text: str) -> None:
    _agree(text)


def _in_any_bytes(text: str, codec: str) -> None:
    _agree_bytes(text.encode(codec, "surrogatepass" if codec != "latin-1" else "replace"))


# The default tier draws 150 texts here and 100 more as bytes, 100 of named values run together,
# 100 dense texts and 50 more as bytes; the slow tier 5,000, 1,000, 1,000 and 1,000 dense.
test_the_engine_finds_what_the_reference_finds_in_any_text = settings(
    max_examples=150, **_SETTINGS
)(given(texts())(_in_any_text))
test_the_engine_finds_what_the_reference_finds_in_any_bytes = settings(
    max_examples=100, **_SETTINGS
)(given(texts(), st.sampled_from(_CODECS))(_in_any_bytes))
(
    test_the_engine_finds_what_the_reference_finds_where_triggers_run_together,
    test_the_engine_finds_what_the_reference_finds_where_many_triggers_run_together,
) = tiered(100, 1000, st.lists(_named_value, min_size=1, max_size=4).map(" ".join), **_SETTINGS)(
    _in_any_text
)
test_the_engine_finds_what_the_reference_finds_in_text_dense_with_triggers = settings(
    max_examples=100, **_SETTINGS
)(given(dense_texts())(_in_any_text))
test_the_engine_finds_what_the_reference_finds_in_dense_bytes = settings(
    max_examples=50, **_SETTINGS
)(given(dense_texts(), st.sampled_from(_CODECS))(_in_any_bytes))
test_the_engine_finds_what_the_reference_finds_in_much_dense_text = pytest.mark.slow(
    settings(max_examples=1000, **_SETTINGS)(given(dense_texts())(_in_any_text))
)
test_the_engine_finds_what_the_reference_finds_in_many_texts = pytest.mark.slow(
    settings(max_examples=5000, **_SETTINGS)(given(texts())(_in_any_text))
)
test_the_engine_finds_what_the_reference_finds_in_many_bytes = pytest.mark.slow(
    settings(max_examples=1000, **_SETTINGS)(
        given(texts(), st.sampled_from(_CODECS))(_in_any_bytes)
    )
)


def _corpus(under: str = "") -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", under or "."], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    files = []
    for name in listed.split("\0"):
        path = ROOT / name
        if name and path.is_file() and path.stat().st_size <= 512 * 1024:
            files.append(path)
    return files


def _agree_on_files(paths: list[Path]) -> None:
    for path in paths:
        data = path.read_bytes()
        if b"\x00" not in data[:1024]:
            _agree(data.decode("utf-8", "replace"))
        _agree_bytes(data)


#: The engine's own package: its modules name every trigger, run together in code and prose.
_ENGINE_PACKAGE = "src/otel_replay/redaction"


def test_the_engine_finds_what_the_reference_finds_in_its_own_code_and_catalogue() -> None:
    """The engine's own code (it names every trigger) and the scanner's catalogue.

    The rest of the package (ten times the text, the same triggers) is read with
    every other file of the repository in the slow tier.
    """
    engine = [p for p in _corpus(_ENGINE_PACKAGE) if p.suffix == ".py"]
    assert {"patterns.py", "keys.py", "finder.py"} <= {p.name for p in engine}, engine
    catalogue = _corpus("tests/data/gitleaks")
    assert any(p.name == "gitleaks.toml" for p in catalogue), catalogue
    _agree_on_files(engine + catalogue)


@pytest.mark.slow
def test_the_engine_finds_what_the_reference_finds_in_the_repository_files() -> None:
    """Every text file of the repository (code, docs, test data): a real mix of triggers."""
    paths = _corpus()
    assert len(paths) > 500
    _agree_on_files(paths)
