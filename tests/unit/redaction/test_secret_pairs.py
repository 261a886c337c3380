"""A secret named by a field beside it: never written.

The secret's name is the *value* of a name field and the secret stands in the
field or item beside it: a HAR file's or Postman's headers (``{"name":
"x-api-key", "value": S}``), a Kubernetes env (``- name: API_TOKEN`` then
``value: S``), ``{"Key": "DB_PASSWORD", "Value": S}``, an ASGI scope's raw
headers (``[(b"x-api-key", b"S")]``), an httpx header list (``[["x-api-key",
"S"]]``).  Drawn as text (in JSON, JSON text inside JSON, Python ``repr``, YAML)
through every capture path, and as the structured values a tool is given and
returns.  Every byte written is grepped for each secret (as text, in JSON text,
in UTF-16).  What stays: a list of field names (``["password", "username"]``, a
JSON schema's ``required``), a name/value entry naming no secret.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider

import otel_replay
from otel_replay.redaction import PLACEHOLDER, configure_redaction, redactor
from tests.fixtures.secrets import WRITING, every_byte
from tests.unit.redaction.test_secret_forms import (
    Drawn,
    _hidden_in_text,
    _value,
    hidden_on_every_capture_path,
)


@pytest.fixture(autouse=True)
def _default_redaction() -> Iterator[None]:
    configure_redaction()
    yield
    configure_redaction()


_ALNUM = string.ascii_letters + string.digits
#: A credential: letters and digits both, 12 characters or more.
credentials = _value(_ALNUM, 12, 40).filter(lambda v: any(c.isalpha() for c in v))

#: Secret names as headers, variables and settings are named.
NAMES = (
    ("x", "api", "key"),
    ("api", "key"),
    ("x", "auth", "token"),
    ("openai", "api", "key"),
    ("db", "password"),
    ("password",),
    ("client", "secret"),
    ("aws", "secret", "access", "key"),
    ("github", "token"),
    ("signing", "key"),
    ("access", "token"),
    ("refresh", "token"),
    ("authorization",),
)


@st.composite
def names(draw: st.DrawFn) -> str:
    """A secret name, snake or kebab case, in any case."""
    words = draw(st.sampled_from(NAMES))
    name = draw(st.sampled_from("_-")).join(words)
    return draw(st.sampled_from([name, name.upper(), name.title(), name.lower()]))


# --- text --------------------------------------------------------------------------------

#: The ways a name/value pair is written in text: (form, text of name and secret).
_TEXT_FORMS = {
    "HAR entry": lambda n, s: json.dumps({"headers": [{"name": n, "value": s}], "x": 1}),
    "Key/Value": lambda n, s: json.dumps([{"Key": n, "Value": s}]),
    "ParameterKey": lambda n, s: json.dumps({"ParameterKey": n, "ParameterValue": s}),
    "compact JSON": lambda n, s: json.dumps({"name": n, "value": s}, separators=(",", ":")),
    "JSON text in JSON": lambda n, s: json.dumps({"body": json.dumps({"name": n, "value": s})}),
    "Python repr of a dict": lambda n, s: repr({"name": n, "value": s}),
    "ASGI raw headers": lambda n, s: repr([(b"host", b"api"), (n.encode(), s.encode())]),
    "tuple of str": lambda n, s: repr([("accept", "*/*"), (n, s)]),
    "httpx header list": lambda n, s: json.dumps({"headers": [["accept", "*/*"], [n, s]]}),
    "Kubernetes env": lambda n, s: f"env:\n  - name: {n}\n    value: {s}\n  - name: X",
    "Kubernetes env quoted": lambda n, s: f'env:\n- name: "{n}"\n  value: "{s}"\n',
}


@st.composite
def _pair_in_text(draw: st.DrawFn, form: str) -> Drawn:
    secret = draw(credentials)
    return _TEXT_FORMS[form](draw(names()), secret), secret


FORMS: dict[str, st.SearchStrategy[Drawn]] = {f: _pair_in_text(f) for f in _TEXT_FORMS}
_drawn = st.sampled_from(sorted(FORMS)).flatmap(lambda form: st.tuples(st.just(form), FORMS[form]))

test_every_pair_is_hidden_in_text = settings(max_examples=300, deadline=None)(
    given(_drawn)(_hidden_in_text)
)


def test_every_pair_is_hidden_on_every_capture_path(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    hidden_on_every_capture_path(FORMS, tmp_path_factory)


#: Look-alikes: lists of field names, entries naming no secret.
LEFT_ALONE = [
    '{"type": "object", "required": ["api_key", "query"]}',
    '["password", "username"]',
    '{"name": "max_tokens", "value": "512"}',
    '{"name": "partition_key", "value": "user-42"}',
    '{"name": "model", "value": "gpt-4o-mini-2024"}',
    "env:\n  - name: LOG_LEVEL\n    value: debug42x",
    '[("content-type", "application/json")]',
]


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_pairs_naming_no_secret_are_left_alone(text: str) -> None:
    assert redactor().text(text) == text


# --- structured values -------------------------------------------------------------------

#: The structures a tool is given or returns that pair a name with its secret.
_STRUCTURES = {
    "HAR headers": lambda n, s: {"headers": [{"name": n, "value": s}, {"name": "a", "value": "1"}]},
    "env entries": lambda n, s: {"env": [{"name": n, "value": s}]},
    "Key/Value": lambda n, s: [{"Key": n, "Value": s}],
    "ASGI raw headers": lambda n, s: {"scope": {"headers": [(b"host", b"x"), (n.encode(), s)]}},
    "header pairs under headers": lambda n, s: {"headers": [["accept", "*/*"], [n, s]]},
    "tuple pairs": lambda n, s: {"raw": [("accept", "*/*"), (n, s)]},
}


@WRITING
@given(
    forms=st.lists(st.sampled_from(sorted(_STRUCTURES)), min_size=1, max_size=3, unique=True),
    name=names(),
    secrets=st.lists(credentials, min_size=3, max_size=3, unique=True),
)
def test_every_pair_in_a_structure_never_reaches_disk(
    tmp_path_factory: pytest.TempPathFactory, forms: list[str], name: str, secrets: list[str]
) -> None:
    root = tmp_path_factory.mktemp("pairs")
    planted = [_STRUCTURES[f](name, s) for f, s in zip(forms, secrets, strict=False)]

    @otel_replay.tool
    def call_api(request: Any) -> Any:
        return request

    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    exporter = otel_replay.FileSpanExporter(root / "run.otlp", max_inline_bytes=64)
    provider.add_span_processor(otel_replay.RecordingSpanProcessor(exporter))
    previous = otel_replay.use_tracer_provider(provider)
    try:
        with otel_replay.agent_run("pairs"):
            for structure in planted:
                call_api(structure)
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()
    written = b"".join(every_byte(root).values())
    leaks = [s for s in secrets if s.encode() in written]
    assert not leaks, (forms, name, leaks)
    assert PLACEHOLDER.encode() in written


@pytest.mark.parametrize(
    "value",
    [
        {"type": "object", "required": ["api_key", "query"]},
        ["password", "username"],
        {"name": "max_tokens", "value": 512},
        {"headers": [["content-type", "application/json"]]},
        {"name": "partition_key", "value": "user-42"},
    ],
)
def test_structures_naming_no_secret_are_left_alone(value: Any) -> None:
    assert redactor().scrub(value, "tool.arguments", []) is value
