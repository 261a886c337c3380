"""The redaction engine on its own: what it hides, what it leaves, hooks and personal data.

The end-to-end check (every capture path, every byte written) is
``test_secrets.py``; here each rule is shown on the text it is for, with the
look-alikes it must leave alone (hiding ``max_tokens`` would break replay).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import json
import re
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.redaction import PLACEHOLDER, Redactor, configure_redaction, redactor
from tests.fixtures.recording import in_memory
from tests.fixtures.tiers import tiered


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
    "password = os.environ.get('DB_PASSWORD')",  # code, not an INI value
    "secret = tuple(items)",
    "the keyboard, the monkey and max_tokens: 512",
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
    from otel_replay.payload.codec import PLAIN_DEPTH, is_plain_json

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


# --- classes of input, drawn ---------------------------------------------------------

#: Names a secret goes by, as words: written with any separator and in any case.
SECRET_NAMES = [
    ("x", "api", "key"),
    ("api", "key"),
    ("x", "auth", "token"),
    ("auth", "token"),
    ("access", "token"),
    ("refresh", "token"),
    ("session", "token"),
    ("aws", "secret", "access", "key"),
    ("client", "secret"),
    ("db", "password"),
    ("password",),
    ("passwd",),
    ("private", "key"),
    ("signing", "key"),
    ("github", "token"),
    ("openai", "api", "key"),
    ("bot", "token"),
    ("credentials",),
]


@st.composite
def secret_names(draw: st.DrawFn, separators: str = "-_.") -> str:
    words = draw(st.sampled_from(SECRET_NAMES))
    sep = draw(st.sampled_from(list(separators)))
    name = sep.join(words)
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    return "".join(c.upper() if up else c for c, up in zip(name, flips, strict=True))


#: A credential: 12 to 40 letters and digits, both (what a key or token looks like).
credentials = st.builds(
    lambda head, tail: head + tail,
    st.from_regex(r"[A-Za-z]{4}[0-9]{2}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9]{6,34}", fullmatch=True),
)

#: How a name and its value are written in text.
WRAPPINGS = {
    "json": lambda n, v: json.dumps({"model": "m", n: v, "n": 1}),
    "python repr": lambda n, v: repr({"model": "m", n: v}),
    "k=v": lambda n, v: f"{n}={v}&n=1",
    "env line": lambda n, v: f"export {n}={v}\nNEXT=1",
    "yaml": lambda n, v: f"model: m\n{n}: {v}\nn: 1",
    "ini": lambda n, v: f"[default]\n{n} = {v}\nregion = eu-west-1",
    "headers dict in JSON text": lambda n, v: json.dumps({"headers": json.dumps({n: v})}),
    "JSON-escaped lines": lambda n, v: json.dumps({"content": f"config:\n{n}={v}\nok"}),
    "header line": lambda n, v: f"GET / HTTP/1.1\r\n{n}: {v}\r\nAccept: */*",
    "code literal": lambda n, v: f"data = b\"{n}={v}\" + f'{n}={v}'",
}


def _a_secret_named_any_way_is_hidden_in_every_wrapping(
    name: str, value: str, wrapping: str
) -> None:
    """Names with any separator and case (the longer trigger never hides the shorter)."""
    text = WRAPPINGS[wrapping](name, value)
    out = redactor().text(text)
    assert value not in out, (wrapping, out)
    assert PLACEHOLDER in out
    assert redactor().text(out) == out  # idempotent


(
    test_a_secret_named_any_way_is_hidden_in_every_wrapping,
    test_a_secret_named_any_way_is_hidden_in_every_wrapping_many,
) = tiered(
    100, 300, secret_names(), credentials, st.sampled_from(sorted(WRAPPINGS)), deadline=None
)(_a_secret_named_any_way_is_hidden_in_every_wrapping)


def _command_line_options_named_like_secrets_are_hidden(name: str, value: str, form: str) -> None:
    if form.startswith("-{"):  # one dash (-password x): the name starts with the word
        assume(re.match(r"(?i)(password|passwd|secret|token|api[-_]?key)", name))
    text = "tool " + form.format(n=name, v=value) + " --verbose"
    out = redactor().text(text)
    assert value not in out, out
    assert out.endswith(" --verbose")  # the options after it stay


(
    test_command_line_options_named_like_secrets_are_hidden,
    test_command_line_options_named_like_secrets_are_hidden_many,
) = tiered(
    100,
    200,
    secret_names(separators="-_"),
    credentials,
    st.sampled_from(["--{n} {v}", "--{n}={v}", "-{n} {v}", '["--{n}", "{v}"]', "['--{n}', '{v}']"]),
    deadline=None,
)(_command_line_options_named_like_secrets_are_hidden)


@settings(max_examples=100, deadline=None)
@given(secret_names(), credentials, st.sampled_from(["utf-16-le", "utf-16-be", "utf-16"]))
def test_a_secret_in_utf16_bytes_is_hidden_and_the_bytes_stay_utf16(
    name: str, value: str, codec: str
) -> None:
    data = f"[default]\n{name} = {value}\nregion = eu-west-1\n".encode(codec)
    out = redactor().data(data)
    assert value.encode("utf-16-le") not in out and value.encode("utf-16-be") not in out
    assert "region = eu-west-1" in out.decode(codec)
    assert PLACEHOLDER in out.decode(codec)
    # Read as Latin-1 text (bytes a framework turned into str), the same.
    assert value not in redactor().text(data.decode("latin-1")).encode("latin-1").decode(codec)


@settings(max_examples=100, deadline=None)
@given(secret_names("_"), credentials, st.booleans(), st.booleans())
def test_a_secret_in_base64_is_hidden_with_its_run(
    name: str, value: str, urlsafe: bool, multiline: bool
) -> None:
    """A base64-encoded credentials file or JSON: a whole value, or a string in JSON text."""
    raw = f'{{"{name}": "{value}", "region": "eu"}}'.encode()
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    blob = encode(raw).decode()
    if multiline:
        blob = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
    assert redactor().text(blob) == PLACEHOLDER
    text = json.dumps({"file": "creds.json", "content": blob})
    out = redactor().text(text)
    assert blob not in out and "creds.json" in out


_WORDS = [
    "the",
    "order",
    "shipped",
    "on",
    "Monday",
    "and",
    "the",
    "parcel",
    "can",
    "be",
    "sent",
    "to",
    "a",
    "new",
    "address",
]


def _look_alikes_stay_in_any_mix(pieces: list[str]) -> None:
    """Token counts, digests, ids, logprob tokens, code and harmless base64 are not secrets."""
    text = " ".join(pieces)
    assert redactor().text(text) == text


test_look_alikes_stay_in_any_mix, test_look_alikes_stay_in_any_mix_many = tiered(
    100,
    300,
    st.lists(
        st.one_of(
            st.sampled_from(_WORDS),
            st.integers(0, 10**6).map(lambda n: f'"max_tokens": {n}'),
            st.integers(0, 10**6).map(lambda n: f"token_count={n}"),
            st.integers(0, 10**6).map(lambda n: f"input_tokens: {n}"),
            st.binary(min_size=8, max_size=8).map(
                lambda b: f'"sha256": "{hashlib.sha256(b).hexdigest()}"'
            ),
            st.uuids().map(lambda u: f'"idempotency_key": "{u}"'),
            st.uuids().map(lambda u: f"trace_id={u.hex}"),
            st.sampled_from(_WORDS).map(lambda w: f'{{"token": "{w}", "logprob": -0.25}}'),
            st.sampled_from(["sort(items, key=len)", "the keyboard", "a monkey", "password: str"]),
            st.sampled_from(["--max-tokens 512", "--verbose", "-p 8080", "key_id: 7"]),
            st.binary(min_size=24, max_size=96).map(
                lambda b: f'"image": "{base64.b64encode(b).decode()}"'
            ),
            st.sampled_from(_WORDS).map(
                lambda w: base64.b64encode(((w + " ") * 6).encode()).decode()
            ),
        ),
        min_size=1,
        max_size=30,
    ),
    deadline=None,
)(_look_alikes_stay_in_any_mix)


@settings(max_examples=100, deadline=None)
@given(
    secret_names("_"),
    credentials,
    st.sampled_from(['"', "'"]),
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6),
)
def test_an_unmatched_quote_hides_the_rest_of_its_line_only(
    name: str, value: str, quote: str, words: list[str]
) -> None:
    """A value whose closing quote is missing (a cut-off line): the next lines stay."""
    following = f"title: {quote}{' '.join(words)}{quote}\nsize: 3"
    out = redactor().text(f"{name}: {quote}{value}\n{following}")
    assert value not in out
    assert out.endswith("\n" + following), out


# --- secrets written with escapes: URL-encoded, JSON \u escapes, HTML entities -------

#: A body of letters and digits both (what the rest of a token looks like).
_BODY = st.from_regex(r"[A-Za-z]{3}[0-9]{3}[A-Za-z0-9]{30,40}", fullmatch=True)

_SLACK_BOT = "xox" + "b"
_DIGITS = "".join(str(d) for d in range(1, 10)) + "0"

#: Secrets planted in text, each from a drawn body: (the text, the part that must go).
_PLANTED = {
    "openai": lambda b: (f"sk-proj-{b}", b),
    "anthropic": lambda b: (f"sk-ant-api03-{b}", b),
    "github": lambda b: (f"ghp_{b}", b),
    "aws": lambda b: (f"AKIA{b.upper()[:16]}", b.upper()[:16]),
    # Put together here: a whole Slack-shaped literal in the source reads as a real token.
    "slack": lambda b: (f"{_SLACK_BOT}-{_DIGITS}-{b}", b),
    "google": lambda b: (f"AIza{(b * 2)[:35]}", (b * 2)[:35]),
    "bearer": lambda b: (f"Authorization: Bearer {b}", b),
    "password=": lambda b: (f"password={b}", b),
    "api_key json": lambda b: (f'"api_key": "{b}"', b),
    "secret ini": lambda b: (f"client_secret = {b}", b),
}


def _json_escaped(text: str, which: list[bool]) -> str:
    return "".join(
        f"\\u{ord(c):04x}" if not c.isalnum() and hit else c
        for c, hit in zip(text, which, strict=True)
    )


def _percent_encoded(text: str, which: list[bool]) -> str:
    return "".join(
        "".join(f"%{b:02X}" for b in c.encode()) if not c.isalnum() and hit else c
        for c, hit in zip(text, which, strict=True)
    )


def _html_escaped(text: str, which: list[bool]) -> str:
    del which
    return html.escape(text, quote=True)


_ESCAPINGS = {"percent": _percent_encoded, "json \\u": _json_escaped, "html": _html_escaped}

#: Where escaped text stands: a redirect's query, a form body, JSON text, a page.
_ESCAPED_IN = [
    "https://app.example/cb?next=%2Fv1%3Fq%3D{}",
    "q={}&n=1",
    "next={}",
    '{{"body": "x {} y"}}',
    "<pre>{}</pre>",
    "a%20{}%20b",
    "{}",
]


def _a_secret_written_with_escapes_is_hidden(
    kind: str, body: str, escaping: str, which: list[bool], where: str, lower: bool
) -> None:
    """Escapes before a token or a name, or standing for its ``=``, ``:`` or quote, hide
    nothing: ``%20sk-...``, ``password%3D...``, ``api_key\\u003d...``, ``&quot;...``."""
    planted, secret = _PLANTED[kind](body)
    which = (which * 2)[: len(planted)]
    escaped = _ESCAPINGS[escaping](planted, which)
    if lower:
        escaped = re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), escaped)
    text = where.format(escaped)
    out = redactor().text(text)
    assert secret not in out, (text, out)
    assert PLACEHOLDER in out
    assert redactor().text(out) == out  # idempotent


test_a_secret_written_with_escapes_is_hidden, test_a_secret_written_with_escapes_is_hidden_many = (
    tiered(
        100,
        300,
        st.sampled_from(sorted(_PLANTED)),
        _BODY,
        st.sampled_from(sorted(_ESCAPINGS)),
        st.lists(st.booleans(), min_size=80, max_size=80),
        st.sampled_from(_ESCAPED_IN),
        st.booleans(),
        deadline=None,
    )(_a_secret_written_with_escapes_is_hidden)
)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(KEPT), st.sampled_from(sorted(_ESCAPINGS)), st.sampled_from(_ESCAPED_IN))
def test_look_alikes_written_with_escapes_are_left_alone(
    text: str, escaping: str, where: str
) -> None:
    escaped = where.format(_ESCAPINGS[escaping](text, [True] * len(text)))
    assert redactor().text(escaped) is escaped


# --- more shapes: values mid-line, YAML values, code in JSON text, short names ---------

#: A value as YAML or a message writes it after ``name:``: any first character.
_YAML_VALUES = st.builds(
    lambda head, body: head + body,
    st.sampled_from([*"!@%&*`", "[", "{", ""]),
    credentials,
)

#: A ``name: value`` with more after it on its line, or its value on the next line.
_LINE_FORMS = {
    "list of pairs": lambda n, v: f"username: admin, {n}: {v}, host: db1",
    "sentence": lambda n, v: f"The {n}: {v}. Use it once.",
    "words after": lambda n, v: f"{n}: {v} for app x",
    "in parentheses": lambda n, v: f"(set {n}: {v})",
    "yaml": lambda n, v: f"db:\n  {n}: {v}\n  host: db1",
    "yaml block": lambda n, v: f"{n}: |\n  {v}\nnext: 1",
    "yaml folded": lambda n, v: f"{n}: >-\n    {v}\n",
    "yaml next line": lambda n, v: f"{n}:\n  {v}\nnext: 1",
    "code in JSON text": lambda n, v: json.dumps({"code": f'connect({n}="{v}")'}),
    "code in JSON text, spaced": lambda n, v: json.dumps({"code": f'{n} = "{v}"\nok'}),
}
_MID_LINE = {"list of pairs", "sentence", "words after", "in parentheses"}


def _a_secret_value_anywhere_on_its_line_or_the_next_is_hidden(
    name: str, value: str, form: str, in_json: bool
) -> None:
    """Mid-line values, YAML values starting with a sign or on the next line, quoted code
    inside JSON text."""
    if form in _MID_LINE:  # a flow value ([a, b], {k: v}) is YAML's, the whole line
        assume(value[0] not in "[{")
    if "github" in name.lower():  # a name only ending in "token": its value must look
        assume(value[0].isalnum())  # like a credential
    text = _LINE_FORMS[form](name, value)
    if in_json:
        text = json.dumps({"content": text})
    out = redactor().text(text)
    assert value not in out and value[1:] not in out, (text, out)
    assert redactor().text(out) == out  # idempotent


(
    test_a_secret_value_anywhere_on_its_line_or_the_next_is_hidden,
    test_a_secret_value_anywhere_on_its_line_or_the_next_is_hidden_many,
) = tiered(
    100,
    300,
    secret_names("_"),
    _YAML_VALUES,
    st.sampled_from(sorted(_LINE_FORMS)),
    st.booleans(),
    deadline=None,
)(_a_secret_value_anywhere_on_its_line_or_the_next_is_hidden)


#: Names that are words too, hidden in text given a credential: (name, the form).
_SHORT_NAMES = [
    "Server=db;Uid=u;Pwd={v};",
    "DB_PWD={v}",
    "PWD: {v}",
    "passcode={v}",
    "passcode: {v}",
    "DB_PASS={v}",
    "pass: {v}",
    "sig={v}",
    "https://b.s3.example/k?X-Amz-Credential=x&X-Amz-Signature={v}&n=1",
    "https://storage.example/b/o?X-Goog-Signature={v}",
    "authKey: {v}",
    "auth_key={v}",
]


def _short_secret_names_given_a_credential_are_hidden(form: str, value: str) -> None:
    out = redactor().text(form.format(v=value))
    assert value not in out and PLACEHOLDER in out, out


(
    test_short_secret_names_given_a_credential_are_hidden,
    test_short_secret_names_given_a_credential_are_hidden_many,
) = tiered(100, 200, st.sampled_from(_SHORT_NAMES), credentials, deadline=None)(
    _short_secret_names_given_a_credential_are_hidden
)


def test_short_names_and_headers_named_like_secrets_are_hidden_by_key() -> None:
    r = redactor()
    for key in ("pass", "passcode", "sig", "PWD", "authKey", "auth_key", "x-amz-signature"):
        assert r.is_secret_key(key), key
    for name in ("X-Csrf-Token", "X-Csrf", "X-XSRF-TOKEN", "x-jwt"):
        assert r.is_secret_header(name), name
    for key in ("pass_rate", "passed", "pass@1", "signal", "signed", "passenger"):
        assert not r.is_secret_key(key), key


_HEX = "0123456789abcdef"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

#: Provider tokens by prefix: (the form, with a body of each alphabet and length drawn).
_PROVIDERS: dict[str, tuple[str, ...]] = {
    "groq": ("gsk_", "{a52}"),
    "xai": ("xai-", "{a80}"),
    "replicate": ("r8_", "{a37}"),
    "langsmith pt": ("lsv2_pt_", "{h32}", "_", "{h10}"),
    "langsmith sk": ("lsv2_sk_", "{h32}", "_", "{h10}"),
    "tavily": ("tvly-", "{a32}"),
    "tavily dev": ("tvly-dev-", "{a32}"),
    "pinecone": ("pcsk_", "{a5}", "_", "{a60}"),
    "cerebras": ("csk-", "{l48}"),
    "fireworks": ("fw_", "{a24}"),
    "elevenlabs": ("sk_", "{h48}"),
    "supabase": ("sbp_", "{h40}"),
    "voyage": ("pa-", "{a43}"),
    "firecrawl": ("fc-", "{h32}"),
    "e2b": ("e2b_", "{h40}"),
    "notion": ("secret_", "{a43}"),
    "telegram": ("{d10}", ":AA", "{a33}"),
    "discord": ("MT", "{a22}", ".", "{a6}", ".", "{a38}"),
    "mailchimp": ("{h32}", "-us", "{d2}"),
}

_ALPHABETS = {
    "a": _ALNUM,
    "h": _HEX,
    "l": "abcdefghijklmnopqrstuvwxyz0123456789",
    "d": "0123456789",
}


@st.composite
def provider_tokens(draw: st.DrawFn) -> tuple[str, str]:
    """A provider token with a random body, and its random part (what must go)."""
    parts = _PROVIDERS[draw(st.sampled_from(sorted(_PROVIDERS)))]
    token, secret = "", ""
    for part in parts:
        m = re.fullmatch(r"\{([ahld])([0-9]+)\}", part)
        if m is None:
            token += part
            continue
        alphabet, size = _ALPHABETS[m.group(1)], int(m.group(2))
        body = draw(st.text(alphabet, min_size=size, max_size=size))
        if m.group(1) in "al":  # random bodies hold letters (of both cases) and digits
            upper = draw(st.sampled_from("ABCXYZ")) if m.group(1) == "a" else ""
            lower, digit = draw(st.sampled_from("abcxyz")), draw(st.sampled_from("0123456789"))
            body = body[: size - 2 - len(upper)] + upper + lower + digit
        token += body
        if len(body) > len(secret):  # the longest random part: a token's secret
            secret = body
    return token, secret


def _model_and_tool_provider_tokens_are_hidden(token: tuple[str, str], where: str) -> None:
    text, secret = token
    out = redactor().text(where.format(text))
    assert secret not in out and PLACEHOLDER in out, (text, out)


(
    test_model_and_tool_provider_tokens_are_hidden,
    test_model_and_tool_provider_tokens_are_hidden_many,
) = tiered(
    100,
    300,
    provider_tokens(),
    st.sampled_from(["{}", "key {} ok", '{{"k": "{}"}}', "x={}&n=1", "a%20{}"]),
    deadline=None,
)(_model_and_tool_provider_tokens_are_hidden)


@pytest.mark.parametrize(
    "text",
    [
        "fw_update_firmware_now",
        "the locale en-us is used",
        "meet at 12:30:AA",
        "secret_santa_list_for_the_holidays_this_year",
        "pa-the-annual-report-of-the-state-2024-final-version",
        "The password: required. Use it once.",
        "password: str, user: str",
        "def f(password: Optional[str] = None) -> None:",
        '{"password": {"a":1}, "secret": ["a", "b"]}',
        "credentials:\n  type: service_account\n  project: x",
        "secret:\n  - a\n  - b",
        "PWD=/home/user/project",
        "pass_rate: 0.95, passed: 12",
        "Your password: must have 8 chars",
        "{{ password }}",
    ],
)
def test_look_alikes_of_the_new_shapes_are_left_alone(text: str) -> None:
    assert redactor().text(text) is text


@settings(max_examples=100, deadline=None)
@given(secret_names("_"), credentials, st.sampled_from(["é", "✓", "日本", "ü"]))
def test_a_secret_in_base64_of_utf8_text_is_hidden(name: str, value: str, word: str) -> None:
    """Decoded base64 holding any non-ASCII character (valid UTF-8) is text, and searched."""
    blob = base64.b64encode(f'{{"note": "{word}", "{name}": "{value}"}}'.encode()).decode()
    assert redactor().text(blob) == PLACEHOLDER
    text = json.dumps({"file": "creds.json", "content": blob})
    assert blob not in redactor().text(text)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from([k for k in sorted(_PLANTED) if k not in {"bearer", "password="}]),
    _BODY,
    st.characters(min_codepoint=0x80, max_codepoint=0xFFFF, exclude_categories=["Cs"]),
)
def test_a_token_right_after_a_json_escaped_character_is_hidden(
    kind: str, body: str, before: str
) -> None:
    """JSON text written ASCII-only: a token right after ``\\u00e9`` or ``\\u201c``."""
    planted, secret = _PLANTED[kind](body)
    text = json.dumps({"m": f"x {before}{planted}{before} y"})  # ensure_ascii: \\uXXXX
    out = redactor().text(text)
    assert secret not in out and PLACEHOLDER in out, (text, out)
