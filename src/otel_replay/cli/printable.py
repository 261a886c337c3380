"""Recorded text made safe to print: what a terminal would act on is shown escaped instead.

Span, agent and tool names, messages, ids and file names come from traces
anyone may hand us.  Printed raw, an escape sequence in one could recolour,
retitle or clear the terminal, move the cursor over earlier output, or (in
some terminals) do worse; a newline in a name could forge a line of output.
Every such character is shown the way Python writes it in a string literal
(``\\x1b``, ``\\n``, ``\\u202e``); everything else, all ordinary Unicode
included, is printed as it is.
"""

from __future__ import annotations

import re
from typing import Final

#: What a terminal acts on rather than shows: the C0 controls (tab and newline
#: too: they would break a line or an aligned column), DEL, the C1 controls
#: (U+009B is a one-character CSI), the line and paragraph separators, and the
#: bidirectional controls that make text display in another order than it reads; and
#: half a surrogate pair (a recorded string may hold one), which no encoder writes.
_UNSAFE: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(m: re.Match[str]) -> str:
    c = m.group()
    named = _NAMED.get(c)
    if named is not None:
        return named
    code = ord(c)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` with every character a terminal would act on shown escaped.

    With ``lines`` newlines are kept (a multi-line report), and tabs are
    expanded to spaces; otherwise the text stays on one line.
    """
    if lines:
        return "\n".join(_UNSAFE.sub(_escaped, line.expandtabs()) for line in text.split("\n"))
    return _UNSAFE.sub(_escaped, text)


#: What ``json.dumps(ensure_ascii=False)`` leaves raw that a terminal acts on, or that
#: cannot be written at all (half a surrogate pair).
_UNSAFE_IN_JSON: Final = re.compile(
    "[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def json_printable(text: str) -> str:
    """JSON text with DEL, C1, separator and bidi characters and lone surrogates as
    ``\\uXXXX`` escapes.

    They can only stand inside JSON strings, where the escape means the same
    character: the document is unchanged as data.
    """
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
