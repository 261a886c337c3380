"""Python ``repr`` text of SDK objects, read as plain data: never evaluated, never imported.

Some instrumentations record a message as the ``repr`` of the framework's
object instead of JSON: ``ChatMessage(_role=<ChatRole.USER: 'user'>,
_content=[TextContent(text='...')])`` (Haystack under OpenInference),
``ResponseFunctionToolCall(arguments='{}', call_id='c1', ...)``
(openai-agents' OTel bridge).  :func:`loads` reads such text with Python's own
parser (``ast``) and keeps only what is data:

- literals (strings, numbers, ``None``, ``True``, lists, tuples, dicts) as they are;
- ``Name(field=value, ...)`` (dataclass and pydantic reprs: keywords only) as a
  dict of its fields, the class name under ``class_key`` when one is given;
- ``<Enum.MEMBER: 'value'>`` as its value; any other ``<...>`` (``<function f
  at 0x...>``) as its text.

Nothing is looked up or called: a name is only a string.  Text that is not
such a repr, or nests deeper than
:data:`~otel_replay.limits.MAX_NESTING`, raises :class:`ValueError`.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Any

from .limits import MAX_NESTING

#: ``<Enum.MEMBER: 'value'>`` with its value a string or a number literal.
_ENUM = re.compile(r"<[A-Za-z_][\w.]*:\s*('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|-?[\d.]+)>\Z")
#: Tokens after which a value starts: there ``<`` opens a ``<...>`` repr, not a comparison.
_BEFORE_VALUE = frozenset({"(", "[", "{", ",", "=", ":"})


def loads(text: str, *, class_key: str | None = None) -> Any:
    """The data ``text`` shows (see the module); :class:`ValueError` when it is not a repr."""
    source = _without_angle_reprs(text)
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, RecursionError, MemoryError) as exc:
        raise ValueError(f"not a Python repr: {exc.__class__.__name__}") from None
    return _value(tree.body, class_key, 0)


def _value(node: ast.expr, class_key: str | None, level: int) -> Any:
    if level > MAX_NESTING:
        raise ValueError(f"repr nested deeper than {MAX_NESTING} levels")
    deeper = level + 1
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Call) and not node.args:
        name = _name(node.func)
        if name is None:
            raise ValueError("not a Python repr: a call of something that is not a name")
        fields = {str(k.arg): _value(k.value, class_key, deeper) for k in node.keywords if k.arg}
        return {class_key: name, **fields} if class_key else fields
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e, class_key, deeper) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {
            _value(k, class_key, deeper): _value(v, class_key, deeper)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _value(node.operand, class_key, deeper)
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            return -operand
    raise ValueError(f"not a Python repr: {node.__class__.__name__}")


def _name(node: ast.expr) -> str | None:
    """``Name`` or ``module.Name`` as text."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _without_angle_reprs(text: str) -> str:
    """``text`` with each ``<...>`` repr in value position replaced by a literal."""
    if "<" not in text:
        return text
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: tuple[int, int]) -> int:
        return starts[position[0] - 1] + position[1]

    out: list[str] = []
    done = 0
    previous = ""
    opened: int | None = None
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                continue
            if opened is None:
                if token.string == "<" and previous in _BEFORE_VALUE:
                    opened, depth = offset(token.start), 1
                previous = token.string
                continue
            if token.string == "<":
                depth += 1
            elif token.string == ">":
                depth -= 1
                if depth == 0:
                    end = offset(token.end)
                    out.append(text[done:opened])
                    out.append(_literal_of(text[opened:end]))
                    done, opened, previous = end, None, ">"
    except (tokenize.TokenError, SyntaxError) as exc:
        raise ValueError(f"not a Python repr: {exc}") from None
    out.append(text[done:])
    return "".join(out)


def _literal_of(angle: str) -> str:
    """An enum member's value as it is written; anything else as a string literal of its text."""
    found = _ENUM.match(angle)
    return found.group(1) if found else repr(angle)
