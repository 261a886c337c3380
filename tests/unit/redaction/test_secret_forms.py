"""Forms a secret takes in text, each drawn as a class, hidden before anything is written.

Each class below draws many members: the names a secret goes by in any case
and separator style, values of several alphabets and lengths, and the text
around them.  The classes: a short command-line flag ``-p`` (``mysql -pS``,
``docker login -u x -p S``, ``sshpass -p S``), base64 of a secret inside prose
or YAML, a password told in prose with a value of letters alone, text escaped
twice (``%2522``, ``&amp;quot;``, ``\\u005cu0022``), XML elements and
attributes, SQL (``IDENTIFIED BY``, ``PASSWORD 'S'``), names with a space
(``API key: S``), credential-bearing names (pin, otp, jwt, hmac, salt,
connection strings, DSNs, private_key, client_secret, refresh_token,
session_token, bearer) and a password in a URL's user-info.  Each is checked
by the engine alone (many draws), then planted through real capture paths (a
span's attributes, name and event, a ``@tool``'s arguments, a model call's
messages) and every byte written is grepped.

What stays: prose about a password with no value in it ("the password is
required"), and ``-p`` where it is not a password: ``ssh -p 2222``, ``docker
run -p 8080:80``, ``psql -p 5432``, ``mkdir -p``, ``pytest -p`` - a ``-p`` is
taken for a password only in the commands that say so (mysql and its tools,
mongo, sshpass, a registry's ``login``) or beside a user's ``-u``.
"""

from __future__ import annotations

import base64
import html
import json
import re
import string
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.trace import TracerProvider

import otel_replay
from otel_replay.redaction import PLACEHOLDER, configure_redaction, redactor
from tests.fixtures.secrets import WRITING, every_byte

Drawn = tuple[str, str]  # (the text, the secret in it that must never be written)


@pytest.fixture(autouse=True)
def _default_redaction() -> Iterator[None]:
    configure_redaction()
    yield
    configure_redaction()


# --- what goes around a secret -----------------------------------------------------------

_WORDS = ["the", "order", "shipped", "Monday", "and", "then", "deploy", "ran", "on", "db1"]
_prose = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=6).map(" ".join)


def _value(alphabet: str, least: int = 8, most: int = 32) -> st.SearchStrategy[str]:
    # Varied enough to stand only where it was planted: six characters or more apart, two
    # digits (a secret made of one letter repeated would be found in any file).
    return st.text(alphabet=alphabet, min_size=least, max_size=most).filter(
        lambda v: len(set(v)) >= 6 and sum(c.isdigit() for c in v) >= 2
    )


_ALNUM = string.ascii_letters + string.digits
#: Values of several alphabets: letters and digits, hex, signs, letters of other scripts.
values = st.one_of(
    _value(_ALNUM),
    _value("0123456789abcdef", 12, 40),
    _value(_ALNUM + "._~+/!@$%^*-"),
    _value(_ALNUM + "äöüßéèñ日本語кириллица"),
)
#: A value with no space, quote, or sign that ends a value on a command line.
plain_values = st.one_of(_value(_ALNUM), _value(_ALNUM + "._~+/!@$%^*"))


@st.composite
def styled(draw: st.DrawFn, words: tuple[str, ...], separators: str = "_-") -> str:
    """``words`` as a name is written: snake, kebab, run together, camel, Pascal, UPPER or
    any case."""
    style = draw(st.sampled_from(["sep", "camel", "pascal", "upper", "flips"]))
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    sep = draw(st.sampled_from([*separators, ""]))
    name = sep.join(words)
    if style == "upper":
        return name.upper()
    if style == "flips":
        flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
        return "".join(c.upper() if up else c for c, up in zip(name, flips, strict=True))
    return name


def _flips(word: str) -> st.SearchStrategy[str]:
    return styled((word,))


# --- the classes -----------------------------------------------------------------------

_PASSWORD_COMMANDS = [
    "mysql -h db -u {u}",
    "mysqldump --host db -u{u}",
    "mariadb -u {u} -D app",
    "mongosh --host db -u {u}",
    "docker login -u {u}",
    "podman login registry.example.com -u {u}",
    "sshpass",
    "rabbitmqadmin -u {u}",
]


@st.composite
def short_flag(draw: st.DrawFn) -> Drawn:
    """``-p S`` and ``-pS`` in a command that takes a password so, or beside ``-u``."""
    command = draw(st.sampled_from(_PASSWORD_COMMANDS)).format(
        u=draw(st.sampled_from(["root", "bob"]))
    )
    secret = draw(st.one_of(plain_values, _value("0123456789", 6, 12)))
    form = draw(st.sampled_from(["-p {s}", "-p{s}", "-p '{s}'", '-p "{s}"', "-p={s}"]))
    if form == "-p{s}" and secret[0] == "-":
        form = "-p {s}"
    tail = draw(st.sampled_from(["", " app", " ssh -p 2222 host", " && echo ok", "\nnext"]))
    line = f"{command} {form.format(s=secret)}{tail}"
    if draw(st.booleans()):  # an argument list, as a tool call sends it
        words = [*command.split(), "-p", secret]
        line = json.dumps({"argv": words})
    return f"{draw(_prose)} $ {line}", secret


_INNER = [
    "password={s}",
    '{{"api_key": "{s}", "region": "eu"}}',
    "mysql -u root -p{s}",
    "Authorization: Bearer {s}",
    "client_secret: {s}\n",
]


@st.composite
def base64_inside(draw: st.DrawFn) -> Drawn:
    """Base64 of a secret's line, inside prose or a YAML value (not a whole value)."""
    secret = draw(st.one_of(_value(_ALNUM), _value(_ALNUM + "._-")))
    inner = draw(st.sampled_from(_INNER)).format(s=secret).encode()
    encode = draw(st.sampled_from([base64.b64encode, base64.urlsafe_b64encode]))
    blob = encode(inner).decode()
    if draw(st.booleans()):
        blob = blob.rstrip("=")
    where = draw(st.sampled_from(["prose", "yaml", "parens"]))
    # What must not be written is the run itself: the secret in it is spelled otherwise.
    if where == "yaml":
        return f"data:\n  name: app\n  creds: {blob}\n  size: 3", blob
    if where == "parens":
        return f"{draw(_prose)} (encoded: {blob}) {draw(_prose)}", blob
    return f"{draw(_prose)} {blob} {draw(_prose)}", blob


#: Words that end a participle or adverb ("hashed", "rotating"): prose, not a password.
_PREDICATE = re.compile(r"(?i)[a-z]+(?:ed|ing|ly|en)")


def _file_words() -> frozenset[str]:
    """The words of letters alone that any written trace holds: the OTLP/JSON keys
    (``resourceSpans``, ``stringValue``...), which a value drawn as a secret must not
    be, or its bytes stand in the file whatever the scrubbing."""
    words: set[str] = set()
    todo = [
        trace_service_pb2.ExportTraceServiceRequest.DESCRIPTOR,
        logs_service_pb2.ExportLogsServiceRequest.DESCRIPTOR,
    ]
    seen = set()
    while todo:
        message = todo.pop()
        if message.full_name in seen:
            continue
        seen.add(message.full_name)
        for field in message.fields:
            words.update((field.json_name.lower(), field.name.lower()))
            if field.message_type is not None:
                todo.append(field.message_type)
    return frozenset(words)


_FILE_WORDS = _file_words()


@st.composite
def told_in_prose(draw: st.DrawFn) -> Drawn:
    """``the password is S and ...``: a value of letters alone, mid-line."""
    name = draw(st.sampled_from(["password", "passwd", "passphrase", "passcode"]).flatmap(_flips))
    said = draw(st.sampled_from([" is", " was", " is now", " was set to", ":", " is:"]))
    letters = string.ascii_letters + "äöüéñ"
    secret = draw(
        # (eight letters, six apart, a capital inside: a shorter word, or a word such as
        # "function", could stand in the file by chance)
        st.text(alphabet=letters, min_size=8, max_size=20).filter(
            lambda v: (
                len(set(v.lower())) >= 6
                and any(c.isupper() for c in v[1:])
                and not _PREDICATE.fullmatch(v)
                and v.lower() not in _FILE_WORDS
            )
        )
    )
    quoted = draw(st.sampled_from(["{s}", "'{s}'", '"{s}"'])).format(s=secret)
    after = draw(st.sampled_from([" and", ",", ".", ";", " then", "!"]))
    return f"{draw(_prose)} The {name}{said} {quoted}{after} {draw(_prose)}", secret


def _percent(text: str) -> str:
    return quote(text, safe="")


def _entities(text: str) -> str:
    return html.escape(text, quote=True)


def _json_u(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if c in "\"'=:\\&<>" else c for c in text)


def _json_string(text: str) -> str:
    return json.dumps(text)[1:-1]


_ESCAPERS: dict[str, Callable[[str], str]] = {
    "percent": _percent,
    "html": _entities,
    "json \\u": _json_u,
    "json string": _json_string,
}


@st.composite
def escaped_twice(draw: st.DrawFn) -> Drawn:
    """A secret's line escaped twice, by any two of a URL's, HTML's and JSON's escapes."""
    secret = draw(_value(_ALNUM))
    base = draw(
        st.sampled_from(
            ['{{"password": "{s}"}}', "password={s}", "api_key='{s}'", "<secret>{s}</secret>"]
        )
    ).format(s=secret)
    first, second = draw(st.lists(st.sampled_from(sorted(_ESCAPERS)), min_size=2, max_size=2))
    if {first, second} <= {"json string"}:
        second = "percent"
    return f"{draw(_prose)} {_ESCAPERS[second](_ESCAPERS[first](base))} {draw(_prose)}", secret


_SECRET_WORDS = [
    ("password",),
    ("db", "password"),
    ("api", "key"),
    ("client", "secret"),
    ("secret",),
    ("access", "token"),
    ("private", "key"),
    ("connection", "string"),
    ("auth", "token"),
    ("refresh", "token"),
]


@st.composite
def xml(draw: st.DrawFn) -> Drawn:
    """``<Password>S</Password>``, ``<apiKey id="1">S</apiKey>``, ``password="S"``,
    ``<input type="password" ... value="S">``."""
    name = draw(st.sampled_from(_SECRET_WORDS).flatmap(lambda w: styled(w, "_-")))
    secret = draw(values)
    form = draw(st.sampled_from(["element", "attribute", "input"]))
    if form == "element":
        attrs = draw(st.sampled_from(["", ' id="1"', " encrypted='false'"]))
        text = f"<config><{name}{attrs}>{secret}</{name}><host>db1</host></config>"
    elif form == "attribute":
        quote_ = draw(st.sampled_from(['"', "'"]))
        text = f"<user name={quote_}bob{quote_} {name}={quote_}{secret}{quote_} />"
    else:
        text = f'<input type="password" name="pw" class="wide" value="{secret}">'
    return f"{draw(_prose)} {text} {draw(_prose)}", secret


@st.composite
def sql(draw: st.DrawFn) -> Drawn:
    """``IDENTIFIED BY 'S'``, ``IDENTIFIED WITH plugin BY 'S'``, ``PASSWORD 'S'``."""
    secret = draw(values)
    statement = draw(
        st.sampled_from(
            [
                "CREATE USER 'app'@'%' IDENTIFIED BY '{s}';",
                "ALTER USER app IDENTIFIED WITH mysql_native_password BY '{s}';",
                "GRANT ALL ON db.* TO 'app'@'localhost' IDENTIFIED BY \"{s}\";",
                "CREATE ROLE app WITH LOGIN PASSWORD '{s}';",
                "ALTER ROLE app PASSWORD '{s}' VALID UNTIL 'infinity';",
            ]
        )
    )
    flips = draw(st.lists(st.booleans(), min_size=len(statement), max_size=len(statement)))
    cased = "".join(
        c.lower() if low and c.isupper() else c for c, low in zip(statement, flips, strict=True)
    )
    return cased.format(s=secret), secret


_SPACED = [
    ("api", "key"),
    ("access", "token"),
    ("access", "key"),
    ("private", "key"),
    ("auth", "token"),
    ("session", "token"),
    ("refresh", "token"),
    ("subscription", "key"),
    ("signing", "key"),
    ("connection", "string"),
]


@st.composite
def spaced_name(draw: st.DrawFn) -> Drawn:
    """``API key: S``, ``the access token = S``: a name with a space inside it."""
    words = draw(st.sampled_from(_SPACED))
    name = draw(_flips(" ".join(words)))
    secret = draw(plain_values)
    form = draw(st.sampled_from(["{n}: {s}\n", "{n} = {s} ", "{n}={s} ", "{n}: {s}, then"]))
    return f"{draw(_prose)} the {form.format(n=name, s=secret)}{draw(_prose)}", secret


_CREDENTIAL_NAMES = [
    ("pin",),
    ("otp",),
    ("totp",),
    ("jwt",),
    ("hmac",),
    ("salt",),
    ("pin", "code"),
    ("hmac", "key"),
    ("jwt", "secret"),
    ("connection", "string"),
    ("conn", "str"),
    ("dsn",),
    ("private", "key"),
    ("client", "secret"),
    ("refresh", "token"),
    ("session", "token"),
    ("bearer",),
]


def credential_names(separators: str = "_-") -> st.SearchStrategy[str]:
    """The names of credential-bearing fields, styled, maybe after a prefix (``db_``)."""
    return st.builds(
        lambda prefix, name: prefix + name,
        st.sampled_from(["", "db_", "APP_", "user.", "x-"]),
        st.sampled_from(_CREDENTIAL_NAMES).flatmap(lambda w: styled(w, separators)),
    )


@st.composite
def named(draw: st.DrawFn) -> Drawn:
    """A credential-bearing name given a value in env, YAML, INI, JSON or Python text."""
    name = draw(credential_names())
    secret = draw(plain_values)
    form = draw(
        st.sampled_from(["{n}={s}\n", "{n}: {s}\n", "{n} = {s}\n", '{{"{n}": "{s}"}}', "{n}='{s}'"])
    )
    return f"{draw(_prose)}\n{form.format(n=name, s=secret)}", secret


@st.composite
def url_user_info(draw: st.DrawFn) -> Drawn:
    """``scheme://user:S@host``, the password holding signs (``@`` and ``/`` too) or not;
    but not digits then ``/`` first, read as a port and a path (``host:3000/u/me@x.io``)."""
    secret = draw(
        st.one_of(plain_values, _value(_ALNUM + "@!$*~.-")).filter(
            lambda v: not re.match(r"[0-9]{1,5}/", v)
        )
    )
    scheme = draw(st.sampled_from(["postgres", "mysql", "redis", "amqp", "mongodb+srv", "https"]))
    dsn = f"{scheme}://app:{secret}@db.internal:5432/prod"
    form = draw(st.sampled_from(["{d}", "DSN={d}", "dsn: {d}", '{{"url": "{d}"}}']))
    return f"{draw(_prose)} {form.format(d=dsn)} {draw(_prose)}", secret


@st.composite
def subscript(draw: st.DrawFn) -> Drawn:
    """A value assigned to a subscript named as a credential, as code sets one:
    ``os.environ["OPENAI_API_KEY"] = "S"``, ``headers['x-api-key'] = 'S'``."""
    name = draw(credential_names())
    secret = draw(_value(_ALNUM + "._~+/!@$%^*-"))
    owner = draw(st.sampled_from(["os.environ", "headers", "config", "self.settings", "env"]))
    quote = draw(st.sampled_from(["'", '"']))
    space = draw(st.sampled_from(["", " "]))
    line = f"{owner}[{quote}{name}{quote}]{space}={space}{quote}{secret}{quote}"
    return f"{draw(_prose)}\n{line}\n{draw(_prose)}", secret


@st.composite
def yaml_tag(draw: st.DrawFn) -> Drawn:
    """A YAML value after a tag: ``password: !!str S``."""
    name = draw(credential_names())
    secret = draw(plain_values)
    tag = draw(
        st.sampled_from(["!!str", "!!binary", "!!python/str"]).filter(lambda t: "/" not in t)
    )
    return f"{draw(_prose)}\n{name}: {tag} {secret}\n", secret


FORMS: dict[str, st.SearchStrategy[Drawn]] = {
    "short flag": short_flag(),
    "base64 inside": base64_inside(),
    "told in prose": told_in_prose(),
    "escaped twice": escaped_twice(),
    "xml": xml(),
    "sql": sql(),
    "spaced name": spaced_name(),
    "named": named(),
    "url user-info": url_user_info(),
    "subscript": subscript(),
    "yaml tag": yaml_tag(),
}


# --- the engine alone ----------------------------------------------------------------


_drawn = st.sampled_from(sorted(FORMS)).flatmap(lambda form: st.tuples(st.just(form), FORMS[form]))


def _hidden_in_text(drawn: tuple[str, Drawn]) -> None:
    form, (text, secret) = drawn
    out = redactor().text(text)
    assert secret not in out, (form, text, out)
    assert PLACEHOLDER in out
    assert redactor().text(out) == out  # hiding again changes nothing


test_every_form_is_hidden_in_text = settings(max_examples=300, deadline=None)(
    given(_drawn)(_hidden_in_text)
)
test_every_form_is_hidden_in_many_texts = pytest.mark.slow(
    settings(max_examples=5000, deadline=None)(given(_drawn)(_hidden_in_text))
)


@settings(max_examples=200, deadline=None)
@given(credential_names("_-."), values)
def test_credential_bearing_names_are_hidden_by_key(name: str, secret: str) -> None:
    hidden: list[str] = []
    out = redactor().scrub({"settings": {name: secret, "region": "eu"}}, "args", hidden)
    assert out["settings"] == {name: PLACEHOLDER, "region": "eu"}, name
    assert redactor().is_secret_header(name)


# --- what stays ------------------------------------------------------------------------

_NOT_A_PASSWORD_FLAG = [
    "ssh -p {n} deploy@host",
    "scp -P {n} file host:",
    "docker run -p {n}:80 nginx",
    "docker run -p 127.0.0.1:{n}:{n} app",
    "kubectl port-forward svc/app -p {n}",
    "psql -U app -p {n} -d prod",
    "mkdir -p build/out{n}",
    "python -m pytest -p no:randomly -k test_{n}",
    "git add -p src/app.py",
    "cp -p a.txt b{n}.txt",
    "git log -u -p src/app{n}.py",
    "diff -u -p old{n}.c new.c",
    "docker run --name mysql -p {n}:3306 -d mysql:8",
    "docker login registry.io && docker run -p 127.0.0.1:{n}:80/tcp app",
]
_ABOUT_A_PASSWORD = [
    "The {n} is required.",
    "Your {n} is incorrect, try again",
    "the {n} was reset yesterday and the mail was sent",
    "The {n}: must have 8 characters",
    "Reset your {n}: click the link below",
    "the {n} is stored hashed in the users table",
    "The {n} is being rotated",
    "{n}: str, user: str",
    "def login(user, {n}: Optional[str] = None) -> None:",
    "the {n} is too short",
    "pin_memory=True, salt_rounds=10, ping the host",
    "if not {n}: return None",
    "if {n} is None: raise ValueError('no {n}')",
    "{n}: string; user: string",
    "pub {n}: String, pub user: String,",
    "fn check({n}: &str) -> bool",
    "The {n}: **required** for the admin",
]


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.builds(
            lambda form, n: form.format(n=n),
            st.sampled_from(_NOT_A_PASSWORD_FLAG),
            st.integers(1, 65535),
        ),
        st.builds(
            lambda form, n: form.format(n=n),
            st.sampled_from(_ABOUT_A_PASSWORD),
            st.sampled_from(["password", "passphrase"]).flatmap(_flips),
        ),
    ),
    _prose,
)
def test_look_alikes_of_these_forms_are_left_alone(text: str, words: str) -> None:
    """A -p that is a port, a flag or a plugin, and prose about a password with no value."""
    line = f"{words} {text}"
    assert redactor().text(line) is line


# --- through the capture paths --------------------------------------------------------


def _record(root: Path, planted: dict[str, Drawn]) -> None:
    """Every planted text through a span's attributes, name and event, a tool's arguments
    and result, a file a tool returns as bytes, and a model call's messages; key-named
    fields in the tool's arguments."""
    texts = [text for text, _ in planted.values()]

    @otel_replay.tool
    def run_command(command: str, settings: dict[str, str]) -> str:
        return "\n".join(texts)

    @otel_replay.tool
    def download(name: str) -> bytes:
        """A file, as bytes: in UTF-16 (as Windows writes it), kept in the blob store."""
        return b"\xff\xfe" + "\n".join(texts).encode("utf-16-le")

    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    exporter = otel_replay.FileSpanExporter(root / "run.otlp", max_inline_bytes=256)
    provider.add_span_processor(otel_replay.RecordingSpanProcessor(exporter))
    bare = TracerProvider()  # no processor: the exporter scrubs alone
    bare_exporter = otel_replay.FileSpanExporter(root / "bare.jsonl", format="json")
    bare.add_span_processor(otel_replay.RecordingSpanProcessor(bare_exporter))
    previous = otel_replay.use_tracer_provider(provider)
    try:
        for tracer in (provider.get_tracer("acme"), bare.get_tracer("acme")):
            with tracer.start_as_current_span(f"run {texts[0]}") as span:
                for i, text in enumerate(texts):
                    span.set_attribute(f"config.{i}", text)
                    span.add_event(f"step {text}", {"detail": text})
        with otel_replay.agent_run("forms"):
            for text, secret in planted.values():
                run_command(text, {"db_password": secret, "pin": secret, "dsn": secret})
            with otel_replay.model_call(
                provider="openai",
                model="gpt-x",
                messages=[{"role": "user", "content": text} for text in texts],
            ) as call:
                call.record("\n".join(texts), input_tokens=1, output_tokens=1)
            download("settings.ini")
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()
        bare.shutdown()
    assert exporter.dropped == 0 and bare_exporter.dropped == 0


def hidden_on_every_capture_path(
    forms: dict[str, st.SearchStrategy[Drawn]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Draws a member of each of ``forms``, plants them all through ``_record`` and greps
    every byte written for each secret (as text, in JSON text, in UTF-16)."""

    @WRITING
    @given(st.fixed_dictionaries(forms))
    def check(planted: dict[str, Drawn]) -> None:
        root = tmp_path_factory.mktemp("forms")
        _record(root, planted)
        written = every_byte(root)
        assert any(".blobs" in where for where in written), "no blob was written"
        leaks = [
            f"{form} in {where}"
            for form, (_, secret) in planted.items()
            for where, data in written.items()
            for spelled in {
                secret.encode(),
                json.dumps(secret)[1:-1].encode(),
                secret.encode("utf-16-le"),
            }
            if spelled in data
        ]
        assert not leaks, leaks

    check()


def test_every_form_is_hidden_on_every_capture_path(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    hidden_on_every_capture_path(FORMS, tmp_path_factory)
