"""The names of secrets: fields and headers whose whole value is one, and the words that
name one in text (see :mod:`otel_replay.redaction.patterns`)."""

from __future__ import annotations

from typing import Final

#: A field named like this holds a secret (searched, case-insensitive).
FIELD_KEYS: Final = (
    r"(^|[^a-z])(authorization|proxy[-_.]?authorization|api[-_.]?key|apikey|x[-_.]?api[-_.]?key"
    r"|cookie|set[-_.]?cookie|secret|client[-_.]?secret|password|passwd|passphrase|pwd"
    r"|private[-_.]?key|bearer|credentials?|auth"
    r"|(access|secret|signing|encryption|master|subscription|license|ingestion|insert)[-_.]?key"
    # OTLP vendors' credential headers named otherwise (Honeycomb), and the variable that
    # carries an exporter's headers (OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team=S).
    r"|honeycomb[-_.]?team|otlp[-_.]((traces|metrics|logs)[-_.])?headers)([^a-z]|$)",
    # "token" alone is a secret (access_token, x-auth-token) but token_count is not.
    r"(^|[^a-z])((access|refresh|id|auth|session|api|bearer|security)[-_.]?)?token(?![a-z_])",
    r"secret",
    # Short names, only whole (pass_rate, pass@1 and signal are not secrets).
    r"(^|[^a-z])(pass|passcode|sig)$",
    r"(^|[^a-z])(auth[-_.]?key|x[-_.]?(amz|goog)[-_.]?signature)([^a-z]|$)",
    # Short credential names, whole or with a suffix (pin_memory and salt_rounds are not).
    r"(^|[^a-z])(pin|t?otp|jwt|hmac|salt|dsn)([-_.]?(code|key|secret|token|value))?$",
    # Connection strings carry a password (Server=...;Password=...).
    r"(^|[^a-z])conn(ection)?[-_.]?str(ing)?s?([^a-z]|$)",
)

#: A header named like this holds a secret (searched, case-insensitive).
HEADER_KEYS: Final = (
    r"key|secret|auth(?!or)|cookie|passw|credential|signature|session|csrf|xsrf|jwt",
    r"token(?!s)",
)


def _spellings(*words: str) -> tuple[str, ...]:
    """``api_key``, ``api-key``, ``apikey`` and ``api key`` (prose) for ``api key``: how a
    field name is written."""
    return tuple(w.replace(" ", sep) for w in words for sep in ("_", "-", "", " "))


#: Words that name a secret field in text: (triggers, the word as a regular expression).
#: Two-word names trigger on the whole name: "id" or "api" alone is everywhere.
_TEXT_KEYS = (
    # (also told in prose: see _TOLD)
    (("password", "passwd", "passphrase", "passcode"), r"(?:password|passwd|passphrase|passcode)"),
    (("secret",), r"secret"),
    # Pwd=...; (connection strings), DB_PWD=...: not PWD=/home/user (a directory).
    (("pwd",), r"pwd(?![a-z0-9_.-]*[ \t]*[:=][ \t]*[\"']?[/~.])"),
    (_spellings("auth key"), r"auth[-_ ]?key"),
    (("x-amz-signature", "x-goog-signature"), r"x-(?:amz|goog)-signature"),
    (_spellings("api key"), r"api[-_ ]?key"),
    (_spellings("api token", "bot token"), r"(?:api|bot)[-_ ]?token"),
    (_spellings("access key", "access token"), r"access[-_ ]?(?:key|token)"),
    (_spellings("private key"), r"private[-_ ]?key"),
    (_spellings("subscription key"), r"subscription[-_ ]?key"),
    (_spellings("signing key"), r"signing[-_ ]?key"),
    ((*_spellings("auth token"), "authorization"), r"auth(?:[-_ ]?token|orization)"),
    (_spellings("refresh token"), r"refresh[-_ ]?token"),
    (_spellings("id token"), r"id[-_ ]?token"),
    (_spellings("session token"), r"session[-_ ]?token"),
    (("credential",), r"credentials?"),
    # OTLP vendors' credential headers, whatever the value's shape (a SigNoz key is a UUID),
    # the one named without key/token/secret (x-honeycomb-team), and Sentry's key in
    # X-Sentry-Auth.
    (
        (
            *("honeycomb-team", "honeycomb_team", "honeycombteam", "sf-token", "sf_token"),
            *("sentry_key", "sentry-key"),
            *_spellings("ingestion key", "insert key", "license key"),
        ),
        r"(?:honeycomb[-_]?team|sf[-_]token|sentry[-_]key|(?:ingestion|insert|license)[-_ ]?key)",
    ),
    (("cookie",), r"cookies?"),
    # Connection strings and DSNs hold a password (Server=...;Password=..., u:p@host).
    (
        (*_spellings("connection string", "conn str", "conn string"), "dsn"),
        r"(?:conn(?:ection)?[-_ ]?str(?:ing)?|dsn)",
    ),
    # Short names: whole, or with a suffix (pin_code; not pin_memory, salt_rounds, ping).
    (
        ("pin", "otp", "totp", "jwt", "hmac", "salt"),
        r"(?:pin|t?otp|jwt|hmac|salt)(?:[-_.]?(?:code|key|secret|token|value))?(?![a-z0-9_.-])",
    ),
)
#: Secret names written inside a word (userPassword, clientSecret, githubToken, apiKey),
#: lower-cased: looked for there too.
INSIDE_WORDS: Final = ("passw", "secret", "token", "key")
#: Only after ``?`` or ``&`` (a URL's query): ``key=`` and ``token=`` elsewhere are often code.
_QUERY_KEYS = ("key", "token", "sig", "signature", "code", "auth")
#: Option names of command lines that take a secret (``--password x``, ``--api-key=x``).
_OPTION_KEYS = (
    r"(?:password|passwd|pass|pwd|secret|token|api[-_]?key|apikey|access[-_]?key"
    r"|secret[-_]?key|private[-_]?key|auth[-_]?token|client[-_]?secret|credentials?)"
)
