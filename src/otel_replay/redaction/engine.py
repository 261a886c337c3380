"""The redactor: values walked (mappings, lists, objects) and judged by key, by value, by hook."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

from ..limits import PLAIN_DEPTH
from .finder import _Shapes
from .keys import FIELD_KEYS, HEADER_KEYS, INSIDE_WORDS
from .patterns import PERSONAL_DATA_PATTERNS, VALUE_PATTERNS
from .shape import PLACEHOLDER, Shape
from .text import _CLEAN_CHARS, _MEMO_CHARS, _MEMO_SIZE, TextRedactor

Hook = Callable[[str, Any], Any]
_Name = tuple[bool, str | None, bool]

#: A mapping under a key named like this holds HTTP headers (header names use a wider net).
_HEADERS_KEY = re.compile(r"headers?$", re.IGNORECASE)
#: Fields that name what the field beside them holds, and those fields: an entry of a
#: HAR file's or Postman's headers, a Kubernetes env, a CloudFormation parameter
#: (``{"name": "x-api-key", "value": S}``).
_NAME_FIELDS = ("name", "Name", "key", "Key", "ParameterKey", "ParameterName")
_VALUE_FIELDS = ("value", "Value", "ParameterValue")


@functools.lru_cache(maxsize=16)
def _finder(shapes: tuple[Shape, ...], prefiltered: bool) -> _Shapes:
    """The finder of ``shapes``, one per process for each set of them: building one costs
    more than scrubbing a span, and a process may build many redactors of the same
    settings (one per exporter, per session, per call to ``configure_redaction``).  What
    a finder keeps is what it learned of its shapes (their plans, compiled as met), the
    same for every redactor; what a redactor remembers of texts it keeps itself."""
    return _Shapes(shapes, INSIDE_WORDS, prefiltered=prefiltered)


class Redactor(TextRedactor):
    """Scrubs values by key, by pattern and by hook; reports the paths it hid."""

    def __init__(
        self,
        keys: Iterable[str] = (),
        patterns: Iterable[str] = (),
        hook: Hook | None = None,
        *,
        personal_data: bool = False,
        prefilter: bool = True,
    ) -> None:
        """``prefilter``: find where to look with one pass of Hyperscan where the ``fast``
        extra is installed (see :mod:`otel_replay.redaction.prefilter`); off, or without
        it, the pure-Python pass finds the same."""
        keys = list(keys)
        self._key_re = re.compile("|".join(f"(?:{k})" for k in (*FIELD_KEYS, *keys)), re.I)
        self._header_re = re.compile(
            "|".join(f"(?:{k})" for k in (*HEADER_KEYS, *FIELD_KEYS, *keys)), re.I
        )
        shapes = [*VALUE_PATTERNS, *(Shape((), p) for p in patterns)]
        if personal_data:
            shapes += PERSONAL_DATA_PATTERNS
        try:
            self._shapes = _finder(tuple(shapes), prefilter)
        except TypeError:  # a pattern that cannot be hashed: a finder of its own
            self._shapes = _Shapes(shapes, INSIDE_WORDS, prefiltered=prefilter)
        self._hook = hook
        self.personal_data = personal_data
        self._keys: dict[str, bool] = {}
        self._headers: dict[str, bool] = {}
        #: Per mapping key, as a field and as a header name: (secret?, the key with its
        #: secrets hidden or None, holds headers?).  Keys repeat endlessly: judged once.
        self._names: tuple[dict[str, _Name], dict[str, _Name]] = ({}, {})
        self._memo: dict[str, str] = {}
        self._clean: set[str] = set()
        self._clean_chars = 0
        self._long_clean: set[str] = set()
        self._long_chars = 0

    # --- names ---------------------------------------------------------------------

    def is_secret_key(self, key: str) -> bool:
        """True when a field named ``key`` holds a secret."""
        return _verdict(self._keys, self._key_re, key)

    def is_secret_header(self, name: str) -> bool:
        """True when an HTTP header named ``name`` holds a secret."""
        return _verdict(self._headers, self._header_re, name)

    # --- values --------------------------------------------------------------------

    @property
    def hooked(self) -> bool:
        """Whether a user hook sees every value (it may see each path only as a whole)."""
        return self._hook is not None

    def known_clean(self, json_text: str) -> bool:
        """Whether the plain JSON value spelled ``json_text`` was scrubbed and hid nothing.

        A conversation sends its earlier messages again with every call: each
        is walked once, not once per call.  Never with a hook (it may answer
        differently each time, and is owed every value).
        """
        return json_text in self._clean

    def remember_clean(self, json_text: str) -> None:
        """Note that the plain JSON value spelled ``json_text`` hides nothing (see above)."""
        if self._hook is not None:
            return
        if self._clean_chars + len(json_text) > _CLEAN_CHARS:
            self._clean.clear()
            self._clean_chars = 0
        self._clean.add(json_text)
        self._clean_chars += len(json_text)

    def scrub(self, value: Any, path: str, hidden: list[str]) -> Any:
        """``value`` with secrets replaced; appends each hidden path to ``hidden``.

        Mappings, lists and tuples, dataclasses, pydantic models and named
        tuples are walked (a changed object is a copy; one that cannot be
        copied is hidden whole); strings and bytes are searched.
        """
        return self._scrub(value, _Path((path,)), hidden, False)

    def scrub_json(self, value: Any, path: str, hidden: list[str]) -> tuple[Any, bool]:
        """:meth:`scrub`, and whether ``value`` is plain JSON in the sense of
        :func:`~otel_replay.payload.codec.is_plain_json` (False also where unsure): one walk
        for both, on the capture hot path."""
        stack = _Path((path,))
        return self._scrub(value, stack, hidden, False), stack.plain

    def changed_values(
        self, values: Mapping[str, Any], skip: Container[str] = ()
    ) -> dict[str, Any]:
        """The values of the flat mapping ``values`` (a span's attributes) that hide a
        secret, scrubbed, by key, in order: a text as :meth:`text` scrubs it, bytes as
        :meth:`data`, a list, tuple or mapping as :meth:`scrub` under its key, anything
        else left, and those under a key of ``skip`` not looked at.  Names are not
        judged here: the caller judged them.

        Spans repeat most of their texts (names, models, the conversation so far): those
        seen before are answered from memory here, without a call for each.
        """
        out: dict[str, Any] = {}
        text = self.text
        # A subclass's own text() is called for every text (its answer may differ).
        memo = self._memo if type(self).text is TextRedactor.text else None
        long_clean = self._long_clean
        for key, value in values.items():
            if skip and key in skip:
                continue
            t = type(value)
            new: Any
            if t is str:
                if memo is None:
                    new = text(value)
                elif len(value) > _MEMO_CHARS:
                    if value in long_clean:
                        continue
                    new = text(value)
                else:
                    new = memo.get(value)
                    if new is None:
                        new = text(value)
            elif t is bool or t is int or t is float:
                continue
            elif t is bytes:
                new = self.data(value)
            elif t is tuple or t is list or t is dict:
                new = self.scrub(value, key, [])
            else:
                continue
            if new is not value and new != value:
                out[key] = new
        return out

    def headers(self, headers: Mapping[str, Any], path: str, hidden: list[str]) -> Any:
        """HTTP ``headers`` (name -> value) with secret ones replaced."""
        return self._scrub(headers, _Path((path,)), hidden, True)

    def _scrub(self, value: Any, path: _Path, hidden: list[str], headers: bool) -> Any:
        # The path is a stack of parts (the root, then keys and indexes) spelled only
        # when something is hidden: most values hide nothing, and spelling paths for
        # them all is waste.
        if self._hook is not None:
            hooked = self._hook(_spelled(path), value)
            if hooked is not value:
                hidden.append(_spelled(path))
                path.plain = False  # not walked: unknown
                return hooked
        t = type(value)
        if t is str:
            out = self.text(value)
            if out is not value:
                hidden.append(_spelled(path))
            return out
        if t is bytes:
            path.plain = False
            data = self.data(value)
            if data is not value:
                hidden.append(_spelled(path))
            return data
        if t is int or t is float or t is bool or value is None:
            return value
        if t is dict:
            return self._mapping(value, path, hidden, headers)
        if t is list or t is tuple:
            return self._sequence(value, path, hidden, headers)
        path.plain = False
        return self._object(value, path, hidden)

    def _sequence(
        self, value: list[Any] | tuple[Any, ...], path: _Path, hidden: list[str], headers: bool
    ) -> Any:
        """A list's or tuple's items scrubbed; a changed one is a copy."""
        if type(value) is tuple or (len(path) > PLAIN_DEPTH and value):
            path.plain = False  # a tuple, or deeper than a payload's JSON may go
        if len(value) == 2 and (headers or type(value) is tuple):
            paired = self._pair(value, path, hidden)
            if paired is not value:
                return paired
        hooked = self._hook is not None
        memo = self._memo
        changed: list[Any] | None = None
        for i, v in enumerate(value):
            tv = type(v)
            # The common items inline, without the walk's dispatch (a hook sees them all).
            if not hooked and (tv is int or tv is float or tv is bool or v is None):
                continue
            new: Any
            if not hooked and tv is str:
                new = memo.get(v)  # self.text(v), its memo read here: the commonest case
                new = self.text(v) if new is None else v if new == v else new
                if new is not v:
                    path.append(i)
                    hidden.append(_spelled(path))
                    path.pop()
            else:
                path.append(i)
                if not hooked and tv is dict:
                    new = self._mapping(v, path, hidden, headers)
                else:
                    new = self._scrub(v, path, hidden, headers)
                path.pop()
            if new is not v:
                if changed is None:
                    changed = list(value)
                changed[i] = new
        return value if changed is None else type(value)(changed)

    def _pair(self, value: list[Any] | tuple[Any, ...], path: _Path, hidden: list[str]) -> Any:
        """A header pair (``(b"x-api-key", b"S")``, ``["Authorization", "S"]`` under a
        headers field) with its value hidden when its name names a secret; else ``value``."""
        name, secret = value
        if type(secret) not in (str, bytes) or not self._names_secret(name, True):
            return value
        placeholder: Any = PLACEHOLDER if type(secret) is str else PLACEHOLDER.encode()
        if secret == placeholder:
            return value
        path.append(1)
        hidden.append(_spelled(path))
        path.pop()
        return type(value)([self._scrub(name, path, hidden, True), placeholder])

    def _mapping(
        self,
        value: dict[Any, Any],
        path: _Path,
        hidden: list[str],
        headers: bool,
        *,
        fields: bool = False,
    ) -> dict[Any, Any]:
        """A mapping's values scrubbed, and its keys (text written too: a URL, a header
        line) unless they are an object's ``fields``; a changed mapping is a copy."""
        if len(path) > PLAIN_DEPTH and value:
            path.plain = False  # deeper than a payload's JSON may go
        names = self._names[headers]
        hooked = self._hook is not None
        memo = self._memo
        out: dict[Any, Any] | None = None
        renamed: dict[Any, str] | None = None
        paired = self._paired(value, headers)
        for k, v in value.items():
            if type(k) is str:
                known = names.get(k)
                secret, shown, holds_headers = known or self._name(k, headers)
                name = k
                if shown is not None and not fields:
                    name = shown
                    renamed = renamed or {}
                    renamed[k] = name
                    hidden.append(f"{_spelled(path)}.{name}")
            else:
                secret, name, holds_headers = False, str(k), False
                path.plain = False
            if paired is not None and k == paired:
                secret = True
            tv = type(v)
            if secret and v is not None:
                new: Any = v if v == PLACEHOLDER else PLACEHOLDER
                if new is not v:
                    hidden.append(f"{_spelled(path)}.{name}")
            elif not hooked and (tv is int or tv is float or tv is bool or v is None):
                continue
            elif not hooked and tv is str:  # the common value, without the walk's dispatch
                new = memo.get(v)  # self.text(v), its memo read here
                new = self.text(v) if new is None else v if new == v else new
                if new is not v:
                    hidden.append(f"{_spelled(path)}.{name}")
            else:
                path.append(name)
                if not hooked and tv is dict:
                    new = self._mapping(v, path, hidden, holds_headers)
                elif not hooked and tv is list:
                    new = self._sequence(v, path, hidden, holds_headers)
                else:
                    new = self._scrub(v, path, hidden, holds_headers)
                path.pop()
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        if renamed is not None:
            out = {renamed.get(k, k): v for k, v in (value if out is None else out).items()}
        return value if out is None else out

    def _paired(self, value: dict[Any, Any], headers: bool) -> str | None:
        """The value field of a mapping whose name field names a secret (see
        :data:`_NAME_FIELDS`), judged as a header name under headers; None if none."""
        held = next((f for f in _VALUE_FIELDS if f in value), None)
        if held is None:
            return None
        named = next((value[f] for f in _NAME_FIELDS if f in value), None)
        return held if self._names_secret(named, headers) else None

    def _names_secret(self, named: Any, headers: bool) -> bool:
        """Whether ``named`` (text or bytes) is the name of a secret field or header."""
        if type(named) is bytes:
            named = named.decode("latin-1")
        if type(named) is not str or len(named) > _MEMO_CHARS:
            return False
        return self.is_secret_header(named) if headers else self.is_secret_key(named)

    def _name(self, key: str, header: bool) -> _Name:
        """How a mapping key is judged (see ``_names``)."""
        secret = self.is_secret_header(key) if header else self.is_secret_key(key)
        shown = self.text(key)
        found = (secret, None if shown is key else shown, _holds_headers(key))
        if len(key) <= _MEMO_CHARS:  # a long key (a text used as a key) is judged each time
            names = self._names[header]
            if len(names) > _MEMO_SIZE:
                names.clear()
            names[key] = found
        return found

    def _object(self, value: Any, path: _Path, hidden: list[str]) -> Any:
        """Dataclasses, pydantic models and named tuples: their fields, by name."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = [f.name for f in dataclasses.fields(value) if f.init]
            copy: Callable[[dict[str, Any]], Any] = lambda c: dataclasses.replace(value, **c)  # noqa: E731
        elif hasattr(type(value), "model_fields") and callable(getattr(value, "model_copy", None)):
            names = list(type(value).model_fields)
            copy = lambda c: value.model_copy(update=c)  # noqa: E731
        elif isinstance(value, tuple) and hasattr(value, "_fields"):
            names = list(value._fields)
            copy = lambda c: value._replace(**c)  # type: ignore[attr-defined]  # noqa: E731
        else:
            return value
        fields = {name: getattr(value, name, None) for name in names}
        before = len(hidden)
        clean = self._mapping(fields, path, hidden, False, fields=True)
        if clean is fields:
            return value
        changes = {k: v for k, v in clean.items() if v is not fields[k]}
        try:
            return copy(changes)
        except Exception:  # a class that refuses the copy is hidden whole
            del hidden[before:]
            hidden.append(_spelled(path))
            return PLACEHOLDER


class _Path(list[Any]):
    """The walk's path stack: ``_Path([root])``, then keys and indexes pushed and popped."""

    #: Whether everything walked so far was plain JSON (set on the instance when not).
    plain = True


def _spelled(path: list[Any]) -> str:
    """A path stack as text: ``root.key[2].key``."""
    return str(path[0]) + "".join(f"[{p}]" if type(p) is int else f".{p}" for p in path[1:])


def _holds_headers(key: str) -> bool:
    """A mapping under ``key`` holds HTTP headers (``headers``, ``extra_headers``)."""
    return _HEADERS_KEY.search(key) is not None


def _verdict(cache: dict[str, bool], names: re.Pattern[str], name: str) -> bool:
    # Names repeat endlessly (attribute names, kwarg names): remember the verdict of
    # each, but for long ones (a text used as a key), which would fill memory.
    verdict = cache.get(name)
    if verdict is None:
        verdict = names.search(name) is not None
        if len(name) <= _MEMO_CHARS:
            if len(cache) > _MEMO_SIZE:
                cache.clear()
            cache[name] = verdict
    return verdict
