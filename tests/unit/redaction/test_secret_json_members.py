"""A secret-named JSON member is hidden whatever its value, and JSON stays JSON.

Tool-call arguments are compact JSON as a model writes it (``{"pin":4821,"otp":
930211}``), often inside another JSON string (a request body, a span attribute).
Two faults of one class: a number after a secret name was hidden only with a
space after the colon (compact JSON kept it, at any escape depth), and where it
was hidden the shape took the ``,`` or ``}`` after it and left a bare
placeholder, so the scrubbed text was no longer JSON.  Drawn: documents with
secret-named members of every JSON type at any depth, written compact or
spaced, once or twice JSON-encoded; the scrubbed text must parse the same number
of times, every secret-named number hidden, every other member unchanged.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.redaction import PLACEHOLDER, configure_redaction, redactor
from tests.fixtures.tiers import tiered
from tests.unit.redaction.test_secret_forms import every_byte

#: Names the engine hides by (as fields are spelled in JSON), in several styles.
SECRET_NAMES = st.sampled_from(
    ["password", "pin", "otp", "api_key", "apiKey", "secret", "client_secret", "passcode", "PIN"]
)
#: Names that are no secret (their values must come through).
PLAIN_NAMES = st.sampled_from(["count", "max_tokens", "order_id", "amount", "page", "author"])
#: A secret number: long enough to grep for and to tell from the rest of a file.
SECRET_NUMBERS = st.integers(10**8, 10**12) | st.integers(-(10**12), -(10**8))
_LEAF = st.none() | st.booleans() | st.integers(-99, 99) | st.text(max_size=5)


@st.composite
def documents(draw: st.DrawFn) -> tuple[Any, list[int]]:
    """A JSON object with secret-named number members at some depth, and those numbers."""
    secrets: list[int] = []

    def obj(depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(
                st.sampled_from(["secret", "plain", "nested"] if depth < 2 else ["secret", "plain"])
            )
            if kind == "secret":
                number = draw(SECRET_NUMBERS)
                secrets.append(number)
                out[draw(SECRET_NAMES)] = number
            elif kind == "plain":
                out[draw(PLAIN_NAMES)] = draw(_LEAF)
            else:
                out[draw(PLAIN_NAMES) + "s"] = [obj(depth + 1)]
        return out

    doc = obj(0)
    return doc, [n for n in secrets if any(json.dumps(v) == str(n) for v in _values(doc))]


def _values(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in (v, *_values(v))]
    if isinstance(value, list):
        return [x for v in value for x in (v, *_values(v))]
    return []


def _hidden_as_placeholder(value: Any, names: set[str]) -> bool:
    """Every member named a secret holds the placeholder (or its own plain value)."""
    if isinstance(value, dict):
        return all(
            (v == PLACEHOLDER if k in names and isinstance(v, (int, float)) else True)
            and _hidden_as_placeholder(v, names)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return all(_hidden_as_placeholder(v, names) for v in value)
    return True


def _json_stays_json_and_secret_numbers_are_hidden(
    drawn: tuple[dict[str, Any], list[int]], compact: bool, wraps: int
) -> None:
    configure_redaction()
    doc, secrets = drawn
    text = json.dumps(doc, separators=(",", ":") if compact else None)
    for _ in range(wraps):  # JSON text inside a JSON string, as bodies and attributes hold it
        text = json.dumps({"arguments": text}, separators=(",", ":") if compact else None)
    out = redactor().text(text)
    value: Any = out
    for _ in range(wraps + 1):
        value = json.loads(value if isinstance(value, str) else value["arguments"])
    for number in secrets:
        assert str(number) not in out, (text, out)
    names = {
        "password",
        "pin",
        "otp",
        "api_key",
        "apiKey",
        "secret",
        "client_secret",
        "passcode",
        "PIN",
    }
    assert _hidden_as_placeholder(value, names), out
    plain = {k: v for k, v in doc.items() if k not in names and not isinstance(v, list)}
    assert {k: value[k] for k in plain} == plain


(
    test_json_stays_json_and_secret_numbers_are_hidden,
    test_json_stays_json_and_secret_numbers_are_hidden_in_many_documents,
) = tiered(20, 60, drawn=documents(), compact=st.booleans(), wraps=st.integers(0, 2))(
    _json_stays_json_and_secret_numbers_are_hidden
)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=SECRET_NAMES, number=SECRET_NUMBERS)
def test_a_tool_called_with_a_secret_number_writes_none(
    tmp_path: Path, name: str, number: int
) -> None:
    """Through the capture path: a tool's arguments and a model call's tool-call arguments
    (compact JSON text, as the model wrote it)."""
    from tests.fixtures.recording import recording

    configure_redaction()
    root = Path(tempfile.mkdtemp(dir=tmp_path))

    @otel_replay.tool
    def verify(**kwargs: Any) -> str:
        return "ok"

    arguments = json.dumps({name: number, "order_id": "A-1"}, separators=(",", ":"))
    call = {"type": "tool_call", "id": "c1", "name": "verify", "arguments": arguments}
    with recording(root / "r.otlp"), otel_replay.agent_run("a", input="verify"):
        with otel_replay.model_call(provider="p", model="m", messages=[]) as span:
            span.record({"role": "assistant", "parts": [call]})
        verify(**json.loads(arguments))
    written = every_byte(root)
    assert written and not [w for w, data in written.items() if str(number).encode() in data]
