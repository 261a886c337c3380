"""What a secret looks like: the key names and value shapes the redactor hides.

Three families, each a list of regular expressions (case-insensitive where
noted), kept apart from the engine so that they can be read, reviewed and
extended in one place:

* :data:`FIELD_KEYS` - names of fields whose whole value is a secret, wherever
  a mapping, dataclass, model or attribute carries them (``api_key``,
  ``password``, ``access_token``...).  ``max_tokens`` and ``token_count``
  are not secrets.
* :data:`HEADER_KEYS` - HTTP header names, a wider net: any name holding
  ``key``, ``token``, ``secret``, ``auth``, ``cookie``, ``password`` or
  ``signature`` (``Ocp-Apim-Subscription-Key``, ``X-Auth``), except rate-limit
  counters of tokens.
* :data:`VALUE_PATTERNS` - shapes found inside any text: provider credentials
  (OpenAI, Anthropic, AWS, GitHub, Slack, Google, Stripe, Hugging Face),
  JWTs, private key blocks, ``Bearer``/``Basic`` credentials, passwords in
  URLs, query strings, connection strings, and ``key: "value"`` pairs in JSON,
  YAML or Python text.  Where a pattern has a group named ``v`` only that
  group is hidden (``password=`` stays, so the text still reads); otherwise
  the whole match is.
* :data:`PERSONAL_DATA_PATTERNS` - e-mail addresses and phone numbers, hidden
  only when asked for (they are often what the agent works on).
"""

from __future__ import annotations

from typing import Final, NamedTuple

#: A field named like this holds a secret (searched, case-insensitive).
FIELD_KEYS: Final = (
    r"(^|[^a-z])(authorization|proxy[-_.]?authorization|api[-_.]?key|apikey|x[-_.]?api[-_.]?key"
    r"|cookie|set[-_.]?cookie|secret|client[-_.]?secret|password|passwd|passphrase|pwd"
    r"|private[-_.]?key|bearer|credentials?|auth"
    r"|(access|secret|signing|encryption|master|subscription|license)[-_.]?key)([^a-z]|$)",
    # "token" alone is a secret (access_token, x-auth-token) but token_count is not.
    r"(^|[^a-z])((access|refresh|id|auth|session|api|bearer|security)[-_.]?)?token(?![a-z_])",
    r"secret",
)

#: A header named like this holds a secret (searched, case-insensitive).
HEADER_KEYS: Final = (
    r"key|secret|auth(?!or)|cookie|passw|credential|signature|session",
    r"token(?!s)",
)


class Shape(NamedTuple):
    """A credential shape: a regular expression and the words it starts with.

    The text is searched for the ``triggers`` (lower-case literals, fast) and
    the expression is tried only where one stands, matching from there; a
    shape with no triggers is searched for everywhere (slower).
    """

    triggers: tuple[str, ...]
    pattern: str


#: A value already hidden is hidden once.
_HIDDEN = r"\[REDACTED\]|"
#: After a secret-named field: ``=value``, ``: "value"``, ``='value'``, ``\\": \\"value\\"``
#: strings, env files, command lines, JSON, YAML, Python text).
_ASSIGNED = (
    r"[a-z0-9_.-]*(?:=(?P<v>" + _HIDDEN + r"[^&;\s\"'#,)}\]]+)"
    r"|[\"']?\s*[:=]\s*(?:\"(?P<v2>(?:[^\"\\]|\\.)+)\"|'(?P<v3>(?:[^'\\]|\\.)+)')"
    # JSON text inside a JSON string: \"api_key\": \"...\"
    r"|\\\"\s*:\s*\\\"(?P<v4>(?:(?!\\\").)+)\\\")"
)


def _spellings(*words: str) -> tuple[str, ...]:
    """``api_key``, ``api-key`` and ``apikey`` for ``api key``: how a field name is written."""
    return tuple(w.replace(" ", sep) for w in words for sep in ("_", "-", ""))


#: Words that name a secret field in text: (triggers, the word as a regular expression).
#: Two-word names trigger on the whole name: "id" or "api" alone is everywhere.
_TEXT_KEYS = (
    (("password", "passwd", "passphrase", "secret"), r"(?:password|passwd|passphrase|secret)"),
    (_spellings("api key"), r"api[-_]?key"),
    (_spellings("access key", "access token"), r"access[-_]?(?:key|token)"),
    (_spellings("private key"), r"private[-_]?key"),
    (_spellings("subscription key"), r"subscription[-_]?key"),
    (_spellings("signing key"), r"signing[-_]?key"),
    ((*_spellings("auth token"), "authorization"), r"auth(?:[-_]?token|orization)"),
    (_spellings("refresh token"), r"refresh[-_]?token"),
    (_spellings("id token"), r"id[-_]?token"),
    (_spellings("session token"), r"session[-_]?token"),
    (("credential",), r"credentials?"),
)
#: Only after ``?`` or ``&`` (a URL's query): ``key=`` and ``token=`` elsewhere are often code.
_QUERY_KEYS = ("key", "token", "sig", "signature", "code", "auth")
_NOT_AFTER_WORD = r"(?<![A-Za-z0-9_])"

VALUE_PATTERNS: Final = (
    # Private keys, whole blocks.
    Shape(
        ("-----begin",),
        r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]*PRIVATE KEY-----|\Z)",
    ),
    # OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic (sk-ant-api03-...).
    Shape(("sk-",), _NOT_AFTER_WORD + r"sk-[A-Za-z0-9_-]{16,}"),
    # AWS access key ids.
    Shape(("akia", "asia", "abia", "acca"), _NOT_AFTER_WORD + r"A(?:KI|SI|BI|CC)A[A-Z0-9]{16}\b"),
    # GitHub tokens.
    Shape(
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _NOT_AFTER_WORD + r"gh[pousr]_[A-Za-z0-9]{30,}"
    ),
    Shape(("github_pat_",), _NOT_AFTER_WORD + r"github_pat_[A-Za-z0-9_]{20,}"),
    # Slack tokens and webhooks.
    Shape(("xox",), _NOT_AFTER_WORD + r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    Shape(("hooks.slack.com",), r"hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    # Google API keys and OAuth access tokens.
    Shape(("aiza",), _NOT_AFTER_WORD + r"AIza[0-9A-Za-z_-]{35}"),
    Shape(("ya29.",), _NOT_AFTER_WORD + r"ya29\.[0-9A-Za-z_-]{20,}"),
    # Stripe, Hugging Face.
    Shape(
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        _NOT_AFTER_WORD + r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",
    ),
    Shape(("hf_",), _NOT_AFTER_WORD + r"hf_[A-Za-z0-9]{30,}"),
    # JSON Web Tokens.
    Shape(
        ("eyj",), _NOT_AFTER_WORD + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    ),
    # Authorization schemes (but for Bearer, a credential has a digit: "Basic configuration"
    # is prose).
    Shape(("bearer",), r"(?i:bearer)\s+(?P<v>[A-Za-z0-9._~+/=-]{8,})"),
    Shape(
        ("basic", "token", "digest"),
        r"(?i:basic|token|digest)\s+(?P<v>(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,})",
    ),
    # user:password@ in a URL (the user stays).
    Shape(("://",), r"://[^/\s:@\"']*:(?P<v>[^/\s@\"']+)@"),
    # Secret-named fields given a value in text.
    *(Shape(triggers, r"(?i)" + word + _ASSIGNED) for triggers, word in _TEXT_KEYS),
    Shape(
        tuple(f"{sep}{key}=" for sep in "?&" for key in _QUERY_KEYS),
        r"(?i)[?&](?:" + "|".join(_QUERY_KEYS) + r")=(?P<v>" + _HIDDEN + r"[^&;\s\"'#,)}\]]+)",
    ),
    # Header lines: "Authorization: ...", "x-api-key: ...", "Cookie: ...".
    Shape(
        ("authorization", "x-api-key", "api-key", "x-auth-token", "cookie"),
        r"(?i)(?:proxy-)?(?:authorization|x-api-key|api-key|x-auth-token|set-cookie|cookie)"
        r"\s*:\s*(?P<v>[^\s\"',}][^\r\n\"']*)",
    ),
)

PERSONAL_DATA_PATTERNS: Final = (
    # E-mail addresses.
    Shape((), r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    # Phone numbers: an optional +country code, then groups split by spaces, dots or dashes.
    Shape((), r"(?<![\w+])\+?(?:\d{1,3}[\s.-])?\(?\d{2,4}\)?[\s.-]\d{3,4}[\s.-]\d{3,4}(?![\w-])"),
)
