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
  (OpenAI, Anthropic, AWS, GitHub, GitLab, Slack, Google, Stripe, Hugging
  Face and the other token formats public secret scanners list), JWTs,
  private key blocks, ``Bearer``/``Basic`` credentials, passwords in URLs,
  query strings, connection strings, ``key: "value"`` pairs in JSON, YAML,
  INI, env or Python text, XML elements and attributes, SQL (``IDENTIFIED BY
  'x'``, ``PASSWORD 'x'``), a password told in prose (``the password is x``),
  command-line options (``--password x``, ``curl -u`` and ``-H``, ``-p x`` where
  the command takes a password so) and .NET config entries; names written with
  a space (``API key: x``) and short ones (pin, otp, jwt, hmac, salt, dsn); a
  name ending in ``key`` or ``token`` only with a value that looks like a
  credential; any credential name's value told in prose (``the api key is x``),
  in a table's next cell (``| api_key | x |``) or on the line after a line
  continuation (``API_KEY=\\``); credentials in a URL's path (webhooks,
  ``/token/x``), .netrc and .pgpass lines, ``user:x@host:port`` with no scheme,
  and the OTLP vendors' credential headers (``x-honeycomb-team``).  Where a pattern has a
  group named ``v`` (or ``v2``...) only that group is hidden (``password=``
  stays, so the text still reads); otherwise the whole match is.
* :data:`PERSONAL_DATA_PATTERNS` - e-mail addresses and phone numbers, hidden
  only when asked for (they are often what the agent works on).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final, NamedTuple

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


class Shape(NamedTuple):
    """A credential shape: a regular expression and the words it starts with.

    The text is searched for the ``triggers`` (lower-case literals, fast) and
    the expression is tried only where one stands, matching from there (or
    ``back`` characters before, for a shape whose literal part is not its
    start); a shape with no triggers is searched for everywhere (slower).
    Such a shape may say what text it needs at the least: ``prefilter``, a
    regular expression in Hyperscan's syntax that matches the lower-cased
    text (a character that is not ASCII read as ``?``) wherever the shape
    does; where the prefilter finds none, the shape is not searched for.
    """

    triggers: tuple[str, ...]
    pattern: str
    back: int = 0
    prefilter: str | None = None


#: A value already hidden is hidden once.
_HIDDEN = r"\[REDACTED\]|"
#: A type hint is code, not a value (password: str, api_key: Optional[str]); nor is YAML's
#: null, ``~`` alone (but ``~x1`` is a value).
_NOT_A_TYPE = r"(?!(?:str|bytes|int|SecretStr|None|null)\b|~(?![^\s,]))"
#: Between a name and its value: ``=``, ``:``, ``:=`` (Go), ``=>`` (PHP, Ruby).
_SEP = r"(?::=|=>|[:=])"
#: A line continuation and the next line's indent (``\`` then a newline; in JSON text too).
_CONTINUED = r"(?:\\\r?\n[ \t]*|\\\\(?:\\r)?\\n(?:[ \t]|\\t)*)"


def quoted_body(quote: str) -> str:
    """A quoted value's characters up to its ``quote`` or its line's end, escapes (``\\"``)
    among them: what ``(?:[^"\\\r\n]|\\.)+`` matches (for ``"``), written so that ``re``
    runs along the plain characters in one step rather than a branch a character (some
    microseconds a value).  Each escape starts with ``\\``, which no plain character is:
    the value parts the same way, may end at the same places, and matches the same."""
    plain = rf"[^{quote}\\\r\n]"
    return rf"(?:{plain}|\\.){plain}*(?:\\.{plain}*)*"


#: The rest of a value that must be the last word on its line: what ``[^\s\[\"]*?`` (the
#: fewest characters) matches before ``(?=[ \t]*(?:$|[\r\n]|\\[rn]|[ \t]#|\"))``.  Among
#: those characters that look succeeds only before a line break written ``\n`` or ``\r``
#: in JSON text, or where they end: so the most characters up to the first such break
#: match the same, in one step along them rather than a look at each.
_TO_LINE_END = r"[^\s\[\"\\]*(?:\\(?![rn])[^\s\[\"\\]*)*"
#: After a secret-named field: ``=value``, ``= value``, ``: "value"``, ``='value'``,
#: ``\\": \\"value\\"``, ``=\\"value\\"`` (code in JSON text), ``: value`` (query
#: strings, env and INI files, command lines, JSON, YAML, Python, PHP text).  A quoted value
#: ends on its line: an unmatched quote hides the rest of its line, no more.
_ASSIGNED = (
    r"[a-z0-9_.-]*(?:"
    r"=(?![=>])(?P<v>" + _HIDDEN + r"[^&;\s\"'#,)}\]\\]+)"
    # With spaces (INI files): not code (password = os.environ.get(...)).
    r"|(?:[ \t]+=[ \t]*|=[ \t]+)(?![=>(])(?![A-Za-z_][\w.]*\()"
    r"(?P<v6>" + _HIDDEN + r"[^&;\s\"'#,(){}\[\]\\]+)"
    # On the next line after a line continuation: api_key=\ (newline) S, export TOKEN=\,
    # also in JSON text (=\\\n).
    r"|[ \t]*=[ \t]*" + _CONTINUED + r"(?:\\?[\"'])?(?P<v17>" + _HIDDEN + r"[^\s\"'#\\]+)"
    r"|[\"']?\s*" + _SEP + r"\s*(?:\"(?P<v2>" + quoted_body('"') + r")(?:\"|(?=[\r\n]|\Z))"
    r"|'(?P<v3>" + quoted_body("'") + r")(?:'|(?=[\r\n]|\Z)))"
    # A JSON member whose value is a number ("pin":1234, "otp": 123456), compact
    # or not, in JSON text or JSON text inside a JSON string (\"pin\":1234): tool-call
    # arguments as a model writes them.
    r"|(?:\\*[\"'])?[ \t]*:[ \t]*(?P<v30>-?[0-9][0-9.eE+-]*)"
    r"(?=[ \t]*(?:[,}\]\r\n]|\\|\Z))"
    # JSON text inside a JSON string: \"api_key\": \"...\", and code there (in JSON text
    # once or more): password=\"...\", password=\\\"...\\\"
    r"|\\\"\s*:\s*\\\"(?P<v4>(?:(?!\\\").)+)\\\""
    r"|[ \t]*" + _SEP + r"[ \t]*(?:\\\\)*\\\"(?P<v7>(?:(?!\\+\")[^\r\n])+)\\+\""
    # YAML, or "password: hunter2" in a message: one word, the last on its line (a type
    # hint such as "password: str" is code, not a value; "|" and ">" start a block).
    r"|[\"']?[ \t]*:[ \t]+(?P<v5>"
    + _HIDDEN
    + _NOT_A_TYPE
    + r"(?![|>][-+0-9]*[ \t]*(?:$|[\r\n]|\\[rn]))(?![\[{][\s\"'{}\[\]])"
    r"[^\s\"'#,]" + _TO_LINE_END + r")(?=[ \t]*(?:$|[\r\n]|\\[rn]|[ \t]#|\"))"
    # More on the line ("password: S, host: db1", "The password: S. Use it once."): a
    # value of six characters or more holding a digit or a sign (a digit after a sign it
    # starts with: "**required**" is markdown), not a word.
    r"|[\"']?[ \t]*:[ \t]+(?P<v8>"
    + _HIDDEN
    + _NOT_A_TYPE
    + r"(?=[^\s,;]{6})(?:[!@%&*`](?=[^\s,;\"']*[0-9])|(?=[^\s,;\"']*[0-9_+/=@#$%^&*~-])"
    r"[^\s\"'#{}\[\],;&|>*!%@`(<])[^\s\"',;\[\]{}()<>]*?)"
    r"(?=[.,;:!?)]*(?:[ \t]|$|[\r\n]|\\[rn])|[,;)])"
    # YAML on the next line: "password:\n  S", a block "api_key: |\n  S" (its first line;
    # not a mapping or a list under the name).
    r"|[\"']?[ \t]*:[ \t]*(?:[|>][-+0-9]*[ \t]*)?(?:\r?\n|(?:\\r)?\\n)[ \t]+"
    r"(?![\w.-]+:(?:\s|$|\\[rn])|-[ \t])"
    r"(?P<v9>" + _HIDDEN + r"[^\s\"'#\\][^\r\n\"\\]*?)(?=[ \t]*(?:$|[\r\n]|\\[rnt\"]|\"))"
    # An XML element, <Password>S</Password> (closed by a tag of the same name), and an
    # HTML input, type="password" ... value="S".
    r"|(?:[ \t]+[\w:.-]+=(?:\"[^\"<>]*\"|'[^'<>]*'))*[ \t]*>(?P<v10>"
    + _HIDDEN
    + r"[^<>]+?)</[\w.:-]*?(?P=n)"
    r"|[\"'](?:[ \t]+[\w:.-]+=(?:\"[^\"<>]*\"|'[^'<>]*'))*[ \t]+value=[\"'](?P<v11>[^\"'\r\n]+)"
    # SQL: PASSWORD 'S' (CREATE ROLE, ALTER USER): a quoted value after a space.
    r"|[ \t]+(?:'(?P<v12>[^'\r\n]+)'|\"(?P<v13>[^\"\r\n]+)\")"
    r")"
)
#: Words that say something about a password rather than give it ("the password is
#: required", "Password: must have 8 chars"): participles and adverbs, and these.
_PROSE_WORDS: Final = (
    *("a", "an", "the", "not", "now", "too", "also", "only", "still", "just", "very", "never"),
    *("always", "must", "should", "will", "would", "can", "cannot", "may", "have", "has"),
    *("your", "my", "our", "their", "his", "her", "its", "this", "that", "these", "those"),
    *("what", "which", "where", "when", "here", "there", "then", "than", "same", "different"),
    *("wrong", "invalid", "incorrect", "correct", "valid", "empty", "blank", "missing", "weak"),
    *("strong", "long", "short", "secure", "insecure", "optional", "mandatory", "necessary"),
    *("unknown", "null", "none", "true", "false", "enter", "click", "type", "please", "change"),
    *("reset", "below", "above", "from", "with", "into", "sent", "shown", "known", "case"),
    *("set", "for", "of", "to", "in", "on", "at", "by", "and", "or", "but", "no", "yes", "ok"),
    *("okay", "good", "fine", "secret", "stored", "safe"),
    # Code: a type, a keyword ("password: String,", "if password: return None").
    *("string", "bytes", "bool", "boolean", "float", "number", "dict", "list", "object"),
    *("secretstr", "undefined", "return", "raise", "pass", "yield", "await", "print", "else"),
    *("elif", "continue", "break", "lambda", "assert", "import"),
)


def literal_trie(words: Iterable[str]) -> str:
    """A regular expression matching any of ``words``, common prefixes merged: ``re``
    tries an alternation's branches one by one, a trie's only along the text."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alternatives = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
        return f"(?:{body})?" if "" in node else body

    return emit(root)


#: Participles and adverbs, and those words, whole.  Only ever in a negative lookahead,
#: where no more than whether one matches counts: the words may be a trie, which ``re``
#: follows along the text where it tried an alternation's words one by one (some
#: microseconds at every value a name is given).
_PROSE = (
    r"(?:[a-z]+(?:ed|ing|ly|en)|" + literal_trie(_PROSE_WORDS) + ")"
    # (a whole word: "In^6t..." is a password, not "in")
    r"(?=[.,;:!?)\"'`*]*(?:[\s|]|$|\\[rnt]))"
)
#: A value told in prose: "the password is S", "the api key was set to S".
_SAID = r"[ \t]+(?i:is|was)(?:[ \t]+(?i:set[ \t]+to|now|still))?[ \t]*:?"
#: What ends a value told in prose or given in a table's cell.
_WORD = r"[^\s\"'`,;()<>\[\]{}"


def _told(letters: bool) -> str:
    """A secret-named field's value as _ASSIGNED finds it, or told in prose ("the password is
    S", "Password: S, then..."), or in the next cell of a table row (``| api_key | S |``,
    ``api_key | S``): not a word that says something about it ("is required", "is being
    reset", ``| password | string |``).  A value of ``letters`` alone is a password's (a
    word); another credential's holds a digit and eight characters or more."""
    need = "" if letters else "(?=" + _WORD + r"|]{8})(?=" + _WORD + r"|]*[0-9])"
    return (
        _ASSIGNED[:-1] + r"|(?:" + _SAID + r"|[\"']?[ \t]*:)[ \t]+"
        r"(?:\"(?P<v14>[^\"\r\n]+)\"|'(?P<v15>[^'\r\n]+)'|(?!"
        + _PROSE
        + r")(?P<v16>"
        + _HIDDEN
        + need
        + r"(?:\*(?![*\s])|"  # (a "*" starting a value, not markdown's "**")
        + _WORD
        + r"&*|])"
        + _WORD
        + r"]{3,}?)(?=[.,;:!?)]*(?:\s|$|\\[rn])))"
        # A table's next cell: one word (a cell of words is a description).
        + r"|[ \t]*\|[ \t]*(?!(?:`|\*\*)?"
        + _PROSE
        + r")(?:`|\*\*)?"
        + _NOT_A_TYPE
        + "(?P<v18>"
        + _HIDDEN
        + need
        + r"[^\s|`\"'][^\s|`]{3,}?)(?:`|\*\*)?[ \t]*(?=\||$|[\r\n]|\\[rn])"
        r")"
    )


#: What a credential looks like where only a generic name (``*_key``, ``*_token``) says so:
#: 12 characters or more, letters and digits both, not a UUID (ids are everywhere).
_CREDENTIAL = (
    r"(?![0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
    # (not an encoded quote, comma, "&" or ";" after it: %22, %2C, %26, %3B)
    r"(?=[A-Za-z_.=+/~%-]*[0-9])(?=[0-9_.=+/~%-]*[A-Za-z])"
    r"(?:[A-Za-z0-9_.=+/~-]|%(?!2[267cC]|3[bB])){12,}"
)
#: A credential as a URL's path segment (see VALUE_PATTERNS).
_SEGMENT = (
    r"(?![0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
    r"(?![a-z]+(?:[-_][a-z0-9]+)+(?![A-Za-z0-9_~-]))"
    r"(?=[A-Za-z_~-]*[0-9])(?=[0-9_~-]*[A-Za-z])[A-Za-z0-9_~-]{16,}(?![A-Za-z0-9_~.%-])"
)
#: Between the words of a .netrc entry: spaces and newlines (``\n`` in JSON text too).
_NETRC_SEP = r"(?:[ \t\r\n]|\\[nrt])+"
#: A word of a .netrc entry (a user, a password), not a word of prose.
_NETRC_WORD = r"(?!" + _PROSE + ")"
_ASSIGNED_CREDENTIAL = (
    r"(?![a-z0-9])(?:\\*[\"'])?(?:[ \t]*" + _SEP + r"[ \t]*"
    # YAML on the next line: "github_token:\n  S", "github_token: |\n  S"; after a line
    # continuation: "GITHUB_TOKEN=\\\n  S".
    r"(?:(?:[|>][-+0-9]*)?[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]+|" + _CONTINUED + ")?"
    # Told in prose ("the token was S"), or in a table's next cell (| github_token | S |).
    r"|" + _SAID + r"[ \t]+|[ \t]*\|[ \t]*`?)"
    r"(?:\\*[\"'])?(?P<v>" + _CREDENTIAL + ")"
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
#: Not inside a word (but after an escape in JSON text: \nsk-...).
_NOT_AFTER_WORD = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrt])|(?<=\\u[0-9A-Fa-f]{4}))"
#: Option names of command lines that take a secret (``--password x``, ``--api-key=x``).
_OPTION_KEYS = (
    r"(?:password|passwd|pass|pwd|secret|token|api[-_]?key|apikey|access[-_]?key"
    r"|secret[-_]?key|private[-_]?key|auth[-_]?token|client[-_]?secret|credentials?)"
)
#: An option's value: the next word, or the next item of an argument list in JSON or Python.
_OPTION_VALUE = r"(?:=|[ \t]+|[\"']\s*,\s*[\"'])(?P<v>" + _HIDDEN + r"[^\s\"'`,=-][^\s\"'`,]*)"

#: A token's body holds letters and digits both (ahead of it, up to a character not its own).
_MIXED = r"(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])"

#: Provider credentials known by their prefix (the public secret scanners' catalogues), as
#: (triggers, pattern).  Where a prefix is short or common the rest of the token must
#: follow its exact form.
_PROVIDER_TOKENS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("a3-",), r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}\b"),
    (("ops_eyj",), r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    (("p8e-",), r"(?i:p8e-)[A-Za-z0-9]{32}"),
    (("age-secret-key-1",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    (("ltai",), r"LTAI[A-Za-z0-9]{20}"),
    (("akcp",), r"AKCp[A-Za-z0-9]{69}"),
    (("cmvmd",), r"cmVmd[A-Za-z0-9]{59}"),
    (("absk",), r"ABSK[A-Za-z0-9+/]{100,}={0,2}"),
    (("bedrock-api-key-",), r"bedrock-api-key-[A-Za-z0-9+/=]{20,}"),
    (("4b1d",), r"4b1d[A-Za-z0-9]{38}"),
    (("clojars_",), r"(?i:clojars_)[A-Za-z0-9]{60}"),
    (("v1.0-",), r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    (("dapi",), r"dapi[a-f0-9]{32}"),
    (("doo_v1_", "dop_v1_", "dor_v1_"), r"(?i:do[opr]_v1_)[a-fA-F0-9]{64}"),
    (("dp.pt.",), r"dp\.pt\.[A-Za-z0-9]{43}"),
    (("duffel_",), r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}"),
    (("dt0c01.",), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    (("ezak", "eztk"), r"EZ[AT]K[A-Za-z0-9]{54}"),
    (("eaaa", "eaac", "eaam"), r"EAA[ACM][A-Za-z0-9_-]{22,}"),
    (("flwseck_test-", "flwpubk_test-"), r"FLW(?:SECK|PUBK)_TEST-[A-Ha-h0-9]{12,}(?:-X)?"),
    (
        ("fo1_", "fm1a_", "fm1r_", "fm2_"),
        r"(?:fo1_[\w-]{43}|fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3})",
    ),
    (("fio-u-",), r"fio-u-[A-Za-z0-9_=-]{64}"),
    (
        tuple(
            f"gl{kind}-"
            for kind in (
                "pat",
                "dt",
                "ffct",
                "ft",
                "imt",
                "agent",
                "oas",
                "ptt",
                "rt",
                "soat",
                "cbt",
            )
        ),
        r"gl(?:pat|dt|ffct|ft|imt|agent|oas|ptt|rt|soat|cbt)-[0-9A-Za-z_.-]{20,}",
    ),
    (("gr1348941",), r"GR1348941[\w-]{20}"),
    (("_gitlab_session=",), r"_gitlab_session=(?P<v>" + _HIDDEN + r"[0-9a-z]{32})"),
    (("eyjrijoi",), r"eyJrIjoi[A-Za-z0-9]{70,}={0,3}"),
    (("glc_", "glsa_"), r"gl(?:c_[A-Za-z0-9+/]{32,}={0,3}|sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})"),
    (("pat",), r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),  # Airtable
    (("pat.", "sat."), r"[ps]at\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    (("hrku-aa",), r"HRKU-AA[0-9A-Za-z_-]{58}"),
    (("api_org_",), r"api_org_[A-Za-z]{34}"),
    (("ico-",), r"ico-[A-Za-z0-9]{32}"),
    (("s-s4t2ud-", "s-s4t2af-"), r"s-s4t2(?:ud|af)-[A-Fa-f0-9]{64}"),
    (("zxlk",), r"ZXlK[A-Za-z0-9+/]{40,}={0,2}"),  # a JSON Web Token, base64-encoded again
    (("lin_api_",), r"lin_api_[A-Za-z0-9]{40}"),
    (("ntn_",), r"ntn_[0-9]{11}[A-Za-z0-9]{35}"),
    (("npm_",), r"npm_[A-Za-z0-9]{36}"),
    (("api-",), r"API-[A-Z0-9]{26}\b"),
    (("sha256~",), r"sha256~[\w-]{43}"),
    (("pplx-",), r"pplx-[A-Za-z0-9]{48}"),
    (("pscale_",), r"pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}"),
    (("pmak-",), r"PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}"),
    (("pnu_",), r"pnu_[A-Za-z0-9]{36}"),
    (("pul-",), r"pul-[a-f0-9]{40}"),
    (("pypi-ageichlwas5vcmc",), r"pypi-AgEIcHlwaS5vcmc[\w-]{50,}"),
    (("rdme_",), r"rdme_[a-z0-9]{70}"),
    (("rubygems_",), r"rubygems_[a-f0-9]{48}"),
    (("tk-us-",), r"tk-us-[\w-]{48}"),
    (("sg.",), r"SG\.[A-Za-z0-9_.=-]{66}"),
    (("xkeysib-",), r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    (("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    (("sm_aat_", "sm_pat_", "sm_sat_"), r"sm_[aps]at_[A-Za-z0-9]{16}"),
    (("shippo_",), r"shippo_(?:live|test)_[A-Fa-f0-9]{40}"),
    (("shpat_", "shpca_", "shppa_", "shpss_"), r"shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}"),
    (("sgp_",), r"sgp_(?:[A-Fa-f0-9]{16}_|local_)?[A-Fa-f0-9]{40}"),
    (("sq0atp-",), r"sq0atp-[\w-]{22,60}"),
    (("sk",), r"SK[0-9a-fA-F]{32}\b"),  # Twilio
    (("hvb.", "hvs."), r"hv[bs]\.[\w-]{90,300}"),
    (("xapp-",), r"xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+"),
    (("key-",), r"key-[a-f0-9]{32}\b"),  # Mailgun
    (("nrak-", "nrii-", "nrjs-"), r"NR(?:AK|II|JS)-[A-Za-z0-9-]{19,32}"),
    (("dnkey-",), r"dnkey-[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}"),
    (("tfp_",), r"tfp_[A-Za-z0-9_.=-]{59}"),
    (("pk.",), r"pk\.[A-Za-z0-9]{60}\.[A-Za-z0-9]{22}"),
    (("atatt3",), r"ATATT3[A-Za-z0-9_=-]{186}"),
    (
        tuple(f"access-{env}-" for env in ("sandbox", "development", "production")),
        r"access-(?:sandbox|development|production)-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}",
    ),
    (("squ_", "sqp_", "sqa_"), r"sq[upa]_[A-Za-z0-9]{40}"),
    (("aqvn",), r"AQVN[A-Za-z0-9_-]{35,38}"),
    (("t1.",), r"t1\.[A-Za-z0-9_-]+=*\.[A-Za-z0-9_-]{86}=*"),
    (("sl.",), r"sl\.[A-Za-z0-9_=-]{130,}"),
    (("webhook.office.com",), r"webhook\.office\.com/webhookb2/[A-Za-z0-9@/_-]{20,}"),
    # Model and agent-tool providers: each body long, of its own alphabet, letters and
    # digits both where it is random (a name such as fw_update_firmware is prose).
    (("gsk_",), r"gsk_" + _MIXED + r"[A-Za-z0-9]{40,}"),  # Groq
    (("xai-",), r"xai-" + _MIXED + r"[A-Za-z0-9]{60,}"),  # xAI
    (("r8_",), r"r8_" + _MIXED + r"[A-Za-z0-9]{30,}"),  # Replicate
    (("lsv2_pt_", "lsv2_sk_"), r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),  # LangSmith
    (("tvly-",), r"tvly-(?:dev-|prod-)?" + _MIXED + r"[A-Za-z0-9]{24,}"),  # Tavily
    (("pcsk_",), r"pcsk_[A-Za-z0-9]{4,8}_" + _MIXED + r"[A-Za-z0-9]{40,}"),  # Pinecone
    (("csk-",), r"csk-" + _MIXED + r"[A-Za-z0-9]{40,}"),  # Cerebras
    (("fw_",), r"fw_" + _MIXED + r"[A-Za-z0-9]{20,}"),  # Fireworks
    (("sk_",), r"sk_[a-f0-9]{48,}\b"),  # ElevenLabs
    (("sbp_",), r"sbp_(?:oauth_)?[a-f0-9]{40}\b"),  # Supabase
    (("pa-",), r"pa-(?=[\w-]*[A-Z])(?=[\w-]*[a-z])(?=[\w-]*[0-9])[A-Za-z0-9_-]{40,}"),  # Voyage
    (("fc-",), r"fc-[a-f0-9]{32}\b"),  # Firecrawl
    (("e2b_",), r"e2b_[a-f0-9]{40}\b"),  # E2B
    (("secret_",), r"secret_" + _MIXED + r"[A-Za-z0-9]{43}\b"),  # Notion
)

VALUE_PATTERNS: Final = (
    # Private keys, whole blocks (the end may be cut off).
    Shape(
        ("-----begin",),
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:KEY(?: BLOCK)?-----|\Z)",
    ),
    # OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic (sk-ant-api03-...).
    Shape(("sk-",), _NOT_AFTER_WORD + r"sk-[A-Za-z0-9_-]{16,}"),
    # AWS access key ids.
    Shape(
        ("a3t", "akia", "asia", "abia", "acca"),
        _NOT_AFTER_WORD + r"(?:A3T[A-Z0-9]|A(?:KI|SI|BI|CC)A)[A-Z0-9]{16}\b",
    ),
    # GitHub tokens.
    Shape(
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _NOT_AFTER_WORD + r"gh[pousr]_[A-Za-z0-9]{30,}"
    ),
    Shape(("github_pat_",), _NOT_AFTER_WORD + r"github_pat_[A-Za-z0-9_]{20,}"),
    # Slack tokens and webhooks.
    Shape(("xox",), _NOT_AFTER_WORD + r"xox[a-z](?:\.xox[a-z])?-[A-Za-z0-9-]{8,}"),
    Shape(
        ("hooks.slack.com",),
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
    ),
    # Google API keys and OAuth access tokens.
    Shape(("aiza",), _NOT_AFTER_WORD + r"AIza[0-9A-Za-z_-]{35}"),
    Shape(("ya29.",), _NOT_AFTER_WORD + r"ya29\.[0-9A-Za-z_-]{20,}"),
    # Stripe, Hugging Face.
    Shape(
        tuple(f"{k}_{env}_" for k in ("rk", "sk") for env in ("live", "test", "prod")),
        _NOT_AFTER_WORD + r"[rs]k_(?:live|test|prod)_[0-9A-Za-z]{10,}",
    ),
    Shape(("hf_",), _NOT_AFTER_WORD + r"hf_[A-Za-z0-9]{30,}"),
    # JSON Web Tokens.
    Shape(
        ("eyj",), _NOT_AFTER_WORD + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    ),
    *(Shape(triggers, _NOT_AFTER_WORD + pattern) for triggers, pattern in _PROVIDER_TOKENS),
    # Shapes known by a literal inside them, not at their start.
    Shape(("atlasv1",), r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}", back=15),
    Shape(("_mmk",), r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk", back=36),
    # Mailchimp: 32 hex digits and the data centre (-us12).
    Shape(("-us",), r"(?<![A-Za-z0-9])[a-f0-9]{32}-us[0-9]{1,2}\b", back=32),
    # Telegram bots: the bot's number (it stays), then the secret.
    Shape((":aa",), r"(?<=[0-9]{8}):(?P<v>AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])"),
    # Discord bots: the user id in base64, a time, then the secret (hidden from the time
    # on; a literal "." first, so this is searched for fast everywhere).
    Shape(
        (),
        r"\.(?=[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27})"
        r"(?:(?<=(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23}\.)"
        r"|(?<=(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{24}\.)"
        r"|(?<=(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{25}\.))"
        r"[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])",
        prefilter=r"[mno][a-z0-9_\-]{23,25}\.[a-z0-9_\-]{6}\.[a-z0-9_\-]{27}",
    ),
    # Authorization schemes (ApiKey: Elastic's), and a field named bearer given a value
    # (but for Bearer, a credential has a digit: "Basic configuration" is prose).
    Shape(
        ("bearer",),
        r"(?i:bearer)(?:\s+(?P<v>[A-Za-z0-9._~+/=-]{8,})"
        r"|[\"']?[ \t]*[:=][ \t]*[\"']?(?P<v2>" + _HIDDEN + r"[^\s\"',;&]+))",
    ),
    Shape(
        ("basic", "digest", "apikey"),
        r"(?i:basic|digest|apikey)\s+(?P<v>(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,})",
    ),
    # "Token abc123..." as a scheme, or any name ending in token given a credential (one
    # expression: a token is everywhere in text, each place tried once).
    Shape(
        ("token",),
        r"(?i:token)(?:\s+(?P<v>(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,})"
        r"|" + _ASSIGNED_CREDENTIAL.replace("(?P<v>", "(?P<v2>") + ")",
    ),
    # user:password@ in a URL (the user stays): the password runs to the last "@" before
    # the host (p@ss and pa/ss are one), but a port and a path (:8080/users/me@x) are not.
    Shape(
        ("://",),
        r"://[^/\s:@\"']*:(?P<v>(?![0-9]{1,5}/)[^?#\s\"']+?)@(?=[^@/\s]*(?:[/?#\s\"']|$))",
    ),
    # A credential as a URL's path segment: Discord's and others' webhooks (/webhooks/ID/S),
    # Sumo Logic's OTLP receiver (/receiver/v1/otlp/S), and a segment after a singular
    # key word (/token/S, /api-key/S): one of 16 characters or more, letters and digits
    # both, not a UUID, a file name or a slug of lower-case words (ids stay; so do
    # plural collections, /keys/ID, /tokens/ID, where a segment names a resource).
    Shape(
        ("webhooks/", "/receiver/v1/"),
        r"(?i:webhooks/[0-9]{5,20}|/receiver/v1/(?:otlp|http))/(?P<v>[A-Za-z0-9_=+-]{20,})",
    ),
    Shape(
        tuple(
            f"/{w}/"
            for w in (
                "token",
                "key",
                "secret",
                *_spellings("api key", "access token", "auth token", "api token"),
            )
            if " " not in w
        ),
        r"/(?i:(?:api[-_]?|access[-_]?|auth[-_]?)?(?:key|token)|secret)/(?P<v>" + _SEGMENT + ")",
    ),
    # .netrc: machine HOST login USER password S (on one line or many; JSON text too), not
    # prose ("the default login and password to sign in").
    Shape(
        ("machine", "default"),
        rf"(?i)(?:machine{_NETRC_SEP}[^\s\\]+|default)"
        rf"(?:{_NETRC_SEP}(?:login|account|port){_NETRC_SEP}{_NETRC_WORD}[^\s\\]+)+"
        rf"{_NETRC_SEP}password{_NETRC_SEP}{_NETRC_WORD}"
        r"(?:\"(?P<v>[^\"\r\n\\]+)\"|(?P<v2>(?:(?!\\[nrt\"])\S)+))",
    ),
    # A line of .pgpass (host:port:db:user:S, an IPv6 address's group is not a password),
    # and user:S@host:port with no scheme (.git-credentials, a proxy setting): a literal
    # ":" first, so this is searched for fast everywhere.
    Shape(
        (),
        r":(?<=[\w.%+*-]:)(?:"
        r"(?:[0-9]{1,5}|\*):(?:[^:\s\\]|\\.)+:(?:[^:\s\\]|\\.)+:"
        r"(?![0-9a-fA-F]{1,4}(?=[ \t]*(?:$|[\r\n])))"
        r"(?P<v>" + _HIDDEN + r"(?:[^:\s\\]|\\[^nrt\s])+)(?=[ \t]*(?:$|[\r\n]|\\[rn]))"
        r"|(?P<v2>" + _HIDDEN + r"[^\s:@/\"'<>]{1,200})"
        r"@(?=[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*:[0-9]{1,5}(?![\w./-]))"
        r")",
        prefilter=r":(?:[0-9]{1,5}|\*):|:[^ \t\n\r\f\v:@/\"'<>]{1,200}@",
    ),
    # Secret-named fields given a value in text.
    *(
        Shape(triggers, r"(?i)(?P<n>" + word + ")" + _told("password" in triggers))
        for triggers, word in _TEXT_KEYS
    ),
    # SQL: CREATE USER u IDENTIFIED BY 'S', IDENTIFIED WITH plugin BY 'S'.
    Shape(
        ("identified",),
        r"(?i)identified(?:[ \t]+with[ \t]+[\w'\"]+)?[ \t]+by[ \t]+(?:password[ \t]+)?"
        r"(?:'(?P<v>[^'\r\n]*)'|\"(?P<v2>[^\"\r\n]*)\"|(?P<v3>" + _HIDDEN + r"[^\s;'\"]+))",
    ),
    # A short option -p S / -pS: a password only in the commands that say so (mysql and
    # its tools, mongo, sshpass, a registry's login) or beside a user given (-u bob -p S);
    # elsewhere it is a port or a flag (ssh -p 2222, mkdir -p, git log -u -p), and a port
    # mapping stays there too (docker run --name mysql -p 3306:3306).
    Shape(
        ("mysql", "mariadb", "mongo", "sshpass", "login", "-u ", "-u=", '-u"', "-u'"),
        r"(?:(?i:mysql|mariadb|mongo)[\w-]*(?![\w-])|(?i:sshpass|login)(?![\w-])"
        r"|-u(?:[ \t]+|=|[\"']\s*,\s*)[\"']?(?=[^\s\"'-]))[^\r\n;|&]{0,300}?"
        r"-(?<![\w-]-)p(?:[\"']\s*,\s*[\"']|[ \t]*|=)"
        r"(?:\"(?P<v>[^\"\r\n]+)\"|'(?P<v2>[^'\r\n]+)'|(?P<v3>"
        + _HIDDEN
        + r"(?![0-9.]+:[0-9]+(?::[0-9]+)?(?:/[a-z]+)?(?![^\s\"'`;|&]))"
        # Glued to the option (-p-x9: mysql reads "-x9"), a password may start with "-";
        # after a space a "-" starts the next option.
        + r"(?:(?<=p)-|[^\s\"'`;|&-])[^\s\"'`;|&]*))",
    ),
    # Any other name ending in "key" (or "token", above), given a value that looks like a
    # credential.
    Shape(("key",), r"(?i)(?<=[A-Za-z0-9_.-])key" + _ASSIGNED_CREDENTIAL),
    # "pass" and "sig" are words too: only given a credential (DB_PASS=..., sig: ...).
    Shape(("pass", "sig"), r"(?i)(?:pass|sig)" + _ASSIGNED_CREDENTIAL),
    Shape(
        tuple(f"{sep}{key}=" for sep in "?&" for key in _QUERY_KEYS),
        r"(?i)[?&](?:" + "|".join(_QUERY_KEYS) + r")=(?P<v>" + _HIDDEN + r"[^&;\s\"'#,)}\]]+)",
    ),
    # Command lines: --password x, --db-password=x, -password x, ["--api-key", "x"],
    # curl -u user:password.
    Shape(
        (
            "--",
            *(
                f"-{w}"
                for w in ("password", "passwd", "secret", "token", "apikey", "api-key", "api_key")
            ),
        ),
        r"(?i)(?<![\w-])--?(?:[a-z0-9]+[-_.])*?(?:"
        + _OPTION_KEYS
        + _OPTION_VALUE
        # --signing-key x: any other option ending in key or token, given a credential.
        + r"|(?:key|token)(?:=|[ \t]+|[\"']\s*,\s*[\"'])(?P<v2>"
        + _CREDENTIAL
        + "))",
    ),
    Shape(
        ("-u ", "-u=", '-u"', "-u'", "--user"),
        r"(?<![\w-])(?:-u(?:=|[ \t]*)|--user(?:=|[ \t]+))[\"']?(?:\"[^\"]*\"|'[^']*'|[^\s:\"']*):"
        r"(?P<v>" + _HIDDEN + r"\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)",
    ),
    # A secret header given to curl: -H "X-Api-Key: ...", --header 'Token: ...'.
    Shape(
        ("-h ", "-h=", '-h"', "-h'", "--header"),
        r"(?i)(?<![\w-])(?:-H|--header)(?:=|[ \t]*)[\"']?[A-Za-z0-9_-]*"
        r"(?:key|token|secret|auth|cookie|passw|credential|signature|session)[A-Za-z0-9_-]*"
        r":[ \t]*(?:(?:bearer|basic|token|digest)[ \t]+)?(?P<v>" + _HIDDEN + r"[^\s\"']+)",
    ),
    # <add key="Password" value="..."/> (.NET and NuGet configuration files).
    Shape(
        ("<add key=",),
        r"(?i)<add\s+key=\"[^\"]*(?:password|secret|token|key)[^\"]*\"\s*value=\"(?P<v>[^\"]+)\"",
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
