"""The redaction engine on its own: what it hides, what it leaves, hooks and personal data.

The end-to-end check (every capture path, every byte written) is
``test_secrets.py``; here each rule is shown on the text it is for, with the
look-alikes it must leave alone (hiding ``max_tokens`` would break replay).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

import otel_replay
from _recording import in_memory
from otel_replay.redaction import PLACEHOLDER, Redactor, configure_redaction, redactor


@pytest.fixture(autouse=True)
def _default_redaction() -> Iterator[None]:
    configure_redaction()
    yield
    configure_redaction()


#: Credential shapes, made of fake parts (assembled, so that no whole key sits in the source).
HIDDEN = [
    ("key sk-" + "proj-" + "abcdefghij" * 2 + " ok", "key [REDACTED] ok"),
    ("sk-" + "ant-api03-" + "abcdefghij" * 2, "[REDACTED]"),
    ("id AKIA" + "ABCDEFGH" * 2 + ".", "id [REDACTED]."),
    ("ghp_" + "a1" * 18, "[REDACTED]"),
    ("xoxb-" + "1234567890" + "-abcdefghij", "[REDACTED]"),
    ("AIza" + "B" * 35, "[REDACTED]"),
    ("hf_" + "x" * 34, "[REDACTED]"),
    ("sk_live_" + "4" * 24, "[REDACTED]"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop", "[REDACTED]"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[REDACTED]"),
    ("Authorization: Bearer abcdefghijklmnop", "Authorization: [REDACTED]"),
    ("use Bearer abcdefghijklmnop", "use Bearer [REDACTED]"),
    ("Basic dXNlcjpwYXNzd29yZA==", "Basic [REDACTED]"),
    ("postgres://app:s3cret@db:5432/prod", "postgres://app:[REDACTED]@db:5432/prod"),
    ("https://x.io/v1?q=a&api_key=abc123&n=2", "https://x.io/v1?q=a&api_key=[REDACTED]&n=2"),
    ("https://maps.io/geo?key=abc123", "https://maps.io/geo?key=[REDACTED]"),
    ("Server=db;User Id=a;Password=p4ss;", "Server=db;User Id=a;Password=[REDACTED];"),
    ("db_password=hunter2,beta=1", "db_password=[REDACTED],beta=1"),
    ('{"api_key": "abc", "n": 1}', '{"api_key": "[REDACTED]", "n": 1}'),
    ('{"Authorization": "Token abc"}', '{"Authorization": "[REDACTED]"}'),
    ("Client(api_key='abc', model='m')", "Client(api_key='[REDACTED]', model='m')"),
    ('{\\"client_secret\\": \\"abc\\"}', '{\\"client_secret\\": \\"[REDACTED]\\"}'),
    ("x-api-key: abc", "x-api-key: [REDACTED]"),
]

KEPT = [
    "The weather in Paris is sunny, 21 degrees.",
    '{"max_tokens": 100, "input_tokens": 5, "token_count": 3}',
    "Basic configuration is easy",
    "sort(items, key=len)",
    "the token count is 5",
    "see https://example.com/docs?page=2",
    "the author of the secretariat report",  # "author", not "auth"; the word alone
]


@pytest.mark.parametrize(("text", "expected"), HIDDEN)
def test_credential_shapes_are_hidden_where_they_stand(text: str, expected: str) -> None:
    assert redactor().text(text) == expected
    assert redactor().text(expected) is expected  # hiding again changes nothing


@pytest.mark.parametrize("text", KEPT)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redactor().text(text) is text


def test_bytes_keep_every_other_byte_exactly() -> None:
    data = b"\xff\xfe binary api_key=abc123 \x00\x81"
    assert redactor().data(data) == b"\xff\xfe binary api_key=[REDACTED] \x00\x81"


def test_header_names_use_a_wider_net_than_fields() -> None:
    r = redactor()
    for name in ("ocp-apim-subscription-key", "x-auth", "x-custom-key", "x-session-token"):
        assert r.is_secret_header(name), name
    for name in ("content-type", "x-ratelimit-remaining-tokens", "accept"):
        assert not r.is_secret_header(name), name
    for name in ("partition_key", "max_tokens", "author", "token_count"):
        assert not r.is_secret_key(name), name
    hidden: list[str] = []
    out = r.scrub({"extra_headers": {"X-Custom-Key": "v", "Accept": "json"}}, "p", hidden)
    assert out == {"extra_headers": {"X-Custom-Key": PLACEHOLDER, "Accept": "json"}}
    assert hidden == ["p.extra_headers.X-Custom-Key"]


def test_a_secret_in_a_mapping_key_is_hidden_and_its_path_does_not_spell_it() -> None:
    hidden: list[str] = []
    value = {"postgres://app:s3cret@db/prod": {"rows": 2}, "ok": 1}
    out = redactor().scrub(value, "v", hidden)
    assert out == {"postgres://app:[REDACTED]@db/prod": {"rows": 2}, "ok": 1}
    assert hidden == ["v.postgres://app:[REDACTED]@db/prod"]
    assert list(value) == ["postgres://app:s3cret@db/prod", "ok"]  # the caller's is untouched


@dataclasses.dataclass(frozen=True)
class Creds:
    user: str
    api_key: str


class Login(pydantic.BaseModel):
    user: str
    password: str


def test_object_fields_are_hidden_by_name_in_a_copy() -> None:
    creds, login = Creds("bob", "k1"), Login(user="bob", password="p1")
    hidden: list[str] = []
    out = redactor().scrub({"c": creds, "l": [login]}, "args", hidden)
    assert out["c"] == Creds("bob", PLACEHOLDER) and creds.api_key == "k1"
    assert out["l"][0] == Login(user="bob", password=PLACEHOLDER)
    assert hidden == ["args.c.api_key", "args.l[0].password"]


def test_a_hook_sees_every_value_with_its_path() -> None:
    seen: list[str] = []

    def hook(path: str, value: Any) -> Any:
        seen.append(path)
        return "[CUSTOMER]" if path.endswith(".customer") else value

    r = Redactor(hook=hook)
    hidden: list[str] = []
    assert r.scrub({"customer": "ACME", "n": 1}, "args", hidden) == {
        "customer": "[CUSTOMER]",
        "n": 1,
    }
    assert hidden == ["args.customer"] and "args.n" in seen


def test_personal_data_only_when_asked() -> None:
    text = "write to jane.doe@example.com or call +1 415-555-0100"
    assert redactor().text(text) is text
    assert Redactor(personal_data=True).text(text) == "write to [REDACTED] or call [REDACTED]"


def test_user_patterns_and_keys_add_to_the_defaults() -> None:
    configure_redaction(keys=[r"customer_ref"], patterns=[r"ACME-\d{6}"])

    @otel_replay.tool
    def lookup(customer_ref: str, note: str) -> str:
        return "ok"

    with in_memory() as exp:
        lookup("c-1", "order ACME-123456 and key sk-" + "abcdefghij" * 2)
    (span,) = exp.get_finished_spans()
    text = str(dict(span.attributes or {}))
    assert "c-1" not in text and "ACME-123456" not in text and "sk-abcdefghij" not in text


def test_exception_message_stack_and_status_are_scrubbed() -> None:
    @otel_replay.tool
    def connect() -> None:
        raise RuntimeError("cannot log in: postgres://app:hunter2@db/prod")

    with in_memory() as exp, pytest.raises(RuntimeError):
        connect()
    (span,) = exp.get_finished_spans()
    (event,) = [e for e in span.events if e.name == "exception"]
    assert "hunter2" not in str(dict(event.attributes or {}))
    assert "hunter2" not in (span.status.description or "")
    assert "hunter2" not in str(dict(span.attributes or {}))
    assert event.attributes["exception.type"] == "RuntimeError"  # type: ignore[index]


def test_the_processor_turns_personal_data_on() -> None:
    @otel_replay.tool
    def email(to: str) -> str:
        return f"sent to {to}"

    with in_memory(redact_personal_data=True) as exp:
        email("jane.doe@example.com")
    (span,) = exp.get_finished_spans()
    assert "jane.doe@example.com" not in str(dict(span.attributes or {}))


class _Word(str):
    pass


def _nested(depth: int) -> Any:
    value: Any = ["bottom"]
    for _ in range(depth):
        value = [value]
    return value


def test_one_walk_tells_plain_json_as_the_payload_check_does() -> None:
    """``scrub_json`` walks once for both: its verdict is ``is_plain_json``'s, on the clean value."""
    from otel_replay.payload import PLAIN_DEPTH, is_plain_json

    values = [
        {"a": [1, 2.5, None, True, "x"], "b": {"c": []}},
        [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
        {"t": (1, 2)},
        {"b": b"raw"},
        {1: "int key"},
        {"w": _Word("sub")},
        {"c": Creds("bob", "k1")},
        _nested(PLAIN_DEPTH - 1),
        _nested(PLAIN_DEPTH),
        _nested(PLAIN_DEPTH + 1),
        {"deep": _nested(PLAIN_DEPTH)},
        [[[]] * 3],
    ]
    for value in values:
        clean, plain = redactor().scrub_json(value, "v", [])
        assert plain == is_plain_json(value) == is_plain_json(clean), value
    # A secret key's value is replaced by text, whatever it was: plain after.
    clean, plain = redactor().scrub_json({"api_key": b"raw"}, "v", [])
    assert clean == {"api_key": PLACEHOLDER} and plain
    hooked = Redactor(hook=lambda path, value: value if path != "v.x" else object())
    assert hooked.scrub_json({"x": 1}, "v", [])[1] is False  # replaced unseen: not known plain
