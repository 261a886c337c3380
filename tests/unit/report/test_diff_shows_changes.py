"""Diffs show what changed in a long value: ``diff``, the replay divergence, ``diff --html``.

Two real recordings of an agent whose message differs in a few words deep inside
a long text (drawn: random long texts, changes at random places, several changes,
Unicode, whitespace-only and key-order-only changes of JSON text).  Every diff must
show the changed words, each line of it bounded however long the message is.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.redaction.process import redactor
from otel_replay.replay.divergence import ReplayDivergence
from tests.fixtures.agent import record_run, say, support_agent

#: Words of the recorded texts: lower-case letters and some non-ASCII ones.
BASE = st.text("abcdefghijklmnopqrstuvwxyzéßжλ漢", min_size=1, max_size=9)
#: Words a change brings in or takes out: an alphabet the recorded texts never use, so
#: that finding one in the output can only mean the change is shown.
NEW = st.text("QXZΩ界", min_size=1, max_size=9)


def _drawn(examples: int) -> Any:
    """Hypothesis settings of these tests: each example records real runs (no deadline)."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


#: No line of a diff grows with the message: a change and a window of context.
BOUND = 600


@st.composite
def changed_texts(draw: st.DrawFn) -> tuple[str, str, list[str], list[str]]:
    """A long text, the text with 1-3 words replaced, inserted or deleted at random
    places, the words only the old text has and those only the new text has."""
    words = draw(st.lists(BASE, min_size=40, max_size=300))
    new_words = list(words)
    gone: list[str] = []
    came: list[str] = []
    # Far-apart places, from the end back so that earlier places stay put.
    n = len(words)
    places = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=3)), reverse=True)
    for at in places:
        how = draw(st.sampled_from(["replace", "insert", "delete"]))
        if how == "delete":
            word = "Z" + words[at]  # made unique, so that a deleted word is told apart
            words[at] = new_words[at] = word
            gone.append(word)
            del new_words[at]
            continue
        word = draw(NEW)
        came.append(word)
        if how == "replace":
            old = "Q" + words[at]
            words[at] = old
            gone.append(old)
            new_words[at] = word
        else:
            new_words.insert(at, word)
    a, b = " ".join(words), " ".join(new_words)
    # Words may happen to spell a credential ("bearer Qab"), which capture hides: such a
    # text is about scrubbing, not about diffs, so it is drawn again.
    r = redactor()
    assume(r.text(a) == a and r.text(b) == b)
    return a, b, gone, came


_MARKS = re.compile(r"\[-(.*?)-\]|\{\+(.*?)\+\}", re.S)


def _marked(text: str) -> tuple[str, str]:
    """Everything shown as removed, and everything shown as added, in a diff's text."""
    found = _MARKS.findall(text)
    return "\n".join(x for x, _ in found if x), "\n".join(y for _, y in found if y)


def _record_pair(tmp_path: Path, a: str, b: str) -> tuple[Path, Path]:
    """Two recordings of the agent answering ``a``, then ``b``."""
    pa, pb = tmp_path / "a.otlp", tmp_path / "b.otlp"
    for path in (pa, pb):
        path.unlink(missing_ok=True)
    record_run(pa, [say(a)])
    record_run(pb, [say(b)])
    return pa, pb


def _diff(*args: str | Path) -> str:
    result = CliRunner().invoke(cli, ["diff", *map(str, args)])
    assert result.exit_code == 1, result.output
    return result.stdout


@_drawn(30)
@given(case=changed_texts())
def test_diff_shows_the_changed_words_of_a_long_answer(
    tmp_path: Path, case: tuple[str, str, list[str], list[str]]
) -> None:
    a, b, gone, came = case
    out = _diff(*_record_pair(tmp_path, a, b))
    removed, added = _marked(out)
    for word in gone:
        assert word in removed, out
    for word in came:
        assert word in added, out
    assert max(map(len, out.splitlines())) <= BOUND, out


#: JSON text whose change is only in its layout or its keys' order.
_JSON_VALUES = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=6),
    st.one_of(st.integers(), st.text("abc xyz", max_size=12), st.booleans()),
    min_size=2,
    max_size=12,
)


@_drawn(25)
@given(value=_JSON_VALUES, indent=st.sampled_from([None, 1, 2, 4]), data=st.data())
def test_diff_shows_a_change_only_in_whitespace_or_key_order_of_json_text(
    tmp_path: Path, value: dict[str, Any], indent: int | None, data: st.DataObject
) -> None:
    a = json.dumps(value, indent=indent)
    if data.draw(st.booleans(), label="reorder"):
        keys = list(value)
        order = data.draw(st.permutations(keys).filter(lambda p: list(p) != keys))
        b = json.dumps({k: value[k] for k in order}, indent=indent)
    else:
        b = json.dumps(value, indent=None if indent else 2)
    out = _diff(*_record_pair(tmp_path, a, b))
    removed, added = _marked(out)
    assert removed or added, out
    # What the two sides show differs as the texts do: not the same cut prefix twice.
    final = next(line for line in out.splitlines() if line.startswith("final answer: "))
    shown_a = _MARKS.sub(lambda m: m.group(1) or "", final)
    shown_b = _MARKS.sub(lambda m: m.group(2) or "", final)
    assert shown_a != shown_b, out


@_drawn(25)
@given(case=changed_texts())
def test_the_replay_divergence_shows_the_changed_words_of_a_long_request(
    tmp_path: Path, case: tuple[str, str, list[str], list[str]]
) -> None:
    a, b, gone, came = case
    path = tmp_path / "recorded.otlp"
    path.unlink(missing_ok=True)
    record_run(path, [say("fine")], question=a)
    (run,) = otel_replay.load(path)
    with pytest.raises(ReplayDivergence) as info:
        with otel_replay.replay(run) as session:
            support_agent(b, session.model)
    text = str(info.value)
    lines = text.splitlines()
    minus = "\n".join(line for line in lines if line.lstrip().startswith("-"))
    plus = "\n".join(line for line in lines if line.lstrip().startswith("+"))
    for word in gone:
        assert word in minus, text
    for word in came:
        assert word in plus, text
    assert max(map(len, lines)) <= BOUND, text


class _Lines(HTMLParser):
    """The marked words of a diff page's removed and added lines."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.marked: dict[str, list[str]] = {"del": [], "add": []}
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self._line: list[str] = []  # the class of each open span
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        if tag == "span":
            self._line.append(dict(attrs).get("class") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self._line:
            self._line.pop()

    def handle_data(self, data: str) -> None:
        if len(self._line) >= 2 and self._line[-1] == "w" and self._line[-2] in self.marked:
            self.marked[self._line[-2]].append(data)


@_drawn(30)
@given(case=changed_texts())
def test_the_html_diff_marks_the_changed_words(
    tmp_path: Path, case: tuple[str, str, list[str], list[str]]
) -> None:
    a, b, gone, came = case
    page = tmp_path / "diff.html"
    pair = _record_pair(tmp_path, a, b)
    result = CliRunner().invoke(cli, ["diff", *map(str, pair), "--html", str(page)])
    assert result.exit_code == 1, result.output
    assert f"wrote {page}" in result.stdout
    parsed = _Lines(page.read_text(encoding="utf-8"))
    removed, added = "\n".join(parsed.marked["del"]), "\n".join(parsed.marked["add"])
    for word in gone:
        assert word in removed
    for word in came:
        assert word in added


def test_diff_html_says_what_it_wrote_also_under_json(tmp_path: Path) -> None:
    pa, pb = _record_pair(tmp_path, "the order shipped", "the order was lost")
    page = tmp_path / "out.html"
    result = CliRunner().invoke(cli, ["diff", str(pa), str(pb), "--json", "--html", str(page)])
    assert result.exit_code == 1
    json.loads(result.stdout)  # stdout stays one document
    assert f"wrote {page}" in result.stderr and page.exists()


@_drawn(40)
@given(
    vocabulary=st.integers(2, 60),
    words=st.integers(200, 6000),
    places=st.lists(st.floats(0, 1), min_size=1, max_size=8),
    seed=st.integers(0, 2**32),
)
def test_texts_of_recurring_words_show_their_first_and_last_change_in_bounded_time(
    vocabulary: int, words: int, places: list[float], seed: int
) -> None:
    """Texts of a few words recurring thousands of times (a repeated phrase, commas, a
    list of numbers) are where aligning costs most: at any size each change shows (up to
    eight), in well under a second."""
    import random
    import time

    from otel_replay.runs.diff import show_change

    rng = random.Random(seed)
    old = [f"w{rng.randrange(vocabulary)}" for _ in range(words)]
    new = list(old)
    at = sorted({int(p * (words - 1)) for p in places})
    for n, i in enumerate(at):
        new[i] = f"Q{n}Z"
    started = time.perf_counter()
    shown = show_change(", ".join(old), ", ".join(new))
    took = time.perf_counter() - started
    removed, added = _marked(shown)
    for n, i in enumerate(at):
        assert f"Q{n}Z" in added and old[i] in removed, shown
    assert len(shown) <= 2 * BOUND
    assert took < 1.0, took


@_drawn(100)
@given(
    word=st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", min_size=200),
    where=st.floats(0, 1),
    by=st.sampled_from("-=~"),
)
def test_a_change_inside_one_long_word_shows_around_the_change(
    word: str, where: float, by: str
) -> None:
    """A base64 blob, a digest or minified text is one long word: the characters around
    its change are shown, not the word's ends."""
    from otel_replay.runs.diff import show_change

    i = int(where * (len(word) - 1))
    changed = word[:i] + by + word[i + 1 :]
    shown = show_change(f"key: {word} end", f"key: {changed} end")
    assert len(shown) <= 200, shown
    gone, came = _marked(shown)
    assert "\n" not in gone + came and by in came  # one change, what came in shown
    at = i + len("key: ")
    old = f"key: {word} end"
    assert any(old[j : j + len(gone)] == gone for j in range(at - len(gone) + 1, at + 1)), shown


@pytest.mark.parametrize(
    "hostile",
    ['<script>alert("x")</script>', '"><img src=x onerror=alert(1)>', "</span></pre><b>", "&lt;"],
)
def test_the_html_diff_marks_hostile_changed_words_as_text(tmp_path: Path, hostile: str) -> None:
    """Recorded text is untrusted: a changed word that looks like markup is marked as text."""
    text = "The parcel left the warehouse this morning and reaches you by Thursday. " * 3
    pair = _record_pair(tmp_path, text, text.replace("warehouse", hostile, 1))
    page = tmp_path / "diff.html"
    result = CliRunner().invoke(cli, ["diff", *map(str, pair), "--html", str(page)])
    assert result.exit_code == 1, result.output
    parsed = _Lines(page.read_text(encoding="utf-8"))
    assert any(hostile in t for t in parsed.marked["add"]), parsed.marked
    assert any("warehouse" in t for t in parsed.marked["del"]), parsed.marked
    # No markup of the recorded text's own: the page's tags are those it always has.
    same = _Lines(page.read_text(encoding="utf-8").replace(hostile, "x"))
    assert [t for t, _ in parsed.tags] == [t for t, _ in same.tags]
    assert not any(k.startswith("on") for _, attrs in parsed.tags for k, _ in attrs)
