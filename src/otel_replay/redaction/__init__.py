"""One redaction engine: secrets never reach an attribute, a file or a blob.

Every string capture writes and every attribute, event and status of every
span our processor or exporters see goes through the one :class:`Redactor`:

* by key: a mapping key, dataclass or model field, attribute or header named
  like a credential has its whole value replaced (header names use a wider
  net; see :mod:`otel_replay.redaction.keys`);
* by value: credential shapes inside any text (provider keys, JWTs,
  ``Bearer``, passwords in URLs, query and connection strings, ``"api_key":
  "..."`` in JSON, Python, YAML, INI or env text, ``--password x`` on a
  command line) are replaced where they stand, so the text still reads;
  bytes and text in UTF-16 are read as such, text escaped once or twice
  (``%2522``, ``&amp;quot;``) is read decoded, and a base64 value or run
  (in prose, YAML or a JSON string) or a hex run (32 digits or more) whose
  decoding is text holding a secret is hidden whole;
* by a user hook ``(path, value) -> value``, and, when asked, personal data
  (e-mail addresses, phone numbers).

A hidden value becomes the stable placeholder ``[REDACTED]`` (the same for
every secret: it says nothing about what it replaced), and its path is
recorded (``otel_replay.redacted``) so that replay knows a value was hidden
rather than empty.  Redaction is idempotent, and replay scrubs what the live
app sends with the same engine before comparing it with the recording, so a
scrubbed recording still replays.

Configure with :func:`configure_redaction` (or make one with
:func:`redactor_from_settings` and :func:`install_redactor` it), the
``ReplaySpanProcessor`` arguments, or the environment: ``OTEL_REPLAY_REDACT_KEYS`` /
``OTEL_REPLAY_REDACT_PATTERNS`` (comma-separated regular expressions) and
``OTEL_REPLAY_REDACT_PERSONAL_DATA=true``.
"""

from __future__ import annotations

from .engine import Hook, Redactor
from .keys import FIELD_KEYS, HEADER_KEYS, INSIDE_WORDS
from .patterns import PERSONAL_DATA_PATTERNS, VALUE_PATTERNS
from .process import configure_redaction, install_redactor, redactor, redactor_from_settings
from .shape import PLACEHOLDER, Shape

__all__ = [
    "FIELD_KEYS",
    "HEADER_KEYS",
    "INSIDE_WORDS",
    "PERSONAL_DATA_PATTERNS",
    "PLACEHOLDER",
    "VALUE_PATTERNS",
    "Hook",
    "Redactor",
    "Shape",
    "configure_redaction",
    "install_redactor",
    "redactor",
    "redactor_from_settings",
]
