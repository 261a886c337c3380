"""The redaction engine finds the same with its Hyperscan prefilter as without it.

The pure-Python pass (``Redactor(prefilter=False)``) is the engine as it was
before the prefilter: the prefilter only tells it where to look.  Every text
drawn here goes through both, as text, as bytes and inside a payload walked by
``scrub`` (with the paths each reports hidden), with the default settings,
with personal data and with a user's own patterns, and the two must agree to
the character, and on whether anything changed at all.

The texts: every class the redaction tests draw (secret names in every
wrapping, the secret families, a public scanner's catalogue, the look-alikes),
the engine's trigger words run together and inside one another, random text,
each alone or put in the contexts a secret travels in (JSON text, JSON text in
JSON, YAML, a query string, URL-, HTML- and base64-encoded), and text that is
not ASCII (a character lowered to two, wide characters, UTF-16 bytes).  Text
dense with triggers, secrets of the whole catalogue put in at random places,
long enough for the prefilter's many reports, goes through both as text and as
bytes in each encoding (UTF-16 whole, or after a binary header).
"""

from __future__ import annotations

import base64
import html
import json
import os
import random
import sys
import threading
import urllib.parse
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.redaction import Redactor
from otel_replay.redaction import prefilter as redaction_prefilter
from tests.fixtures.tiers import tiered
from tests.unit.redaction.test_redaction import HIDDEN, KEPT
from tests.unit.redaction.test_redaction_differential import (
    JOINERS,
    TRIGGERS,
    USER_PATTERNS,
    _named_value,
    _rule_secret,
    dense_texts,
    texts,
)
from tests.unit.redaction.test_secret_catalogue import draw_secret, rules

if os.environ.get("CI"):
    import hyperscan  # noqa: F401  (CI installs the fast extra: the prefilter is tested there)
else:
    pytest.importorskip("hyperscan")

#: (with the prefilter, the pure pass) per setting.
ENGINES = {
    "default": (Redactor(), Redactor(prefilter=False)),
    "personal data": (Redactor(personal_data=True), Redactor(personal_data=True, prefilter=False)),
    "user patterns": (
        Redactor(keys=["custom_id"], patterns=USER_PATTERNS),
        Redactor(keys=["custom_id"], patterns=USER_PATTERNS, prefilter=False),
    ),
}

#: The contexts a secret travels in, each a function of the text.
CONTEXTS = {
    "as is": lambda t: t,
    "JSON": lambda t: json.dumps({"messages": [{"role": "user", "content": t}]}),
    "JSON, not ASCII": lambda t: json.dumps({"content": t}, ensure_ascii=False),
    "JSON in JSON": lambda t: json.dumps({"arguments": json.dumps({"text": t})}),
    "YAML": lambda t: "config:\n  note: |\n    " + t.replace("\n", "\n    ") + "\n",
    "query": lambda t: "https://api.example.com/v1/x?q=" + urllib.parse.quote(t) + "&n=2",
    "URL-encoded twice": lambda t: urllib.parse.quote(urllib.parse.quote(t)),
    "HTML": lambda t: '<p title="' + html.escape(t) + '">' + html.escape(t) + "</p>",
    "base64": lambda t: base64.b64encode(t.encode("utf-8", "surrogatepass")).decode(),
    "prose around": lambda t: "We looked at the order, then " + t + " and sent it on.",
}

_SETTINGS: Any = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def _agree(text: str) -> None:
    for name, (fast, pure) in ENGINES.items():
        out, expected = fast.text(text), pure.text(text)
        assert out == expected, (name, text, out, expected)
        assert (out is text) == (expected is text), (name, text)
        data = text.encode("utf-8", "surrogatepass")
        got, want = fast.data(data), pure.data(data)
        assert got == want, (name, data, got, want)
        assert (got is data) == (want is data), (name, data)


def _agree_scrubbed(value: Any) -> None:
    for name, (fast, pure) in ENGINES.items():
        hidden_fast: list[str] = []
        hidden_pure: list[str] = []
        out = fast.scrub(value, "root", hidden_fast)
        expected = pure.scrub(value, "root", hidden_pure)
        assert out == expected, (name, value)
        assert hidden_fast == hidden_pure, (name, value, hidden_fast, hidden_pure)


_junk = st.lists(
    st.one_of(st.characters(codec="utf-8", exclude_categories=("Cs",)), st.sampled_from(JOINERS)),
    max_size=30,
).map("".join)
_mixed = st.lists(
    st.one_of(texts(), _named_value, _junk, st.sampled_from(TRIGGERS)), min_size=1, max_size=6
).map("".join)


def _found_alike_in_any_text(text: str, context: str) -> None:
    _agree(CONTEXTS[context](text))


(
    test_the_prefilter_finds_what_the_pure_pass_finds_in_any_text,
    test_the_prefilter_finds_what_the_pure_pass_finds_in_many_texts,
) = tiered(100, 300, _mixed, st.sampled_from(sorted(CONTEXTS)), **_SETTINGS)(
    _found_alike_in_any_text
)


@settings(max_examples=100, **_SETTINGS)
@given(_mixed, st.sampled_from(["utf-16-le", "utf-16-be", "utf-16"]))
def test_the_prefilter_finds_what_the_pure_pass_finds_in_wide_text(text: str, codec: str) -> None:
    data = text.encode(codec, "surrogatepass")
    for name, (fast, pure) in ENGINES.items():
        assert fast.data(data) == pure.data(data), (name, data)


@st.composite
def _dense_with_secrets(draw: st.DrawFn) -> str:
    """Text dense with triggers (configuration, headers, command lines, JSON: a trigger
    every few words, a secret on every line), secrets of the whole catalogue and of
    every family put in at random places (inside a word, a trigger, a line), and long
    enough, some of it, for the prefilter's many reports."""
    text = draw(dense_texts()) * draw(st.sampled_from([1, 4, 16]))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        secret = draw(st.one_of(_rule_secret(), _named_value, st.sampled_from(TRIGGERS)))
        text = text[:at] + secret + text[at:]
    return text


#: How dense text travels: as text, and as bytes in each encoding (UTF-16 whole, or a run
#: of it after a binary header at an odd or even offset).
_ENCODINGS = {
    "text": lambda t: t,
    "utf-8": lambda t: t.encode("utf-8", "surrogatepass"),
    "latin-1": lambda t: t.encode("latin-1", "replace"),
    "utf-16-le": lambda t: t.encode("utf-16-le", "surrogatepass"),
    "utf-16-be": lambda t: t.encode("utf-16-be", "surrogatepass"),
    "utf-16": lambda t: t.encode("utf-16", "surrogatepass"),
    "utf-16-le after a header": lambda t: (
        b"\x89PNG\x00\x01\x02" + t.encode("utf-16-le", "surrogatepass") + b"\xff\x00"
    ),
    "utf-16-be at an odd offset": lambda t: b"%\x00\x07" + t.encode("utf-16-be", "surrogatepass"),
}


def _found_alike_in_dense_text(text: str, encoding: str) -> None:
    value = _ENCODINGS[encoding](text)
    for name, (fast, pure) in ENGINES.items():
        if isinstance(value, str):
            out, expected = fast.text(value), pure.text(value)
            assert out == expected, (name, value, out, expected)
            assert (out is value) == (expected is value), (name, value)
        else:
            got, want = fast.data(value), pure.data(value)
            assert got == want, (name, encoding, value, got, want)
            assert (got is value) == (want is value), (name, value)


(
    test_the_prefilter_finds_what_the_pure_pass_finds_in_dense_text,
    test_the_prefilter_finds_what_the_pure_pass_finds_in_much_dense_text,
) = tiered(60, 600, _dense_with_secrets(), st.sampled_from(sorted(_ENCODINGS)), **_SETTINGS)(
    _found_alike_in_dense_text
)


def _same_hidden_paths(members: list[tuple[str, str]]) -> None:
    """Payloads as capture and the exporters walk them: names that are secrets, names that
    hold one, values that hold one; the same values out, the same paths reported."""
    payload = {
        "messages": [{"role": "user", "content": value} for _, value in members],
        "headers": {name: value for name, value in members},
        **{f"{name}_{i}": value for i, (name, value) in enumerate(members)},
        "raw": [value.encode("utf-8", "surrogatepass") for _, value in members],
    }
    _agree_scrubbed(payload)


(
    test_the_prefilter_reports_the_same_hidden_paths,
    test_the_prefilter_reports_the_same_hidden_paths_of_many_payloads,
) = tiered(
    35,
    100,
    st.lists(st.tuples(st.sampled_from([*TRIGGERS, "note", "x"]), _mixed), max_size=5),
    **_SETTINGS,
)(_same_hidden_paths)


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_the_prefilter_finds_what_the_pure_pass_finds_in_every_example(context: str) -> None:
    """Every example the redaction tests hide or keep, in every context."""
    for text in [t for t, _ in HIDDEN] + KEPT:
        _agree(CONTEXTS[context](text))


@pytest.mark.parametrize("rule", rules(), ids=lambda rule: rule["id"])
def test_the_prefilter_finds_what_the_pure_pass_finds_for_every_catalogue_rule(
    rule: dict[str, Any],
) -> None:
    """Each rule of the public scanner's catalogue, drawn three times, named and not, in
    every context."""
    rng = random.Random(rule["id"])
    for _ in range(3):
        secret, whole = draw_secret(rule, rng)
        name = rule["id"].replace("-", "_")
        for text in (whole, f"{name.upper()}={secret}", f"the {name} is {secret}."):
            for wrap in CONTEXTS.values():
                _agree(wrap(text))


def test_without_hyperscan_the_pure_pass_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the package is missing (or fails), the engine runs its pure pass and finds
    the same."""
    monkeypatch.setitem(sys.modules, "hyperscan", None)
    monkeypatch.setattr(redaction_prefilter, "_made", {})
    patterns = [*USER_PATTERNS, "never-[0-9]+"]
    alone = Redactor(patterns=patterns)
    text = "password: hunter2x9 and sk-" + "a1" * 12 + " cust-123456, " * 30
    assert alone.text(text) == Redactor(patterns=patterns, prefilter=False).text(text)
    assert "hunter2x9" not in alone.text(text)
    assert alone._shapes._prefilter is None
    assert ENGINES["default"][0]._shapes._prefilter is not None


def test_threads_scrubbing_at_once_find_what_one_finds() -> None:
    """A Hyperscan scratch serves one scan at a time: each thread has its own, and texts
    scrubbed from many threads at once come out as from one."""
    rng = random.Random(7)
    lines = [t for t, _ in HIDDEN] + KEPT
    docs = [" ".join(rng.choice(lines) for _ in range(60)) * 3 for _ in range(40)]
    fast, pure = Redactor(), Redactor(prefilter=False)
    expected = [pure.text(d) for d in docs]
    results: dict[int, list[str]] = {}

    def scrub(n: int) -> None:
        results[n] = [fast.text(d) for d in docs for _ in range(3)][::3]

    threads = [threading.Thread(target=scrub, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[n] == expected for n in range(6))
    prefilter = fast._shapes._prefilter
    assert prefilter is not None and prefilter.failures == 0  # none fell back to the pure pass


def test_a_scan_hyperscan_fails_is_made_by_the_pure_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan the library fails (an error of its own, a scratch in use) never fails the
    scrub: that text goes through the pure pass and comes out the same."""
    fast, pure = ENGINES["default"]
    fast.text("password=hunter2x9 " * 20)  # this thread's scratch made
    prefilter = fast._shapes._prefilter
    assert prefilter is not None

    class Failing:
        def scan(self, *args: object, **kwargs: object) -> None:
            raise RuntimeError("scratch in use")

    monkeypatch.setattr(prefilter, "_db", Failing())
    before = prefilter.failures
    for text, _ in HIDDEN:
        long = (text + " and then, ") * 30  # longer than the engine remembers
        assert fast.text(long) == pure.text(long)
    assert prefilter.failures > before
