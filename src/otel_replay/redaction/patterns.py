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

from typing import Final

from .keys import _OPTION_KEYS, _QUERY_KEYS, _TEXT_KEYS, _spellings
from .providers import PROVIDER_SHAPES
from .shape import _HIDDEN, Shape, literal_trie

#: A type hint is code, not a value (password: str, api_key: Optional[str]); nor is YAML's
#: null, ``~`` alone (but ``~x1`` is a value).
_NOT_A_TYPE = r"(?!(?:str|bytes|int|SecretStr|None|null)\b|~(?![^\s,]))"
#: A YAML tag before a value (``password: !!str S``): no part of the value.
_YAML_TAG = r"(?:!![a-z]+[ \t]+)?"
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
    # (also a subscript's: os.environ["API_KEY"] = "S", headers['x-api-key'] = 'S')
    r"|[\"']?\]?\s*" + _SEP + r"\s*(?:\"(?P<v2>" + quoted_body('"') + r")(?:\"|(?=[\r\n]|\Z))"
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
    # (a YAML tag before it, "password: !!str S", is no part of the value)
    r"|[\"']?[ \t]*:[ \t]+"
    + _YAML_TAG
    + r"(?P<v5>"
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
    r"(?![a-z0-9])(?:\\*[\"'])?\]?(?:[ \t]*"
    + _SEP
    + r"[ \t]*"
    + _YAML_TAG
    +
    # YAML on the next line: "github_token:\n  S", "github_token: |\n  S"; after a line
    # continuation: "GITHUB_TOKEN=\\\n  S".
    r"(?:(?:[|>][-+0-9]*)?[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]+|"
    + _CONTINUED
    + ")?"
    # Told in prose ("the token was S"), or in a table's next cell (| github_token | S |).
    r"|" + _SAID + r"[ \t]+|[ \t]*\|[ \t]*`?)"
    r"(?:\\*[\"'])?(?P<v>" + _CREDENTIAL + ")"
)


def _paired(value: str = r"[^\"'\\\r\n]+") -> str:
    """A secret name given as the value of a name field, its secret in the field or item
    beside it: ``{"name": "x-api-key", "value": "S"}`` (HAR, Kubernetes and Postman
    entries), ``{"Key": "DB_PASSWORD", "Value": "S"}``, a header pair
    ``(b"x-api-key", b"S")`` or ``("api_key", "S")``, ``["x-api-key", "S"]`` (in a list
    only a credential: ``["password", "username"]`` names two fields), and in YAML
    ``- name: API_TOKEN`` with ``value: S`` on the next line.  ``value``: what the
    secret looks like (any text for a name that says it is one, a credential for a
    name that only ends in ``key`` or ``token``)."""
    line = value if value == _CREDENTIAL else r"[^\s\"'#\\]+"
    return (  # (case-insensitive: a shape may say so only of its name)
        r"(?i:[a-z0-9_.-]*(?:\\*[\"'](?:"
        r"\s*,\s*\\*[\"'][a-z]*value\\*[\"']\s*:\s*\\*[\"'](?P<v40>" + _HIDDEN + value + ")"
        r"|\s*,\s*b[\"'](?P<v42>" + _HIDDEN + value + r")[\"']\s*[)\]]"
        r"|\s*,\s*'(?P<v43>" + _HIDDEN + value + r")'\s*\)"
        r"|\s*,\s*\"(?P<v44>" + _HIDDEN + value + r")\"\s*\)"
        r"|\s*,\s*(?P<q40>\\*[\"'])(?P<v45>" + _CREDENTIAL + r")(?P=q40)\s*\]"
        r")|[\"']?[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]*(?:-[ \t]+)?[a-z]*value[ \t]*:[ \t]*"
        r"(?:\"(?P<v46>" + value + r")\"|'(?P<v47>" + value + r")'|(?P<v48>" + line + "))))"
    )


#: An option's value: the next word, or the next item of an argument list in JSON or Python.
_OPTION_VALUE = r"(?:=|[ \t]+|[\"']\s*,\s*[\"'])(?P<v>" + _HIDDEN + r"[^\s\"'`,=-][^\s\"'`,]*)"


VALUE_PATTERNS: Final = (
    # Private keys, whole blocks (the end may be cut off).
    Shape(
        ("-----begin",),
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:KEY(?: BLOCK)?-----|\Z)",
    ),
    *PROVIDER_SHAPES,
    # Authorization schemes (ApiKey: Elastic's), and a field named bearer given a value
    # (but for Bearer, a credential has a digit: "Basic configuration" is prose).
    Shape(
        ("bearer",),
        r"(?i:bearer)(?:\s+(?P<v>[A-Za-z0-9._~+/=-]{8,})"
        r"|[\"']?\]?[ \t]*[:=][ \t]*" + _YAML_TAG + r"[\"']?(?P<v2>" + _HIDDEN + r"[^\s\"',;&]+))",
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
        r"|" + _ASSIGNED_CREDENTIAL.replace("(?P<v>", "(?P<v2>") + "|" + _paired(_CREDENTIAL) + ")",
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
    # Secret-named fields given a value in text, or named by a name field with the
    # secret beside it (_paired): one expression, tried once where the name stands.
    *(
        Shape(
            triggers,
            r"(?i)(?P<n>" + word + ")(?:" + _told("password" in triggers) + "|" + _paired() + ")",
        )
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
    Shape(
        ("key",),
        r"(?i)(?<=[A-Za-z0-9_.-])key(?:" + _ASSIGNED_CREDENTIAL + "|" + _paired(_CREDENTIAL) + ")",
    ),
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
