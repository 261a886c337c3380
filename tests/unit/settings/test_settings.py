"""Settings: every variable read one way; reading never raises; bounds hold; one rule for flags.

Values are drawn for every listed variable, well-formed and not (words in any
case with spaces around, numbers out of bound, NaN and infinities, huge
integers, any text); modules are then checked to read the environment only
through the settings.
"""

from __future__ import annotations

import ast
import dataclasses
import logging
import math
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from otel_replay import limits, settings
from otel_replay.capture import autoinstrument
from otel_replay.export.file_exporter import FileSpanExporter
from tests.fixtures.data import ROOT
from tests.fixtures.tiers import tiered

SRC = ROOT / "src" / "otel_replay"

#: Modules that touch ``os.environ`` for another reason than reading a setting.
ENVIRONMENT_HANDLERS = {
    # Reads every variable for its parse, and lists the package's own for a child.
    "settings/environment.py",
    # Sets stand-in API keys for a replayed agent (and puts back what was there).
    "replay/agent_call.py",
    # Hands the re-run child the whole environment.
    "replay/isolation.py",
    # Looks for a candidate provider's own key and URL (ANTHROPIC_API_KEY, OPENAI_BASE_URL).
    "replay/candidate_model.py",
}

WORDS = [
    *settings.TRUE,
    *settings.FALSE,
    "maybe",
    "t",
    "y",
    "enabled",
    "",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "-1",
    "0",
    "1.5",
    "-0.0",
    "1_000",
    "+5",
    "--5",
    "²",
    "١٢",
    "0x10",
    "1e3",
    "9" * 5000,  # past the digits int() takes
    "9" * 400,  # past the largest float
    "proto",
    "json",
    "zstd",
    "none",
    "repair",
    "missing",
    "a, b,,c",
]


@st.composite
def values(draw: st.DrawFn) -> str:
    """A value as someone might set it, or not."""
    word = draw(
        st.one_of(
            st.sampled_from(WORDS),
            st.integers().map(str),
            st.floats().map(repr),
            st.text(max_size=30),
        )
    )
    case = draw(st.sampled_from([str, str.upper, str.lower, str.title]))
    pad = draw(st.sampled_from(["", " ", "\t", "  \n"]))
    return pad + case(word) + draw(st.sampled_from(["", " ", "\t"]))


def _settable(word: str) -> bool:
    try:
        os.fsencode(word)
    except UnicodeError:
        return False
    return "\x00" not in word


#: Values a process's environment can hold (no NUL, encodable).
settable = values().filter(_settable)

environments = st.dictionaries(st.sampled_from(list(settings.BY_NAME)), values(), max_size=12)


def _within(v: settings.Variable, value: float) -> bool:
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if v.least is not None and (value <= v.least if v.above else value < v.least):
        return False
    return v.most is None or value <= v.most


def _finite(number: float) -> bool:
    return not isinstance(number, float) or math.isfinite(number)


def _number(v: settings.Variable, raw: str) -> float | None:
    try:
        return int(raw) if v.kind == "int" else float(raw)
    except (ValueError, OverflowError):
        return None


def check(v: settings.Variable, raw: str | None, value: object) -> None:
    """What the one rule of ``v``'s kind says ``raw`` reads as."""
    if v.kind in ("text", "standard"):
        assert value == (raw or None)
    elif v.kind == "list":
        assert isinstance(value, tuple)
        assert all(p and p == p.strip() and "," not in p for p in value)
        assert ",".join(value) == ",".join(p.strip() for p in (raw or "").split(",") if p.strip())
    elif raw is None or not raw.strip():
        assert value == v.default
    elif v.kind == "flag":
        word = raw.strip().lower()
        expected = True if word in settings.TRUE else False if word in settings.FALSE else v.default
        assert value is expected
    elif v.kind == "choice":
        word = raw.strip().lower()
        assert value == (word if word in v.choices else v.default)
    else:
        number = _number(v, raw)
        if number is not None and _within(v, number):
            assert value == number
        elif value != v.default:  # brought within the bound
            assert v.outside == "clamp" and number is not None and _finite(number)
            assert value in (v.least, v.most)
        if value is not None:
            assert isinstance(value, int) if v.kind == "int" else isinstance(value, (int, float))
            assert value == v.default or _within(v, value)  # type: ignore[arg-type]


def _every_variable_parses_without_raising_within_its_bound(environ: dict[str, str]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(settings.once, "_ONCE", settings.Once())
        read = settings.Settings.from_env(environ)
    for v in settings.VARIABLES:
        check(v, environ.get(v.name), read.value(v.name))


(
    test_every_variable_parses_without_raising_within_its_bound,
    test_every_variable_parses_without_raising_within_its_bound_in_many_environments,
) = tiered(100, 400, environ=environments, suppress_health_check=[HealthCheck.too_slow])(
    _every_variable_parses_without_raising_within_its_bound
)


def test_the_list_and_the_settings_have_the_same_names() -> None:
    fields = [f.name for f in dataclasses.fields(settings.Settings)]
    assert fields == [v.field for v in settings.VARIABLES]
    assert len(set(settings.BY_NAME)) == len(settings.VARIABLES)
    own = [v.name for v in settings.VARIABLES if not v.standard]
    assert all(n.startswith("OTEL_REPLAY_") for n in own)
    for v in settings.VARIABLES:
        assert getattr(settings, v.name) == v.name  # each name is a constant too
        assert v.doc.endswith(".") and "\n" not in v.doc and "|" not in v.doc
        check(v, None, v.parse(None))
        if v.kind == "flag":
            assert v.default_text() in ("true", "false", "unset")


def test_secrets_are_left_out_of_the_repr() -> None:
    secret = "s3cr3t-value-0123"
    environ = {v.name: secret for v in settings.VARIABLES if v.secret}
    read = settings.Settings.from_env(environ)
    assert secret not in repr(read)
    assert all(read.value(name) for name in environ)


@hsettings(max_examples=100, deadline=None)
@given(word=settable)
def test_a_flag_means_the_same_to_every_reader(word: str) -> None:
    """The exporter, the zero-code hook and the redactor's switch read one word one way."""
    stripped = word.strip().lower()
    on = True if stripped in settings.TRUE else False if stripped in settings.FALSE else None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(settings.once, "_ONCE", settings.Once())
        for name in (
            settings.OTEL_REPLAY_FSYNC,
            settings.OTEL_REPLAY_PROCESSOR,
            settings.OTEL_REPLAY_SEMCONV,
        ):
            mp.setenv(name, word)
        mp.delenv(settings.OTEL_SDK_DISABLED, raising=False)
        mp.setenv(settings.OTEL_TRACES_EXPORTER, "otel_replay_file")
        assert FileSpanExporter(os.devnull).fsync is (False if on is None else on)
        assert autoinstrument.enabled() is (True if on is None else on)
        assert settings.current().semconv is (True if on is None else on)


@hsettings(max_examples=100, deadline=None)
@given(word=settable)
def test_a_reading_limit_is_positive_and_usable(word: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(settings.once, "_ONCE", settings.Once())
        mp.setenv(settings.OTEL_REPLAY_MAX_RECORD_BYTES, word)
        mp.setenv(settings.OTEL_REPLAY_URL_TIMEOUT, word)
        assert limits.MAX_RECORD_BYTES.bytes() >= 1
        assert 0 < limits.URL_TIMEOUT.get() <= settings.parsing._MAX_SECONDS
        assert "limit (OTEL_REPLAY_URL_TIMEOUT)" in limits.URL_TIMEOUT.text()


def test_current_reads_again_when_a_variable_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.OTEL_REPLAY_MAX_INLINE_BYTES, raising=False)
    first = settings.current()
    assert settings.current() is first  # nothing changed: the same settings
    assert first.max_inline_bytes == settings.DEFAULT_OTEL_REPLAY_MAX_INLINE_BYTES
    monkeypatch.setenv(settings.OTEL_REPLAY_MAX_INLINE_BYTES, "100")
    assert settings.current().max_inline_bytes == 100
    monkeypatch.setenv(settings.OTEL_REPLAY_MAX_INLINE_BYTES, "-5")  # below its bound
    assert settings.current().max_inline_bytes == 0
    monkeypatch.delenv(settings.OTEL_REPLAY_MAX_INLINE_BYTES)
    assert settings.current() == first


def test_a_bad_value_is_said_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(settings.once, "_ONCE", settings.Once())
    monkeypatch.setenv(settings.OTEL_REPLAY_FSYNC, "perhaps")
    for n in range(3):
        monkeypatch.setenv(settings.OTEL_REPLAY_MAX_QUEUE, str(n + 1))  # a change: read again
        assert settings.current().fsync is False
    said = [r for r in caplog.records if "OTEL_REPLAY_FSYNC" in r.getMessage()]
    assert len(said) == 1 and "'perhaps' is not one of 1, true, yes, on" in said[0].getMessage()


def test_once_says_each_key_once_and_bounds_its_memory(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("otel_replay.test_settings")
    once = settings.Once(log, most=3)
    said = [once.warn(key, "key %s", key) for key in [1, 2, 1, 3, 4, 2, 5]]
    assert said == [True, True, False, True, False, False, False]
    assert [r.getMessage() for r in caplog.records if r.name == log.name] == [
        "key 1",
        "key 2",
        "key 3",
    ]
    assert settings.Once(log).warn(1, "again") is True  # each Once remembers its own


def test_the_markdown_lists_every_variable() -> None:
    table = settings.markdown()
    for v in settings.VARIABLES:
        assert f"| `{v.name}`" in table


def _setting_name(node: ast.AST) -> str | None:
    """The variable a key names when it is one of ours or a standard one (else None)."""
    name = (
        node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        else node.id
        if isinstance(node, ast.Name)
        else None
    )
    if name is not None and (name in settings.BY_NAME or name.startswith(("OTEL_", "XDG_"))):
        return name
    return None


def _environment_reads(path: Path, handler: bool) -> list[str]:
    """Where a module reads a setting from the environment itself.

    A setting (one of ours, OpenTelemetry's, XDG's) is read only by the
    settings; any other use of ``os.environ`` (keys not known in advance,
    the whole mapping) only by :data:`ENVIRONMENT_HANDLERS`.  A third-party
    SDK's own variable (``OPENAI_API_KEY``) may be looked at anywhere.
    """
    found = []
    keyed: set[int] = set()  # the os.environ nodes read by a key
    nodes = list(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))
    for node in nodes:
        if isinstance(node, ast.keyword) and node.arg in ("envvar", "auto_envvar_prefix"):
            found.append(f"{node.lineno}: a click option reads the environment")
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"{node.lineno}: os.{a.name}" for a in node.names if a.name in ENV_NAMES]
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and _is_os(node.value, "environ"):
            keyed.add(id(node.value))
            key = node.slice
        elif isinstance(node, ast.Call) and _is_os(node.func, "getenv") and node.args:
            key = node.args[0]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and _is_os(node.func.value, "environ")
            and node.args
        ):
            keyed.add(id(node.func.value))
            key = node.args[0]
        if key is None:
            continue
        named = _setting_name(key)
        if named is not None:
            found.append(f"{node.lineno}: {named}")
        elif not handler and not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            found.append(f"{node.lineno}: os.environ by a key not known in advance")
    if not handler:
        found += [
            f"{node.lineno}: os.environ as a whole"
            for node in nodes
            if _is_os(node, "environ") and id(node) not in keyed
        ]
    return found


ENV_NAMES = ("environ", "getenv", "environb")


def _is_os(node: ast.AST, attr: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def test_no_module_but_the_settings_reads_a_setting_from_the_environment() -> None:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        name = str(path.relative_to(SRC))
        if name != "settings/environment.py" and (
            reads := _environment_reads(path, name in ENVIRONMENT_HANDLERS)
        ):
            found[name] = reads
    assert not found, found


def test_every_variable_named_in_the_code_is_listed() -> None:
    """A new ``OTEL_REPLAY_*`` variable cannot be read without its line in the list."""
    named = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named |= set(re.findall(r"\bOTEL_REPLAY_[A-Z0-9_]*[A-Z0-9]\b", node.value))
    assert named - set(settings.BY_NAME) == set()
