"""Every secret format of a public scanner's catalogue is hidden before it reaches disk.

The catalogue is gitleaks' default configuration (``tests/data/gitleaks/``):
for each rule a secret is drawn from the rule's own regular expression (a
small generator over its parse tree, checked against the expression), then
planted the way such secrets travel through an agent: in ``NAME=value``,
``name: value`` and JSON text under the name the rule is about (its id:
``ADAFRUIT_API_KEY``), under that name as a ``@tool`` argument's field, and,
for the rules that know a secret by its own shape, alone in prose and in the
line the rule was written for (a ``curl`` command, a NuGet config).  Each
secret goes through three capture paths at once, recorded through the real
OTel SDK with ``ReplaySpanProcessor`` and ``FileSpanExporter`` (spans, blobs):
the attributes of a span another instrumentation writes, a ``@tool``'s
arguments and result, and ``model_call`` messages.  Then every byte written is
searched for every secret.  A rule not caught must be in ``NOT_CAUGHT``, with
the reason.
"""

from __future__ import annotations

import functools
import json
import random
import re
import string
from pathlib import Path
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest
import tomllib
from opentelemetry.sdk.trace import TracerProvider

import otel_replay
from otel_replay.redaction import configure_redaction
from tests.fixtures.data import TESTS

CATALOGUE = TESTS / "data" / "gitleaks" / "gitleaks.toml"

#: Where a secret goes in: a span's attributes, a tool's arguments and result, a model
#: call's messages, a file a tool returns as bytes (in UTF-16).
PATHS = ("span", "tool", "model", "file")
#: How a secret is planted, by (rule, planting): text under the rule's name, or alone.
NAMED = ("env", "yaml", "json", "field")
ALONE = ("prose", "line")

#: Rules whose groups name parts (the first claim of a token): the secret is the match.
WHOLE_MATCH = ("jwt-base64",)
#: Draws that hold no secret: a user name given no password (``curl -u "bob:"``).
NOTHING_SECRET = {"curl-auth-user": re.compile(r":[\"']?$")}
#: Rules that find a secret by the line around it (a command, a config file's syntax),
#: whose id is no name a secret goes by: planted only in that line.
IN_ITS_LINE = (
    "curl-auth-header",
    "curl-auth-user",
    "kubernetes-secret-yaml",
    "nuget-config-password",
    "sidekiq-sensitive-url",
)

_IDS = "ids are not secrets: they are sent in URLs and shown in consoles, and a trace that hid every id would not read"
#: Rules, or (rule, planting) pairs, we do not catch, and why.
NOT_CAUGHT: dict[str, str] = {
    "pkcs12-file": "a rule on file names (*.p12), with no content to match",
    **{
        rule: _IDS
        for rule in (
            "adobe-client-id",
            "asana-client-id",
            "bitbucket-client-id",
            "discord-client-id",
            "linkedin-client-id",
            "looker-client-id",
            "plaid-client-id",
            "messagebird-client-id",
            "sendbird-access-id",
            "sumologic-access-id",
            "new-relic-user-api-id",
        )
    },
    "mailgun-pub-key:field": "a public key, and a field named pub_key is not a secret's name",
    "jwt": (
        "the rule takes 'ey' and any 17 letters; a token's header is base64 of a JSON "
        "object and always starts 'eyJ', which is what we look for ('ey' starts too many "
        "words), and 'jwt' alone names no secret"
    ),
    "freemius-secret-key:prose": (
        "'sk_' and any 29 characters: known only in its PHP line ('secret_key' => ...), "
        "where it is caught"
    ),
    "vault-service-token:prose": (
        "the legacy form is 's.' and 24 letters: 's.' ends most sentences; caught under its name"
    ),
    "vault-service-token:line": "as vault-service-token:prose",
    "sourcegraph-access-token:prose": (
        "the rule's last form is any 40 hex digits, which is also a git commit id; "
        "the sgp_ forms are caught alone"
    ),
    "sourcegraph-access-token:line": "as sourcegraph-access-token:prose",
    "facebook-access-token:prose": (
        "an app id, '|' and the app secret: digits and letters with nothing to tell "
        "them from other text; caught under its name"
    ),
    "facebook-access-token:line": "as facebook-access-token:prose",
    "azure-ad-client-secret:prose": (
        "three letters, a digit, then 'Q~': its only literal is inside a word, where the "
        "engine does not look; caught under its name"
    ),
    "azure-ad-client-secret:line": "as azure-ad-client-secret:prose",
    "kubernetes-secret-yaml": (
        "any field under a Secret's data: - we hide a field whose name says secret; the "
        "rule reads whole manifests (of .yaml files only)"
    ),
    "authress-service-client-access-key:prose": (
        "its prefixes (sc_, ext_) are everyday words of code; caught under its name"
    ),
    "authress-service-client-access-key:line": "as authress-service-client-access-key:prose",
}


def _go_to_python(pattern: str) -> str:
    """A gitleaks (Go RE2) expression in Python's syntax.

    Go allows ``(?i)`` inside an expression (it applies to the rest of the
    group); Python only at the start: the rest of the group is wrapped in
    ``(?i:...)``.  ``[[:alnum:]]`` and ``\\z`` are spelled Python's way.
    """
    pattern = pattern.replace("[[:alnum:]]", "[A-Za-z0-9]").replace(r"\z", r"\Z")
    while True:
        at = pattern.find("(?i)", 1)
        if at < 0:
            return pattern
        depth, i, in_class = 0, at + 4, False
        while i < len(pattern):
            ch = pattern[i]
            if ch == "\\":
                i += 2
                continue
            if in_class:
                in_class = ch != "]"
            elif ch == "[":
                in_class = True
                if pattern[i + 1 : i + 2] == "]":
                    i += 1
            elif ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "|" and depth == 0:
                break
            i += 1
        pattern = pattern[:at] + "(?i:" + pattern[at + 4 : i] + ")" + pattern[i:]


_PRINTABLE = [chr(c) for c in range(0x21, 0x7F)]
_ALNUM = set(string.ascii_letters + string.digits)
#: The characters drawn for each character set of a parsed expression (kept by
#: ``_parsed``, so the ids stay theirs).
_CHOICES: dict[int, list[str]] = {}


def _in_set(ch: str, items: list[tuple[Any, Any]]) -> bool:
    negate = False
    hit = False
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            hit = hit or ord(ch) == av
        elif op is sre.RANGE:
            hit = hit or av[0] <= ord(ch) <= av[1]
        elif op is sre.CATEGORY:
            hit = hit or bool(
                {
                    sre.CATEGORY_DIGIT: ch.isdigit(),
                    sre.CATEGORY_NOT_DIGIT: not ch.isdigit(),
                    sre.CATEGORY_WORD: ch.isalnum() or ch == "_",
                    sre.CATEGORY_NOT_WORD: not (ch.isalnum() or ch == "_"),
                    sre.CATEGORY_SPACE: ch.isspace(),
                    sre.CATEGORY_NOT_SPACE: not ch.isspace(),
                }.get(av, False)
            )
    return hit != negate


def _choices(av: Any) -> list[str]:
    """The characters a set draws from: its letters and digits, else any it allows.  Made
    once per set (the trees live in :func:`_parsed`'s cache, so their ids stay theirs), and
    the same whichever asks first: a draw must not depend on what was drawn before it."""
    preferred = _CHOICES.get(id(av))
    if preferred is None:
        allowed = [c for c in _PRINTABLE if _in_set(c, av)]
        preferred = [c for c in allowed if c in _ALNUM] or allowed or [" "]
        _CHOICES[id(av)] = preferred
    return preferred


def _draw(tree: Any, rng: random.Random, out: list[str], repeated: bool = False) -> None:
    """Appends to ``out`` a string ``tree`` matches (assertions left to the check after).

    A lone ``.`` is drawn as a dot: the catalogue writes host names unescaped
    (``hooks.slack.com``), and a secret hides in a real one.
    """
    for op, av in tree:
        if op is sre.LITERAL:
            out.append(chr(av))
        elif op is sre.NOT_LITERAL:
            out.append(rng.choice([c for c in string.ascii_letters if ord(c) != av]))
        elif op is sre.ANY:
            out.append(rng.choice(string.ascii_letters) if repeated else ".")
        elif op is sre.IN:
            out.append(rng.choice(_choices(av)))
        elif op is sre.BRANCH:
            _draw(rng.choice(av[1]), rng, out, repeated)
        elif op is sre.SUBPATTERN:
            _draw(av[3], rng, out, repeated)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, sub = av
            high = low + 6 if high is sre.MAXREPEAT else high
            if low == 0 and _blank(sub):
                low = 1  # words of a command line or a config file are apart: a space at least
            for _ in range(rng.randint(low, min(high, low + 6))):
                _draw(sub, rng, out, True)
        elif op is sre.ATOMIC_GROUP:
            _draw(av, rng, out, repeated)
        # AT (\b, ^, $), ASSERT and ASSERT_NOT draw nothing: the check after tells.


def _blank(tree: Any) -> bool:
    """Whether ``tree`` is one set of blank characters (``[ \\t]``, ``\\s``)."""
    if len(tree) != 1 or tree[0][0] is not sre.IN:
        return False
    return (
        all(c.isspace() for c in _choices(tree[0][1]))
        and any(_in_set(c, tree[0][1]) for c in " \t")
        and not any(_in_set(c, tree[0][1]) for c in "aZ0")
    )


def draw_secret(rule: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    """(the secret, the whole text the rule matches), drawn from the rule's expression."""
    compiled, tree = _parsed(rule["regex"])
    for _ in range(200):
        out: list[str] = []
        _draw(tree, rng, out)
        whole = "".join(out)
        m = compiled.search(whole)
        if m is None:
            continue
        wanted = rule.get("secretGroup")
        if rule["id"] in WHOLE_MATCH:
            secret = m.group()
        elif wanted is not None:
            secret = m.group(wanted) or ""
        else:
            secret = next((g for g in m.groups() if g), "")
            if len(secret) < 8:  # a group of a part (a repeated piece): the match is the secret
                secret = m.group()
        secret = secret.strip("\"' \t\r\n")
        if rule["id"] in NOTHING_SECRET and NOTHING_SECRET[rule["id"]].search(secret):
            continue
        # A secret of the rule's own entropy floor; long enough to grep for.
        if len(secret) >= 8 and _entropy(secret) >= rule.get("entropy", 0):
            return secret, whole.strip()
    raise AssertionError(f"no secret drawn for {rule['id']}")


@functools.cache
def _parsed(go_pattern: str) -> tuple[re.Pattern[str], Any]:
    pattern = _go_to_python(go_pattern)
    return re.compile(pattern), sre_parse.parse(pattern)


def _entropy(text: str) -> float:
    import math

    counts = {c: text.count(c) for c in set(text)}
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def rules() -> list[dict[str, Any]]:
    with CATALOGUE.open("rb") as f:
        return [r for r in tomllib.load(f)["rules"] if "regex" in r]


def _named(rule: dict[str, Any]) -> bool:
    """A rule known by a name beside the value (``adafruit ... = value``), not by its shape."""
    return r"[\w.-]{0,50}?" in rule["regex"]


def _excused(rule_id: str, planting: str) -> bool:
    return rule_id in NOT_CAUGHT or f"{rule_id}:{planting}" in NOT_CAUGHT


def plant(examples: int, seed: int) -> dict[tuple[str, str, str, int], str]:
    """A distinct secret per (rule, planting, path, example)."""
    rng = random.Random(seed)
    planted: dict[tuple[str, str, str, int], str] = {}
    for rule in rules():
        if _named(rule):
            plantings: tuple[str, ...] = NAMED
        elif rule["id"] in IN_ITS_LINE:
            plantings = ("line",)
        else:
            plantings = (*NAMED, *ALONE)
        for planting in plantings:
            for path in PATHS:
                for i in range(examples):
                    secret, whole = draw_secret(rule, rng)
                    if planting == "line":
                        secret = (secret, whole)  # type: ignore[assignment]
                    planted[rule["id"], planting, path, i] = secret
    return planted


def _texts(planted: dict[tuple[str, str, str, int], Any], path: str) -> dict[str, Any]:
    """What one capture path carries: a text per planting, and the named fields."""
    env, yaml, prose, lines = [], [], [], []
    doc: dict[str, str] = {}
    fields: dict[str, str] = {}
    # A private key cut short hides the rest of its text: it goes last, hiding no other.
    for (rule, planting, where, i), value in sorted(
        planted.items(), key=lambda kv: kv[0][0] == "private-key"
    ):
        if where != path:
            continue
        name = ("" if i == 0 else f"app{i}_") + rule.replace("-", "_")
        if planting == "env":
            env.append(f"{name.upper()}={value}")
        elif planting == "yaml":
            yaml.append(f"{name}: {value}")
        elif planting == "json":
            doc[name] = value
        elif planting == "field":
            fields[name] = value
        elif planting == "prose":
            prose.append(f"Here is the credential {value} for the deploy.")
        else:
            lines.append(value[1])
    return {
        "env": "\n".join(env),
        "yaml": "\n".join(yaml),
        "json": json.dumps({"config": doc}),
        "prose": " ".join(prose),
        "lines": "\n".join(lines),
        "fields": fields,
    }


def _secret(value: Any) -> str:
    return value[0] if isinstance(value, tuple) else value


def record_and_grep(tmp_path: Path, planted: dict[tuple[str, str, str, int], Any]) -> list[str]:
    """Records every planted secret through the three paths; the ones found on disk."""

    @otel_replay.tool
    def configure(settings: dict[str, str], notes: str, command: str) -> dict[str, str]:
        return {"env": texts["tool"]["env"], "echo": notes}

    @otel_replay.tool
    def download(name: str) -> bytes:
        """A file, as bytes: the credentials file in UTF-16 (as Windows writes it)."""
        files = texts["file"]
        text = "\n".join((files["env"], files["yaml"], files["json"], files["lines"]))
        return b"\xff\xfe" + text.encode("utf-16-le")

    texts = {path: _texts(planted, path) for path in PATHS}
    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    exporter = otel_replay.FileSpanExporter(tmp_path / "run.otlp", max_inline_bytes=1024)
    provider.add_span_processor(otel_replay.RecordingSpanProcessor(exporter))
    previous = otel_replay.use_tracer_provider(provider)
    try:
        tracer = provider.get_tracer("openinference.instrumentation.acme")
        with otel_replay.agent_run("catalogue"):
            with tracer.start_as_current_span("ChatModel") as span:
                span.set_attribute("config.env", texts["span"]["env"])
                span.set_attribute("config.yaml", texts["span"]["yaml"])
                span.set_attribute("input.value", texts["span"]["json"])
                span.set_attribute("llm.invocation_parameters", json.dumps(texts["span"]["fields"]))
                span.set_attribute("notes", texts["span"]["prose"])
                span.set_attribute("command", texts["span"]["lines"])
            tool = texts["tool"]
            configure(
                {**tool["fields"], "config": tool["json"], "yaml": tool["yaml"]},
                tool["prose"],
                tool["lines"],
            )
            model = texts["model"]
            with otel_replay.model_call(
                provider="openai",
                model="gpt-x",
                messages=[
                    {"role": "system", "content": model["env"]},
                    {"role": "user", "content": model["prose"]},
                    {"role": "user", "content": model["lines"]},
                    {"role": "user", "content": model["json"]},
                ],
                extra_body=model["fields"],
            ) as call:
                call.record(model["yaml"], input_tokens=1, output_tokens=1)
            download("credentials")
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert any(".blobs" in str(p) for p in tmp_path.rglob("*")), "no blob was written"
    leaks = []
    for key, value in planted.items():
        secret = _secret(value)
        forms = {
            secret.encode(),
            json.dumps(secret)[1:-1].encode(),
            secret.encode("utf-16-le"),
            secret.encode("utf-16-be"),
        }
        if any(form in written for form in forms):
            leaks.append(":".join(map(str, key)))
    return leaks


@pytest.fixture(autouse=True)
def _default_redaction() -> Any:
    configure_redaction()
    yield
    configure_redaction()


def _unexcused(leaks: list[str]) -> list[str]:
    return sorted({leak for leak in leaks if not _excused(*leak.split(":")[:2])})


def test_every_rule_of_the_catalogue_is_hidden_on_every_path(tmp_path: Path) -> None:
    planted = plant(examples=1, seed=1)
    assert len({key[0] for key in planted}) >= 200  # the whole catalogue, not a sample
    assert not _unexcused(record_and_grep(tmp_path, planted))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_every_rule_of_the_catalogue_is_hidden_many_draws(tmp_path: Path, seed: int) -> None:
    planted = plant(examples=4, seed=100 + seed)
    assert not _unexcused(record_and_grep(tmp_path, planted))


def test_the_excuses_name_rules_of_the_catalogue() -> None:
    """An excuse for a rule the catalogue no longer has, or a planting we do not make, is stale."""
    ids = {r["id"] for r in rules()} | {"pkcs12-file"}
    for excuse in NOT_CAUGHT:
        rule, _, planting = excuse.partition(":")
        assert rule in ids, excuse
        assert planting in ("", *NAMED, *ALONE), excuse


def test_the_generator_draws_what_each_rule_matches() -> None:
    """The drawn secrets are the rules' own: each is found by its rule in the line drawn."""
    rng = random.Random(3)
    for rule in rules():
        secret, whole = draw_secret(rule, rng)
        assert secret in whole, rule["id"]
        assert re.search(_go_to_python(rule["regex"]), whole), rule["id"]
