"""More forms a secret takes, each drawn as a class, hidden before anything is written.

The sibling of ``test_secret_forms.py`` (its strategies and capture paths are
reused).  The classes:

* a credential in a URL's path: a Telegram bot token, a Discord webhook's, a
  Slack webhook, Sumo Logic's OTLP receiver, a segment after a singular key
  word (``/token/S``, ``/api-key/S``);
* credential files: ``.netrc`` (one line or many), ``.pgpass``, a bare
  ``user:S@host:port`` (``.git-credentials``, proxy settings);
* a table row (``| api_key | S |``, ``api_key | S``) and a value on the line
  after a line continuation (``api_key=\\`` then ``S``);
* a value told in prose for any credential name (``the api key is S``, ``the
  token was S``);
* the OTLP vendors' credential headers (``x-honeycomb-team``, SigNoz,
  Lightstep, Splunk, Uptrace, New Relic, Datadog, Dynatrace, Elastic, Sentry)
  in header lines, header mappings and ``OTEL_EXPORTER_OTLP_HEADERS`` strings;
* hex of text holding a secret.

What stays, per class: URL paths with ids (numbers, UUIDs, commit ids, slugs,
file names, plural collections), IPv6 addresses and times, prose about
machines and logins, ordinary and schema tables, prose naming a credential
with no value, hex digests, UUIDs and commit ids.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import uuid
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.redaction import PLACEHOLDER, redactor
from tests.unit.redaction.test_secret_forms import (
    Drawn,
    _hidden_in_text,
    _prose,
    _value,
    hidden_on_every_capture_path,
    plain_values,
    styled,
)

_ALNUM = string.ascii_letters + string.digits
_URL_SAFE = _ALNUM + "_-"


def _letters_and_digits(v: str) -> bool:
    return any(c.isalpha() for c in v) and sum(c.isdigit() for c in v) >= 2


#: A token as APIs issue them: 16 to 48 characters of a URL-safe alphabet, letters and
#: digits both, not a slug of lower-case words.
tokens = _value(_URL_SAFE, 16, 48).filter(
    lambda v: _letters_and_digits(v) and not re.fullmatch(r"[a-z]+(?:[-_][a-z0-9]+)+", v)
)
#: A credential where only a generic name (``*_token``) says so: 12 characters or more.
credentials = _value(_ALNUM + "_-./+=", 12, 40).filter(_letters_and_digits)
_HOSTS = ["db.internal", "api.example.com", "10.0.0.7", "git.corp.example", "localhost"]


def _around(draw: st.DrawFn, text: str) -> str:
    """``text`` in prose, a command, a JSON string or a YAML value."""
    form = draw(st.sampled_from(["{t}", "curl -sS '{t}'", '{{"url": "{t}"}}', "url: {t}\n"]))
    return f"{draw(_prose)} {form.format(t=text)} {draw(_prose)}"


# --- 1. a credential in a URL's path -------------------------------------------------


@st.composite
def url_path(draw: st.DrawFn) -> Drawn:
    kind = draw(st.sampled_from(["telegram", "discord", "slack", "sumo", "key word"]))
    if kind == "telegram":
        bot = draw(st.integers(10_000_000, 9_999_999_999))
        secret = "AA" + draw(_value(_URL_SAFE, 33, 33))
        method = draw(st.sampled_from(["sendMessage", "getUpdates", "getMe"]))
        url = f"https://api.telegram.org/bot{bot}:{secret}/{method}"
    elif kind == "discord":
        host = draw(st.sampled_from(["discord.com", "discordapp.com", "ptb.discord.com"]))
        hook = draw(st.integers(10**16, 10**19))
        secret = draw(_value(_URL_SAFE, 60, 68))
        url = f"https://{host}/api/webhooks/{hook}/{secret}"
    elif kind == "slack":
        upper = string.ascii_uppercase + string.digits
        team, bot = draw(_value(upper, 8, 10)), draw(_value(upper, 8, 10))
        secret = draw(_value(_ALNUM, 24, 24))
        url = f"https://hooks.slack.com/services/T{team}/B{bot}/{secret}"
    elif kind == "sumo":
        secret = draw(_value(_ALNUM + "_-", 40, 80)) + draw(st.sampled_from(["", "=="]))
        url = f"https://endpoint4.collection.sumologic.com/receiver/v1/otlp/{secret}/v1/traces"
    else:
        word = draw(
            st.sampled_from(
                [("token",), ("key",), ("secret",), ("api", "key"), ("access", "token")]
            ).flatmap(lambda w: styled(w, "_-"))
        )
        secret = draw(tokens)
        rest = draw(st.sampled_from(["", "/refresh", "/v1/send", "?format=json"]))
        url = f"https://api.example.com/v2/{word}/{secret}{rest}"
    return _around(draw, url), secret


# --- 2. credential files -------------------------------------------------------------


@st.composite
def credential_file(draw: st.DrawFn) -> Drawn:
    kind = draw(st.sampled_from(["netrc", "netrc lines", "pgpass", "bare user-info"]))
    host = draw(st.sampled_from(_HOSTS))
    user = draw(st.sampled_from(["bob", "app", "deploy-bot", "x.y"]))
    if kind == "pgpass":
        secret = draw(plain_values.filter(lambda v: not re.fullmatch(r"[0-9a-fA-F]{1,4}", v)))
        port = draw(st.sampled_from(["5432", "*", "6432"]))
        line = f"{host}:{port}:{draw(st.sampled_from(['prod', '*', 'app_db']))}:{user}:{secret}"
        other = "other.host:5432:*:reader:*"
        text = "\n".join(draw(st.permutations([line, other]))) + "\n"
    elif kind == "bare user-info":
        secret = draw(plain_values.filter(lambda v: "@" not in v and "/" not in v))
        form = draw(
            st.sampled_from(["{u}:{s}@{h}:{p}", "proxy={u}:{s}@{h}:{p}", "[{u}:{s}@{h}:{p}]"])
        )
        text = form.format(u=user, s=secret, h=host, p=draw(st.integers(1, 65535)))
    else:
        secret = draw(plain_values)
        login = f"login {user}"
        fields = [login, f"password {secret}"]
        if draw(st.booleans()):
            fields.insert(1, "account ops")
        sep = " " if kind == "netrc" else draw(st.sampled_from(["\n  ", "\n\t", "\n"]))
        text = f"machine {host}{sep}" + sep.join(fields)
        if draw(st.booleans()):
            text += f"\ndefault login anonymous password {draw(plain_values)}"
    if draw(st.booleans()):  # the file as a tool read it, in a JSON string
        text = json.dumps({"path": "~/.netrc", "content": text})
    return f"{draw(_prose)}\n{text}\n{draw(_prose)}", secret


# --- 3. tables and line continuations ------------------------------------------------

_NAMES = [
    ("password",),
    ("db", "password"),
    ("api", "key"),
    ("secret",),
    ("client", "secret"),
    ("access", "token"),
    ("auth", "token"),
    ("api", "token"),
    ("private", "key"),
]
_names = st.sampled_from(_NAMES).flatmap(lambda w: styled(w, "_-"))
_GENERIC = [("github", "token"), ("slack", "token"), ("stripe", "key"), ("signing", "key")]
_generic_names = st.sampled_from(_GENERIC).flatmap(lambda w: styled(w, "_-"))


@st.composite
def table_or_continued(draw: st.DrawFn) -> Drawn:
    kind = draw(st.sampled_from(["markdown", "text table", "continued", "continued generic"]))
    if kind == "continued generic":
        name, secret = draw(_generic_names), draw(credentials)
    else:
        name, secret = draw(_names), draw(plain_values)
    if kind == "markdown":
        cell = draw(st.sampled_from(["{s}", "`{s}`"])).format(s=secret)
        rows = [f"| {name} | {cell} |", "| region | eu-west-1 |"]
        text = "| Setting | Value |\n|---|---|\n" + "\n".join(draw(st.permutations(rows)))
    elif kind == "text table":
        text = f"host | db1\n{name} | {secret}\nport | 5432"
    else:
        export = draw(st.sampled_from(["", "export ", "ENV "]))
        quote_ = draw(st.sampled_from(["", '"', "'"]))
        indent = draw(st.sampled_from(["", "  ", "\t"]))
        text = f"{export}{name}=\\\n{indent}{quote_}{secret}{quote_}\nnext_line=1"
    if draw(st.booleans()):  # in JSON text, as a message carries it
        text = json.dumps({"content": text})
    return f"{draw(_prose)}\n{text}\n", secret


# --- 4. told in prose ----------------------------------------------------------------


@st.composite
def told(draw: st.DrawFn) -> Drawn:
    if draw(st.booleans()):
        name, secret = draw(_names), draw(plain_values)
    else:
        name = draw(
            st.sampled_from(["token", "Token", *_GENERIC]).map(
                lambda w: w if isinstance(w, str) else "_".join(w)
            )
        )
        secret = draw(credentials)
    said = draw(st.sampled_from([" is", " was", " is now", " was set to", " is:"]))
    after = draw(st.sampled_from(["", ".", ",", " and", ";"]))
    quoted = draw(st.sampled_from(["{s}", "'{s}'", '"{s}"'])).format(s=secret)
    return f"{draw(_prose)} the {name}{said} {quoted}{after} {draw(_prose)}", secret


# --- 5. the OTLP vendors' credential headers -----------------------------------------

_VENDOR_HEADERS = [
    "x-honeycomb-team",
    "signoz-ingestion-key",
    "signoz-access-token",
    "lightstep-access-token",
    "x-sf-token",
    "api-key",
    "dd-api-key",
    "x-insert-key",
    "x-license-key",
]
#: Vendors' credentials: alphanumeric, hex, UUIDs (SigNoz), base64.
vendor_values = st.one_of(
    _value(_ALNUM, 22, 40),
    _value("0123456789abcdef", 32, 64),
    st.uuids().map(str),
    _value(_ALNUM + "+/", 24, 40).map(lambda v: v + "=="),
)


@st.composite
def vendor_header(draw: st.DrawFn) -> Drawn:
    kind = draw(st.sampled_from(["named", "uptrace", "scheme", "sentry"]))
    secret = draw(vendor_values)
    if kind == "named":
        name, value = draw(st.sampled_from(_VENDOR_HEADERS).flatmap(_cased)), secret
    elif kind == "uptrace":
        name = draw(_cased("uptrace-dsn"))
        value = f"https://{secret}@api.uptrace.dev?grpc=4317"
    elif kind == "scheme":
        name = draw(_cased("authorization"))
        value = draw(st.sampled_from(["Api-Token", "ApiKey", "Bearer"])) + " " + secret
    else:
        name = draw(_cased("x-sentry-auth"))
        value = f"Sentry sentry_version=7, sentry_client=py/2.0, sentry_key={secret}"
    form = draw(st.sampled_from(["line", "env", "env encoded", "dict", "json"]))
    if form == "line":
        text = f"POST /v1/traces HTTP/1.1\nHost: otlp\n{name}: {value}\nContent-Type: x"
    elif form.startswith("env"):
        shown = quote(value, safe="") if form == "env encoded" else value.replace(",", "%2C")
        pairs = [f"{name}={shown}", "x-honeycomb-dataset=prod"]
        env = draw(st.sampled_from(["", "_TRACES", "_LOGS"]))
        text = f"OTEL_EXPORTER_OTLP{env}_HEADERS=" + ",".join(draw(st.permutations(pairs)))
    elif form == "dict":
        text = repr({"endpoint": "https://otlp", "headers": {name: value}})
    else:
        text = json.dumps({"headers": {name: value, "x-scope-orgid": "tenant1"}})
    return f"{draw(_prose)} {text} {draw(_prose)}", secret


def _cased(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from([name, name.upper(), name.title(), name.replace("-", "_")])


# --- 6. hex of text holding a secret -------------------------------------------------

_INNER = [
    "password={s}",
    '{{"api_key": "{s}"}}',
    "Authorization: Bearer {s}",
    "client_secret: {s}\n",
    "x-honeycomb-team: {s}",
]


@st.composite
def hexed(draw: st.DrawFn) -> Drawn:
    secret = draw(_value(_ALNUM, 12, 32))
    run = draw(st.sampled_from(_INNER)).format(s=secret).encode().hex()
    if draw(st.booleans()):
        run = run.upper()
    form = draw(st.sampled_from(["{r}", "0x{r}", '{{"blob": "{r}"}}', "data: {r}\n"]))
    return f"{draw(_prose)} {form.format(r=run)} {draw(_prose)}", run


FORMS: dict[str, st.SearchStrategy[Drawn]] = {
    "url path": url_path(),
    "credential file": credential_file(),
    "table or continued": table_or_continued(),
    "told": told(),
    "vendor header": vendor_header(),
    "hex": hexed(),
}


# --- the engine alone ----------------------------------------------------------------

_drawn = st.sampled_from(sorted(FORMS)).flatmap(lambda form: st.tuples(st.just(form), FORMS[form]))


test_every_form_is_hidden_in_text = settings(max_examples=300, deadline=None)(
    given(_drawn)(_hidden_in_text)
)
test_every_form_is_hidden_in_many_texts = pytest.mark.slow(
    settings(max_examples=5000, deadline=None)(given(_drawn)(_hidden_in_text))
)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from([*_VENDOR_HEADERS, "uptrace-dsn", "OTEL_EXPORTER_OTLP_HEADERS"]).flatmap(
        _cased
    ),
    vendor_values,
)
def test_vendor_headers_are_hidden_by_name(name: str, secret: str) -> None:
    """In a header mapping and as a field (an attribute, an env mapping)."""
    hidden: list[str] = []
    assert redactor().headers({name: secret, "accept": "x"}, "h", hidden) == {
        name: PLACEHOLDER,
        "accept": "x",
    }
    assert redactor().scrub({name: secret}, "env", hidden) == {name: PLACEHOLDER}


# --- what stays ----------------------------------------------------------------------

#: Ids a URL's path holds: numbers, UUIDs, words, slugs, file names; after a key word too.
_IDS = st.one_of(
    st.integers(0, 10**19).map(str),
    st.uuids().map(str),
    st.sampled_from(["refresh", "revoke", "my-project-name-2024", "report-2024-final.pdf"]),
)
#: And commit ids, but not after a key word: there hex is taken for a token (many are).
_HASHES = st.binary(min_size=1).map(lambda b: hashlib.sha1(b).hexdigest())
_PATHS = [
    "/key/{i}",
    "/token/{i}",
    "/api-key/{i}",
]
_PATHS_ANY_ID = [
    "/users/{i}/keys/{i}",
    "/api/v1/tokens/{i}",
    "/repos/acme/app/git/commits/{i}",
    "/webhooks/{i}",
    "/objects/{i}/secret-santa",
]
_TABLES = [
    "| Name | Type | Description |\n|---|---|---|\n| {n} | string | Your {n} |\n| {n} | str | x |",
    "| {n} | required |\n| {n} | optional |\n| {n} | **required** |\n| {n} | Yes |",
    "| requests | 1200 |\n| key | value |\n| {n} | `str` |",
    "{n} | string | the {n} to use",
]
_PROSE_NAMED = [
    "the {n} is required",
    "the {n} was rotated yesterday",
    "your {n} is invalid",
    "the {n} is stored in Vault",
    "the {n} is in the header",
    "the {n} is None",
    "The {n} was regenerated and sent",
]
_NOT_FILES = [
    "fe80::1ff:fe23:4567:890a",
    "2001:db8:85a3:0:0:8a2e:370:7334\n",
    "fe80:0:0:0:1ff:fe23:4567:890a\n",
    "at 12:30:45 the job ran",
    "machine learning models are trained",
    "the default login page and password reset page",
    "Use the default login and password to sign in",
    "ssh git@github.com:org/repo.git",
    "mail bob@example.com about localhost:8080",
    "redis at cache:6379, Re: meeting at 10:30",
]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.builds(
            lambda p, i: "GET https://api.example.com" + p.format(i=i),
            st.sampled_from(_PATHS),
            _IDS,
        ),
        st.builds(
            lambda p, i: "GET https://api.example.com" + p.format(i=i),
            st.sampled_from(_PATHS_ANY_ID),
            st.one_of(_IDS, _HASHES),
        ),
        st.builds(lambda t, n: t.format(n=n), st.sampled_from(_TABLES), _names),
        st.builds(
            lambda t, n: t.format(n=n),
            st.sampled_from(_PROSE_NAMED),
            st.one_of(_names, _generic_names, st.just("token")),
        ),
        st.sampled_from(_NOT_FILES),
        st.binary(min_size=1).map(lambda b: "sha256 " + hashlib.sha256(b).hexdigest()),
        st.binary(min_size=1).map(
            lambda b: hashlib.md5(b).hexdigest() + hashlib.sha1(b).hexdigest()
        ),
        st.uuids().map(lambda u: f"id={u.hex} trace {uuid.uuid4().hex}{uuid.uuid4().hex[:16]}"),
    ),
    _prose,
)
def test_look_alikes_of_these_forms_are_left_alone(text: str, words: str) -> None:
    """Ids in URL paths, ordinary and schema tables, prose with no value, IPv6 addresses and
    times, hex digests, UUIDs and commit ids."""
    line = f"{words} {text}"
    assert redactor().text(line) is line


# --- through the capture paths -------------------------------------------------------


def test_every_form_is_hidden_on_every_capture_path(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    hidden_on_every_capture_path(FORMS, tmp_path_factory)
