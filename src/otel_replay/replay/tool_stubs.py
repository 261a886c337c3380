"""Tool stubs: answer ``@tool`` calls from the recording.

Matching, each lookup O(1): by call id when both sides have one, else by tool
name + canonical arguments in recorded order.  Per-tool policy: ``stub``
(return the recorded bytes, re-raise the recorded exception), ``live`` (run
the real function) or ``error`` (refuse the call).

A recorded object (a dataclass, a model, an exception) is rebuilt only with a
class the replay trusts (:mod:`otel_replay.trusted_types`): the trace file
names it, and nothing a file names is imported.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from typing import Any

from .. import attributes as A
from ..capture.hooks import Resolution, ToolInvocation
from ..payload import attributes as payload_attributes
from ..payload import codec as payload
from ..runs.model import Run, Step, ToolError
from ..trusted_types import RecordedBaseException, TypeResolver, declared_types, stand_in
from .divergence import Candidate, ReplayDivergence, ReplayError, ReplayRefused
from .matchers import tool_arguments_key, tool_reasons
from .observer import NO_OBSERVER, Observed, ReplayObserver
from .options import TOOL_POLICIES, policy_of
from .recorder import ToolEntry, now_ns
from .servable import Unservable, UnservableKind, tool_lacks

POLICIES = TOOL_POLICIES


class ToolStubs(Observed):
    """The recorded tool calls of one run, indexed for replay."""

    def __init__(
        self,
        run: Run,
        policy: str | Mapping[str, str] = "stub",
        *,
        types: TypeResolver | None = None,
        observer: ReplayObserver = NO_OBSERVER,
        from_messages: str | Mapping[str, str] = "refuse",
    ) -> None:
        self.run = run
        #: Tool name -> how a result known only as the text the model was sent is answered.
        self.from_messages = (
            dict(from_messages) if isinstance(from_messages, Mapping) else {"*": from_messages}
        )
        #: Steps answered with what the model was sent: (step, "text" or "json").
        self.answered_from_messages: list[tuple[Step, str]] = []
        #: The classes recorded objects may be rebuilt with.
        self.types = types if types is not None else TypeResolver()
        #: Told of each call replayed and each divergence (a session).
        self.observer = observer
        self.policy = policy if isinstance(policy, str) else dict(policy)
        for p in [policy] if isinstance(policy, str) else policy.values():
            if p not in POLICIES:
                raise ValueError(f"tool policy must be one of {POLICIES}, not {p!r}")
        self.steps = [s for s in run.steps if s.kind == "tool" and s.tool is not None]
        # A tool retried inside its own span (one model call, several attempts): each
        # attempt answers one call, after the tool step it repeats; one run again after it
        # raised: each failed attempt answers one call, before the tool step, raising its
        # recorded error, so that the framework runs it again as it did (see runs.retries).
        attempts = [
            s
            for s in run.steps
            if s.kind == "other" and (s.duplicate_of or s.retried_as) and s.tool
        ]
        #: Tool step span id -> its failed attempts, in order (a call matched by its id
        #: takes them first).
        self.attempts: dict[str, collections.deque[Step]] = collections.defaultdict(
            collections.deque
        )
        for step in sorted(attempts, key=lambda s: s.index):
            if step.retried_as:
                self.attempts[step.retried_as].append(step)
        self.used: set[int] = set()
        self.by_id: dict[str, Step] = {}
        self.by_key: dict[tuple[str, str], collections.deque[Step]] = collections.defaultdict(
            collections.deque
        )
        self.by_name: dict[str, collections.deque[Step]] = collections.defaultdict(
            collections.deque
        )
        for step in sorted([*self.steps, *attempts], key=lambda s: s.index):
            assert step.tool is not None
            if step.tool.call_id and step.kind == "tool":
                self.by_id.setdefault(step.tool.call_id, step)
            key = tool_arguments_key(step.tool.arguments)
            self.by_key[(step.tool.tool_name, key)].append(step)
            self.by_name[step.tool.tool_name].append(step)
        self.live_unmatched: list[str] = []
        #: Steps matched whose result the trace lacks, run live (their tool in ``live_tools``).
        self.live_unanswered: list[Step] = []
        #: Steps whose recorded result had values hidden by the redactor at capture.
        self.redacted: list[Step] = []
        #: Step index -> why the replay refused to answer it (the trace lacks what its stub
        #: needs: :func:`.servable.tool_lacks`), kept though the agent catches the error.
        self.refused: dict[int, Unservable] = {}
        #: Steps whose recorded result was handed back as plain JSON, with the classes refused.
        self.untrusted: list[tuple[Step, list[str]]] = []
        #: Steps whose recorded exception was raised as a RecordedBaseException stand-in.
        self.stand_ins: list[tuple[Step, str]] = []
        #: Tool function -> the classes its return annotation names (computed once).
        self._declared_types: dict[Callable[..., Any], tuple[type, ...]] = {}
        #: The last call that replayed an error (name, arguments key, step), until the
        #: model answers again: the framework may try it again inside the same call.
        self._failed: tuple[str, str, Step] | None = None
        #: id(resolution) -> the log entry its completion fills in.
        self._pending: dict[int, ToolEntry] = {}

    def model_answered(self) -> None:
        """The model answered again: a tool call from now on is a new call."""
        self._failed = None

    def policy_for(self, name: str) -> str:
        return policy_of(self.policy, name)

    # --- ToolInterceptor ----------------------------------------------------------
    def resolve(self, inv: ToolInvocation) -> Resolution:
        try:
            resolution, step = self._resolve(inv)
        except ReplayDivergence as err:
            self._logged(inv, None, err.step, divergence=err)
            raise
        entry = self._logged(inv, step, step)
        if entry is not None:
            self._pending[id(resolution)] = entry
        return resolution

    def _logged(
        self,
        inv: ToolInvocation,
        step: Step | None,
        near: Step | None,
        divergence: ReplayDivergence | None = None,
    ) -> ToolEntry | None:
        if self._log is None:
            return None
        entry = ToolEntry(
            step=step,
            near=near,
            name=inv.name,
            call_id=inv.call_id,
            arguments=inv.arguments,
            at_ns=now_ns(),
            divergence=str(divergence.what) if divergence is not None else None,
            diff=divergence.diff if divergence is not None else "",
        )
        self._log.tool(entry)
        return entry

    def _resolve(self, inv: ToolInvocation) -> tuple[Resolution, Step | None]:
        policy = self.policy_for(inv.name)
        if policy == "error":
            raise ReplayError(f"tool {inv.name!r} may not run during this replay (policy 'error')")
        args_key = tool_arguments_key(inv.arguments)
        step, problem = self._match(inv, args_key)
        plan = self.plan
        if plan is not None and plan.live_from is not None:
            if step is not None and step.index >= plan.live_from:
                self._unmatch(step)
                step = None
                plan.gone_live = True
            elif step is None and not any(
                s.index < plan.live_from for s in self.steps if s.index not in self.used
            ):
                plan.gone_live = True  # every recorded call before live_from was replayed
            if plan.gone_live:
                if step is not None:
                    self._unmatch(step)
                return Resolution("live"), None
        if step is None and policy == "stub" and self._failed is not None:
            name, key, failed = self._failed
            if (name, key) == (inv.name, args_key):
                # The framework tried the failing call again before the model was asked
                # anything (CrewAI retries a tool with other arguments, then as asked):
                # inside the one recorded call, so it fails the same way.
                assert failed.tool is not None and failed.tool.error is not None
                return Resolution(
                    "raise", error=rebuild_exception(failed.tool.error, self.types)
                ), None
        if step is None and plan is not None and plan.forked:
            return Resolution("live"), None  # a fork: what the recording no longer has runs live
        if step is None and plan is not None and inv.name in plan.live_tools:
            self.live_unmatched.append(inv.name)
            return Resolution("live"), None
        if step is None:
            if policy == "live":
                self.live_unmatched.append(inv.name)
                return Resolution("live"), None
            lost = self._without_arguments(inv)
            if lost is not None:
                raise self._refuse_lacking(lost, "no_arguments")
            raise self._diverge(problem, inv, args_key)
        self.used.add(step.index)
        self.observer.step_started(step)
        if policy == "live":
            return Resolution("live", token=step), step
        tool = step.tool
        assert tool is not None
        hidden = step.attributes.get(A.REDACTED) or ()
        if any(str(p).startswith(A.TOOL_CALL_RESULT) for p in hidden):
            self.redacted.append(step)
        if plan is not None and step.index in plan.override:
            plan.forked = True
            value = plan.override[step.index]
            if isinstance(value, BaseException):
                return Resolution("raise", error=value, token=step), step
            return Resolution("return", value=value, token=step), step
        types = self.types
        if inv.function is not None:
            types = types.including(self._declared(inv.function))
        refused = len(types.refused)
        # (A failure read off a returned value is answered with that value, or refused
        # below where the trace lacks it.)
        if tool.raised:
            assert tool.error is not None
            self._failed = (inv.name, args_key, step)
            error = rebuild_exception(tool.error, types)
            if isinstance(error, RecordedBaseException):
                self.stand_ins.append((step, error.recorded_type))
            output, has_output = None, False
            if tool.result_payload is not None and tool.result_payload.usable:
                with contextlib.suppress(payload.PayloadError):
                    output, has_output = tool.result_payload.value(types), True
            self._note_untrusted(step, refused)
            resolution = Resolution("raise", error=error, value=output, has_value=has_output)
            resolution.token = step
            return resolution, step
        if tool.result_payload is None or tool.result_payload.status == "missing":
            if plan is not None and inv.name in plan.live_tools:
                # The recording cannot answer this call: a tool made live for such calls
                # runs (the report names the step as run live).
                self.live_unanswered.append(step)
                return Resolution("live", token=step), step
            raise self._refuse_lacking(step, "no_result")
        try:
            value = tool.result_payload.value(types)
        except payload.PayloadError as exc:
            raise ReplayError(f"{step.label()}: recorded result cannot be replayed: {exc}") from exc
        if tool.derived:
            value = self._sent_value(step, inv, value)
        elif inv.function is not None:
            value = _as_declared(inv.function, tool.result_payload, value)
        self._note_untrusted(step, refused)
        if self._failed is not None and self._failed[:2] == (inv.name, args_key):
            self._failed = None  # tried again, it returned: a call again is another call
        return Resolution("return", value=value, token=step), step

    def _refuse_lacking(self, step: Step, kind: UnservableKind) -> ReplayRefused:
        """The refusal of ``step``, whose stub needs what the trace lacks (``kind`` of
        :func:`.servable.tool_lacks`), kept in :attr:`refused`: a framework that catches a
        tool's error and goes on must not make the replay end some other way."""
        said = next(said for k, said in tool_lacks(step) if k == kind)
        return ReplayRefused.at_step(self.run, step, kind, said, self.refused)

    def _without_arguments(self, inv: ToolInvocation) -> Step | None:
        """The recorded call a call made is, by its id, or else the next tool step of its
        tool not replayed yet, when the trace lacks that call's arguments (a call cannot be
        matched to it), else None.  Not an attempt of a call (a retry, or a span of the
        same call another layer made, which may hold no arguments): the call is the step's."""
        step = self.by_id.get(inv.call_id) if inv.call_id is not None else None
        if step is None or step.index in self.used:
            queue = self.by_name.get(inv.name, ())
            step = next((s for s in queue if s.index not in self.used and s.kind == "tool"), None)
        if step is None or all(k != "no_arguments" for k, _ in tool_lacks(step)):
            return None
        return step

    def _sent_value(self, step: Step, inv: ToolInvocation, sent: Any) -> Any:
        """What the tool returned, from the text the model was sent, when that can be known.

        A step derived from messages (a client-only instrumentation: no tool
        span) holds only what the model was sent.  That text is the tool's
        value only if the agent sends its tool's text as is; an agent that
        sends ``json.dumps(result)`` sent the JSON text of the value.  Text
        that is no JSON can only be the tool's text; so is any text a stack
        known to send a str as is was sent (its dialect says so), as that text
        gives the model the same request.  Other JSON text is answered as the
        option or the tool's return annotation says, else refused (a guess
        would replay a value the tool may never have returned).
        """
        way = self.from_messages.get(inv.name, self.from_messages.get("*", "refuse"))
        text = sent if isinstance(sent, str) else None
        parsed: Any = _NOT_JSON
        if text is None:
            parsed = sent  # a reader made a value of it: the JSON the model was sent
        else:
            with contextlib.suppress(ValueError):
                parsed = json.loads(text)
        declared = _declared_return(inv.function) if inv.function is not None else ""
        if way == "json" and parsed is not _NOT_JSON:
            return self._answered(step, "json", parsed)
        if way == "text" and text is not None:
            return self._answered(step, "text", text)
        assert step.tool is not None
        if way == "refuse" and text is not None and step.tool.sent_as == "str_as_is":
            return self._answered(step, "text", text)  # the stack sends that text as is
        if way == "refuse":
            if text is not None and parsed is _NOT_JSON:
                return self._answered(step, "text", text)  # no JSON: the tool's own text
            if declared == "text" and text is not None and not isinstance(parsed, str):
                return self._answered(step, "text", text)  # json.dumps of a str is quoted
            if declared == "object" and isinstance(parsed, (dict, list)):
                return self._answered(step, "json", parsed)
        raise self._refuse(step, inv, way, sent)

    def _answered(self, step: Step, how: str, value: Any) -> Any:
        self.answered_from_messages.append((step, how))
        return value

    def _refuse(self, step: Step, inv: ToolInvocation, way: str, sent: Any) -> ReplayRefused:
        """The refusal of ``step``, whose trace holds only the text the model was sent for
        its result, and that text does not say what the tool returned (``way``: what the
        replay was told of how the agent sends its results)."""
        shown = _short(sent) if not isinstance(sent, str) else _short_text(sent)
        if way == "json":
            why = "that text is not JSON, so it spells no value (results_from_messages='json')"
        elif way == "text":
            why = "a reader holds it as a value, not text (results_from_messages='text')"
        else:
            why = (
                "that text is JSON: the tool returned the value it spells (an agent that sends "
                "json.dumps(result)) or that very text, and the trace cannot say which; tell the "
                "replay with results_from_messages='json' or 'text' (or per tool, "
                f"{{{inv.name!r}: ...}}), annotate the tool's return type, or record the tool "
                "with @otel_replay.tool so the trace holds its value"
            )
        said = (
            f"{step.label()}: cannot answer tool {inv.name}: the trace holds only the text the "
            f"model was sent for its result ({shown}; no tool span records the value it "
            f"returned), and {why}"
        )
        return ReplayRefused.at_step(self.run, step, "result_as_sent", said, self.refused)

    def _declared(self, fn: Callable[..., Any]) -> tuple[type, ...]:
        found = self._declared_types.get(fn)
        if found is None:
            found = self._declared_types[fn] = declared_types(fn)
        return found

    def _note_untrusted(self, step: Step, before: int) -> None:
        if len(self.types.refused) > before:
            self.untrusted.append((step, self.types.refused[before:]))

    def complete(self, resolution: Resolution, outcome: Any, error: BaseException | None) -> None:
        entry = self._pending.pop(id(resolution), None)
        if entry is not None:
            entry.outcome, entry.error, entry.done = outcome, error, True
        step = resolution.token
        if isinstance(step, Step):
            name = step.tool.tool_name if step.tool else step.name
            how = "live" if resolution.action == "live" else self.policy_for(name)
            self.observer.step_done(step, how)

    # --- matching -------------------------------------------------------------------
    def _unmatch(self, step: Step) -> None:
        """Put back a step :meth:`_match` took (it is not replayed: the call runs live)."""
        assert step.tool is not None
        self.by_key[(step.tool.tool_name, tool_arguments_key(step.tool.arguments))].appendleft(step)

    def _match(self, inv: ToolInvocation, args_key: str) -> tuple[Step | None, str]:
        if inv.call_id is not None:
            step = self.by_id.get(inv.call_id)
            if step is not None and step.index not in self.used:
                reasons = tool_reasons(step, inv.name, inv.call_id, args_key)
                if not reasons:
                    return self._first_attempt(step), ""
                return None, "; ".join(reasons)
        queue = self.by_key.get((inv.name, args_key))
        while queue:
            step = queue[0]
            if step.index in self.used:
                queue.popleft()
                continue
            queue.popleft()
            return step, ""
        return None, ""

    def _first_attempt(self, step: Step) -> Step:
        """The first failed attempt of ``step``'s call not replayed yet, else ``step``."""
        queue = self.attempts.get(step.span_id)
        while queue and queue[0].index in self.used:
            queue.popleft()
        return queue.popleft() if queue else step

    def take(self, name: str, arguments: Any) -> Step | ReplayDivergence:
        """The recorded call that a call of ``name`` with ``arguments`` (and no call id)
        is, by the rules :meth:`resolve` matches by, now used; or, when the recording
        holds none left, the divergence naming the call and the closest recorded ones.
        For a caller that answers the call itself (nothing is rebuilt or run)."""
        invocation = ToolInvocation(name, None, arguments, payload.encode(arguments))
        key = tool_arguments_key(arguments)
        step, problem = self._match(invocation, key)
        if step is None:
            return self._diverge(problem, invocation, key)
        self.used.add(step.index)
        return step

    def _expected_for(self, name: str) -> Step | None:
        queue = self.by_name.get(name)
        while queue and queue[0].index in self.used:
            queue.popleft()
        if queue:
            return queue[0]
        return next((s for s in self.steps if s.index not in self.used), None)

    def _diverge(self, problem: str, inv: ToolInvocation, args_key: str) -> ReplayDivergence:
        expected = self._expected_for(inv.name)
        unused = [s for s in self.steps if s.index not in self.used]
        scored = sorted(
            (Candidate(s, tuple(tool_reasons(s, inv.name, inv.call_id, args_key))) for s in unused),
            key=lambda c: (len(c.reasons), c.step.index),
        )[:3]
        asked = None if problem else self._asked_without_result(inv, args_key)
        what = problem or (
            f"tool call {inv.name}({_short(payload.plain(inv.arguments))}) was not recorded"
            + (
                f": {asked.label()} asked for it, and what it returned is not in the trace "
                "(no tool span records it, and no model request recorded after that step "
                "holds its result)"
                if asked is not None
                else " (recorded tool calls are all used up)"
                if not unused
                else ""
            )
        )
        err = ReplayDivergence(
            what,
            expected,
            expected=_tool_view(expected) if expected is not None else None,
            actual={
                "tool_name": inv.name,
                "call_id": inv.call_id,
                "arguments": payload.plain(inv.arguments),
            },
            candidates=scored,
            kind="tool",
            name=inv.name,
        )
        self.observer.diverged(err)
        return err

    def _asked_without_result(self, inv: ToolInvocation, args_key: str) -> Step | None:
        """The model step whose answer made a call of ``inv``'s tool with its arguments that
        no tool step answers (its result is in no record: a request cut from the trace
        would have carried it), or None."""
        answered = {s.tool.call_id for s in self.steps if s.tool is not None and s.tool.call_id}
        for step in self.run.model_steps():
            for message in (step.model.output_messages if step.model else None) or []:
                for part in message.get("parts") or []:
                    if (
                        isinstance(part, dict)
                        and part.get("type") == "tool_call"
                        and part.get("name") == inv.name
                        and not (part.get("id") and part.get("id") in answered)
                        and tool_arguments_key(part.get("arguments")) == args_key
                    ):
                        return step
        return None

    def unreplayed(self) -> list[Step]:
        # A call the stack answered itself (the tool never ran) is answered so again.
        return [
            s for s in self.steps if s.index not in self.used and not (s.tool and s.tool.not_run)
        ]


def _declared_return(fn: Callable[..., Any]) -> str:
    """:func:`_read_return`, once per tool function (a bound method of an unhashable
    object is read each time)."""
    try:
        return _cached_return(fn)
    except TypeError:
        return _read_return(fn)


def _read_return(fn: Callable[..., Any]) -> str:
    """``text``, ``object`` or ``""``: what ``fn`` declares it returns (as far as it matters)."""
    try:
        declared: Any = typing.get_type_hints(fn).get("return")
    except Exception:  # unresolvable names: read the annotation's text
        try:
            declared = inspect.signature(fn).return_annotation
        except (TypeError, ValueError):
            return ""
    if declared is str or declared == "str":
        return "text"
    origin = typing.get_origin(declared) or declared
    if origin in (dict, list) or (isinstance(origin, type) and issubclass(origin, Mapping)):
        return "object"
    if isinstance(declared, str) and declared.split("[", 1)[0] in ("dict", "list", "Mapping"):
        return "object"
    return ""


_cached_return = functools.lru_cache(maxsize=256)(_read_return)


def _as_declared(fn: Callable[..., Any], p: payload_attributes.Payload, value: Any) -> Any:
    """A third-party result as what the tool declares it returns.

    A trace without otel-replay's capture cannot say whether a tool returned
    JSON text or the object it spells (instrumentations record objects as
    JSON text, and a result taken from the model's messages is text): a tool
    that returns ``str`` gets the text, one that returns a ``dict`` or a
    ``list`` the object.  Exact payloads are what they are.
    """
    if p.status == "exact" or p.data is None:
        return value
    declared = _declared_return(fn)
    if declared == "text" and isinstance(value, (dict, list)) and p.type == payload.JSON:
        return p.data.decode("utf-8", "surrogatepass")
    if declared == "object" and isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, (dict, list)) else value
    return value


#: A text :func:`json.loads` refused.
_NOT_JSON: Any = object()


def _short_text(text: str, limit: int = 120) -> str:
    shown = json.dumps(text, ensure_ascii=False)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _tool_view(step: Step) -> dict[str, Any]:
    t = step.tool
    assert t is not None
    return {"tool_name": t.tool_name, "call_id": t.call_id, "arguments": t.arguments}


def _short(value: Any, limit: int = 120) -> str:
    text = payload.canonical(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rebuild_exception(error: ToolError, types: TypeResolver | None = None) -> Exception:
    """The recorded exception: same type when ``types`` allows it, same arguments or message.

    The type is looked up, never imported (:meth:`TypeResolver.exception`); one
    that is not there is replaced by a stand-in class of the same name, and so
    is one that is not an ``Exception`` (a :class:`RecordedBaseException`):
    always an ``Exception``, whatever the recording says.
    """
    types = types if types is not None else TypeResolver()
    cls = types.exception(error.type)
    args: tuple[Any, ...] = (error.message,)
    if error.args_payload is not None and error.args_payload.usable:
        try:
            value = error.args_payload.value(types)
            args = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        except payload.PayloadError:
            pass
    try:
        return _exception(cls, args)
    except Exception:
        # A class that takes neither these arguments nor none (ExceptionGroup wants
        # two, UnicodeDecodeError five): an exception of its name still says it.
        return stand_in(error.type)(*args)


def _exception(cls: type[Exception], args: tuple[Any, ...]) -> Exception:
    """``cls(*args)``, or one made without calling ``__init__`` when that refuses them."""
    try:
        exc = cls(*args)
    except Exception:
        exc = cls.__new__(cls)
        exc.args = args
        str(exc)  # half made: one whose message needs what __init__ sets is no use
    if not isinstance(exc, Exception):  # a __new__ that returned something else
        raise TypeError(f"{cls.__name__}() made a {type(exc).__name__}")
    return exc
