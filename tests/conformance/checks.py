"""Does a case's trace rebuild each agent run exactly as the model server saw it?

:func:`check` loads a case's trace files with :func:`otel_replay.load` and
compares every run with the ground truth the fake model server logged
(``server.jsonl``), through ``tests/fixtures/ground_truth.py``:

- one run per agent run in the process (requests are grouped by the order
  their conversation is about; each run asks about its own order);
- one model step per request, whose input (system prompt included) is what
  the server received and whose output is what it answered;
- the model calls the agent retried: the requests the server failed on purpose
  (HTTP 429, 500, 503) are attempts, not model calls of the run; a failed attempt
  the trace holds (a model span ended in error) is no model step, and names the
  model step that answered its request;
- one tool step per call the model made, with its arguments and the result
  the model was sent, or, for the tool that raised, the error (from a tool
  span; a step derived from messages can only show the error text);
- the verdict: ``full`` when content was captured and the stack traces its
  tools (``model-only`` when it does not: tool steps are then derived);
  with content off, not ``full``, and ``missing`` names the content of
  every step;
- the run's final output is the answer the agent printed (edge whitespace aside);
  a run that ended at an answer the server cut partway through (``raised`` in
  ``case.json``: the client raised it, and the agent with it) holds that
  request as its last model step, failed, and the run raised (or, where the
  trace holds no span around the model call, that failed call is the run's end).

Every difference becomes one line of :attr:`Outcome.problems`, so that a
case's gaps (split runs, lost or invented steps, wrong messages) are all
seen at once.  ``test_conformance.py`` asserts there are none;
``table.py`` tabulates them.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import warnings
from pathlib import Path
from typing import Any

import otel_replay
from otel_replay.runs.failed_calls import failed_end, fails_again
from otel_replay.runs.model import ModelCall, Run, Step
from otel_replay.runs.verdict import outcome
from tests.conformance import scenario
from tests.conformance.receiver import TRACE_FILES
from tests.fixtures.ground_truth import (
    Item,
    answered,
    recorded,
    sent,
    streamed_before_cut,
    tool_calls_with_ids,
    value,
)

CASES = Path(__file__).resolve().parent / "cases"
#: Longest rendering of one value in a problem line.
SHOWN = 120


def _stamped(path: Path) -> tuple[Path, int, int]:
    """The file with its modification time and size: a case recorded again in the same
    process (``generate``) is read again."""
    stat = path.stat()
    return path, stat.st_mtime_ns, stat.st_size


# A case's files are read by every test and collection hook that looks at it (thousands of
# times a session): each is parsed once per process while unchanged.
@functools.cache
def _read_json(path: Path, mtime_ns: int, size: int) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return found


@functools.lru_cache(maxsize=64)
def _read_posts(path: Path, mtime_ns: int, size: int) -> tuple[dict[str, Any], ...]:
    # Split on "\n" alone: a record may hold a U+2028 as it is, where splitlines splits.
    lines = path.read_text(encoding="utf-8").split("\n")
    records = [json.loads(line) for line in lines if line]
    return tuple(
        {**r, "body_json": json.loads(r["body_raw"])}
        for r in records
        if r["method"] == "POST" and "conversation" in r
    )


@dataclasses.dataclass(frozen=True)
class Case:
    """A recorded case: ``cases/<stack>/<mode>/`` (``<mode>@<scenario>/`` for a scenario
    other than the default)."""

    path: Path

    @property
    def id(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"

    @property
    def scenario(self) -> scenario.Scenario:
        """The scenario the case ran (``case.json``'s ``scenario``; the default when none), as
        its stack played it (its framework running a raising tool again, or not)."""
        meta = self.meta
        played = scenario.TOOL_RETRY_ENV in meta.get("env", {})
        return scenario.scenario_named(str(meta.get("scenario", "default"))).for_stack(played)

    @property
    def meta(self) -> dict[str, Any]:
        """``case.json``: stack, mode, api, runs, content, tool_spans, command, env.

        Read once per process while the file is unchanged: shared, never to be changed."""
        return _read_json(*_stamped(self.path / "case.json"))

    def trace_files(self) -> list[Path]:
        return [self.path / n for n in TRACE_FILES if (self.path / n).exists()]

    def requests(self) -> list[dict[str, Any]]:
        """The model requests the server answered, in order, each with its body parsed.

        Not the attempts it failed on purpose (:meth:`failed_attempts`): the client
        retried each, and the retry is the model call of the run."""
        return [r for r in self._posts() if not r.get("failed")]

    def failed_attempts(self) -> list[dict[str, Any]]:
        """The requests the server answered with a scripted failure (HTTP 429, 500, 503)."""
        return [r for r in self._posts() if r.get("failed")]

    def posts(self) -> list[dict[str, Any]]:
        """Every model request the server received, in order, failed ones too."""
        return self._posts()

    def _posts(self) -> list[dict[str, Any]]:
        # A new list of the records read once per process (shared, never to be changed).
        return list(_read_posts(*_stamped(self.path / "server.jsonl")))

    def replayed(self) -> dict[str, Any]:
        """``replay.json``: how the stack's own agent replayed it (see ``replay_agents.py``).

        ``{"serve": {"ok": ..., "detail": ...}, "inprocess": {...}}``; empty when
        it was not replayed (a case without content is not).
        """
        path = self.path / "replay.json"
        if not path.exists():
            return {}
        found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return found

    def conversations(self) -> dict[str, list[dict[str, Any]]]:
        """Requests per agent run (keyed by the order it is about), runs in order of start
        (a run that raised at its first request, which was cut, has none answered)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for r in self._posts():
            if not r.get("failed") or r["conversation"] in self.raised or self.ending:
                out.setdefault(r["conversation"], [])
            if not r.get("failed"):
                out[r["conversation"]].append(r)
        return out

    @property
    def raised(self) -> list[str]:
        """The orders of the runs that ended in an error: the server cut an answer partway
        through and the client raised it (``generate`` wrote them in ``case.json``)."""
        return list(self.meta.get("raised", []))

    @property
    def ending(self) -> dict[str, Any] | None:
        """How the framework ended the runs its own way (``case.json``'s ``ending``: its
        kinds and why), or None: as the scenario scripts them."""
        found: dict[str, Any] | None = self.meta.get("ending")
        return found

    def output(self) -> str:
        """What the agent printed (``answer.txt``)."""
        return (self.path / "answer.txt").read_text(encoding="utf-8")

    @property
    def kept_cut(self) -> bool:
        """Whether the framework kept what streamed of the answer cut at the end of a run as
        the run's answer, instead of raising (its ending says it may; no run printed an
        error): that request is the run's last model call, failed, not what ended it."""
        raised = any(line.startswith(scenario.RAISED_LINE) for line in self.output().splitlines())
        return self.ending is not None and bool(self.raised) and not raised

    def answer_of(self, order: str) -> str:
        """The answer the run about ``order`` gave: the scripted final answer; under the
        framework's own ending, what the agent printed (one run: its whole output, which
        may be of several lines; of several runs, the scripted answer if printed)."""
        scripted = self.scenario.final_answer(order)
        if self.ending is None:
            return scripted
        out = self.output().strip()
        lines = out.splitlines()
        return out if int(self.meta["runs"]) == 1 or scripted not in lines else scripted

    def recovered(self, order: str) -> list[dict[str, Any]]:
        """The requests about ``order`` whose answer was cut partway through and that the
        agent went on from without sending them again (CrewAI runs its task again from its
        first request): model calls that failed, not attempts of the request after them."""
        posts = [r for r in self._posts() if r["conversation"] == order]
        return [
            r
            for r, after in itertools.pairwise(posts)
            if r.get("cut") in ("stream", "body") and after["body_raw"] != r["body_raw"]
        ]

    def tool_runs(self) -> int:
        """How many times the agent ran its tools: once per call the model made, and once
        more per failed attempt the framework ran again (:class:`scenario.ToolRetry`)."""
        scn = self.scenario
        runs = 0
        for order, requests in self.conversations().items():
            calls = tool_calls_with_ids(
                requests, lambda name: scenario.tool_of(name) == scn.raising, self.cut(order)
            )
            attempts: dict[tuple[str, str], int] = {}
            for _, name, args, _ in calls:
                key = (
                    scenario.tool_of(name),
                    str(args.get("order_id")) if isinstance(args, dict) else "",
                )
                nth = attempts[key] = attempts.get(key, -1) + 1
                runs += scn.attempts(key[0], nth)[0] + 1
        return runs

    def cut(self, order: str) -> dict[str, Any] | None:
        """The request whose cut answer ended the run about ``order`` (None: it did not); under
        the framework's own ending, the failed request it did not retry, if its last."""
        posts = [r for r in self._posts() if r["conversation"] == order]
        ended = self.ending is not None and bool(posts) and bool(posts[-1].get("failed"))
        return posts[-1] if order in self.raised or ended else None


def find_cases(root: Path = CASES) -> list[Case]:
    """Every case under ``root``, sorted by id."""
    return sorted((Case(p.parent) for p in root.glob("*/*/case.json")), key=lambda c: c.id)


@dataclasses.dataclass
class Outcome:
    """What :func:`check` found for one case."""

    case: Case
    runs: list[Run]
    problems: list[str]

    @property
    def exact(self) -> bool:
        return not self.problems

    @property
    def verdicts(self) -> list[str]:
        return [run.kit.verdict for run in self.runs]


@functools.cache
def check(case: Case) -> Outcome:
    """Load ``case`` and compare every run with the ground truth; see the module doc.

    Cached per case: the test and the tables ask for the same outcomes (cases are
    files that do not change while a process reads them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", otel_replay.LoadWarning)
        loaded = otel_replay.load(*case.trace_files())
    runs = sorted(loaded, key=lambda r: r.start_ns)
    problems = [f"unreadable: {p}" for p in loaded.problems]
    conversations = case.conversations()
    content = bool(case.meta["content"])
    if len(runs) != len(conversations):
        steps = ", ".join(str(len(r.model_steps())) for r in runs)
        kind = "split runs" if len(runs) > len(conversations) else "merged runs"
        problems.append(
            f"{kind}: {len(runs)} runs for {len(conversations)} agent runs "
            f"(model steps per run: {steps or 'none'})"
        )
    for order, requests, its_runs in _group(runs, conversations, content):
        where = f"run about {order}: " if len(conversations) > 1 else ""
        if len(its_runs) == 1:
            run, whole = its_runs[0], True
        else:  # split: what the runs hold together, as if they were one
            run, whole = _merged(its_runs), False
            where += f"the {len(its_runs)} runs taken together: "
        found = _RunCheck(case, run, order, requests, whole).problems()
        problems += [where + p for p in found]
    return Outcome(case, runs, problems)


Conversation = tuple[str, list[dict[str, Any]], list[Run]]


def _group(
    runs: list[Run], conversations: dict[str, list[dict[str, Any]]], content: bool
) -> list[Conversation]:
    """Each conversation with the runs about it: by the order a run names, else by start order.

    Runs that cannot be told apart (no content, and not one per conversation) are not compared.
    """
    if content:
        texts = [
            json.dumps([s.to_json() for s in r.model_steps()], ensure_ascii=False) for r in runs
        ]
        groups = [
            (order, requests, [r for r, t in zip(runs, texts, strict=True) if order in t])
            for order, requests in conversations.items()
        ]
        if all(g[2] for g in groups):
            return groups
    if len(runs) != len(conversations):
        return []
    return [(o, reqs, [r]) for (o, reqs), r in zip(conversations.items(), runs, strict=True)]


def _merged(runs: list[Run]) -> Run:
    """One run holding the steps of ``runs`` in start order (indexes renumbered)."""
    steps = sorted((s for r in runs for s in r.steps), key=lambda s: s.start_ns)
    copies = [dataclasses.replace(s, index=i) for i, s in enumerate(steps)]
    trace_ids = [t for r in runs for t in r.trace_ids]
    return Run(run_id="+".join(r.run_id for r in runs), trace_ids=trace_ids, roots=[], steps=copies)


def _returned(scn: scenario.Scenario, name: str, args: Any, attempt: int = 0) -> Any:
    """What the agent's tool ``name`` returned for ``args`` at its ``attempt``-th call in the
    run (its error text, if it raised).

    The ground truth of a tool result when the agent sends results to the model
    as text of its own making (smolagents' "Observation: ..."), not one per call.
    """
    tool = scenario.tool_of(name)
    if tool == "final_answer" and isinstance(args, dict):
        return args.get("answer")
    if tool not in scn.tools or not isinstance(args, dict):
        return None
    order = str(args.get("order_id", scenario.DEFAULT_ORDER))
    raised = scn.attempts(tool, attempt)[1]
    return scn.error_of(order) if raised else scn.result(tool, order)


def _other_kind(recorded: str | None, raised: str) -> bool:
    """Whether a recorded error type names the other of :data:`scenario.RAISES` than the one
    the tool raised (``TimeoutError`` for a ``RuntimeError``, or back)."""
    name = (recorded or "").rpartition(".")[2]
    return name in scenario.RAISES and name != raised


def _mentions(result: Any, text: str) -> bool:
    """Whether a tool result (text, or JSON holding the text as a string) holds ``text``."""
    if isinstance(result, str) and text in result:
        return True
    encoded = json.dumps(result, ensure_ascii=False)
    return text in encoded or json.dumps(text, ensure_ascii=False)[1:-1] in encoded


def short(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False, default=str)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def joined(items: list[Item]) -> list[Item]:
    """``items`` with each run of texts of one role as one text.

    A message the API sent in parts (Responses ``output_text`` parts, Anthropic text
    blocks, a stream's deltas) is the text they spell; a stack may record it so (the
    OpenAI SDK's ``output_text``, LiteLLM, Haystack).  Where the client sends the parts back
    as it got them, the replays check that they are served as they came.
    """
    out: list[Item] = []
    for role, item in items:
        if out and item[0] == "text" and out[-1][0] == role and out[-1][1][0] == "text":
            out[-1] = (role, ("text", out[-1][1][1] + item[1]))
        else:
            out.append((role, item))
    return out


def first_difference(got: list[Item], want: list[Item]) -> str | None:
    """Where two message sequences part, in one line; None when equal (their texts exact,
    whether in parts or joined: :func:`joined`)."""
    if got == want or joined(got) == joined(want):
        return None
    got, want = joined(got), joined(want)
    at = next(
        (i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w),
        min(len(got), len(want)),
    )
    g = short(got[at]) if at < len(got) else "nothing"
    w = short(want[at]) if at < len(want) else "nothing"
    counts = f" ({len(got)} items recorded, {len(want)} sent)" if len(got) != len(want) else ""
    return f"item {at} is {g}, the server's is {w}{counts}"


def _input_difference(m: ModelCall, request: dict[str, Any]) -> str | None:
    """How a model step's input (system prompt included) differs from what ``request`` sent;
    None when it does not."""
    return first_difference(recorded(m.input_messages, m.system_instructions), sent(request))


class _RunCheck:
    """The comparisons of one run with its conversation."""

    def __init__(
        self, case: Case, run: Run, order: str, requests: list[dict[str, Any]], whole: bool
    ) -> None:
        self.case, self.run, self.order, self.requests = case, run, order, requests
        self.scn = case.scenario
        #: False for several runs taken together: they have no verdict as one.
        self.whole = whole
        self.content = bool(case.meta["content"])
        self.tool_spans = bool(case.meta.get("tool_spans", True))
        #: "text": the agent sends its tools' results as text, not as tool messages.
        self.history = str(case.meta.get("history", "messages"))
        self.models = [s for s in run.model_steps() if not s.duplicate_of]
        #: The request whose answer was cut and raised, ending the run (None: it did not).
        self.cut = case.cut(order)
        #: The model step of that request: failed, no output.
        self.cut_step: Step | None = None
        #: The requests whose answer was cut partway through, which the agent went on from.
        self.recovered = case.recovered(order)
        self.out: list[str] = []

    def problems(self) -> list[str]:
        kept = self.cut is not None and self.case.kept_cut
        if self.cut is not None:
            self._kept_step() if kept else self._cut_step()
        self._recovered_steps()
        self._model_steps()
        self._failed_attempts()
        self._tool_steps()
        if self.whole:
            self._verdict()
        # A run that raised an error of the framework's own (its ending) raised too.
        own = self.case.ending is not None and self.case.answer_of(self.order).startswith(
            scenario.RAISED_LINE
        )
        if (self.cut is not None and not kept) or own:
            self._raised()
        elif self.content:
            final = self.run.final_output()
            # Edge whitespace is the framework's presentation (Strands ends its answer
            # with a newline), not the answer.
            if (final or "").strip() != self.case.answer_of(self.order):
                self.out.append(f"final output is {short(final)}, not the agent's answer")
        return self.out

    # --- a run that raised ----------------------------------------------------------
    def _cut_step(self) -> None:
        """The run's last model step is the request whose answer was cut: read as the call
        that failed and ended the run (``failed_end``: what a replay fails again), its
        input what was sent; it is taken out of the steps that answered."""
        assert self.cut is not None
        last = self.models[-1] if self.models else None
        if last is None or not failed_end(self.run, last):
            got = last.label() if last else "none"
            self.out.append(
                f"the answer cut at turn {self.cut['turn']} is no failed model step "
                f"(the last model step: {got})"
            )
            return
        self.cut_step = last
        self.models = self.models[:-1]
        if self.content and last.model is not None:
            diff = _input_difference(last.model, self.cut)
            if diff:
                self.out.append(f"{last.label()} input (the cut answer's request): {diff}")

    def _kept_step(self) -> None:
        """The framework kept what streamed of the cut answer as the run's answer (its
        ending): the run's last model step is that request, failed, its input what was
        sent, its output the text the server streamed before the cut (all of it, or all
        but the event the cut ended in); it is taken out of the steps that answered."""
        assert self.cut is not None
        last = self.models[-1] if self.models else None
        if last is None or last.status != "ERROR" or last.model is None:
            got = last.label() if last else "none"
            self.out.append(
                f"the answer cut at turn {self.cut['turn']}, which the framework answered "
                f"from, is no failed model step (the last model step: {got})"
            )
            return
        self.models = self.models[:-1]
        if not self.content:
            return
        diff = _input_difference(last.model, self.cut)
        if diff:
            self.out.append(f"{last.label()} input (the cut answer's request): {diff}")
        got = "".join(
            text for _, (kind, text, *_) in recorded(last.model.output_messages) if kind == "text"
        )
        streamed = streamed_before_cut(self.cut)
        if not got or not streamed.startswith(got):
            self.out.append(
                f"{last.label()} output is {short(got)}, not what streamed before the cut "
                f"({short(streamed)})"
            )

    def _recovered_steps(self) -> None:
        """Each answer cut partway through that the agent went on from is a model step that
        a replay fails again (``fails_again``), its input what was sent; they are taken out
        of the steps that answered."""
        failing = [
            s for s in self.models if fails_again(self.run, s) and not failed_end(self.run, s)
        ]
        if len(failing) != len(self.recovered):
            self.out.append(
                f"{len(failing)} model steps a replay fails again for {len(self.recovered)} "
                "answers cut partway through that the agent went on from"
            )
        self.models = [s for s in self.models if all(s is not f for f in failing)]
        if not self.content:
            return
        for step, request in zip(failing, self.recovered, strict=False):
            m = step.model
            assert m is not None
            diff = _input_difference(m, request)
            if diff:
                self.out.append(f"{step.label()} input (a cut answer's request): {diff}")

    def _raised(self) -> None:
        """The run ended in an error: its root raised, or a span around the failed model
        call did (the OpenAI Agents SDK fails the agent's span and not the workflow's), or,
        where the trace holds none around it (a client instrumentation), that call ended it."""
        if outcome(self.run).raised:
            return
        by_id = {s.span_id: s for s in self.run.steps}
        at = by_id.get(self.cut_step.parent_span_id or "") if self.cut_step else None
        if self.cut_step is not None and at is None:
            return
        while at is not None:
            if at.status == "ERROR":
                return
            at = by_id.get(at.parent_span_id or "")
        self.out.append("the run raised, but the rebuilt run did not")

    # --- model steps ---------------------------------------------------------------
    def _model_steps(self) -> None:
        steps, requests = self.models, self.requests
        if len(steps) != len(requests):
            self.out.append(f"{len(steps)} model steps for {len(requests)} model requests")
            answering = [s for s in steps if s.model is not None and s.model.output_messages]
            if len(answering) != len(requests):
                self._lost_and_invented()
                return
            # The extra steps answer nothing: compare the others one to one.
            extra = [s.label() for s in steps if all(s is not a for a in answering)]
            self.out.append(f"invented: {', '.join(extra)} (no output; no request of their own)")
            steps = answering
        if not self.content:
            return
        for step, request in zip(steps, requests, strict=True):
            m = step.model
            assert m is not None
            diff = _input_difference(m, request)
            if diff:
                self.out.append(f"{step.label()} input: {diff}")
            diff = first_difference(recorded(m.output_messages), answered(request))
            if diff:
                self.out.append(f"{step.label()} output: {diff}")

    def _failed_attempts(self) -> None:
        """A failed attempt the trace holds (a model span ended in error, retried) names the
        model step that answered its request, at a turn the server failed a request of."""
        failed = [
            r
            for r in self.case.failed_attempts()
            if r["conversation"] == self.order
            and r is not self.cut
            and r != self.cut
            and r not in self.recovered
        ]
        attempts = [s for s in self.run.steps if s.retried_as and s.tool is None]
        if len(attempts) > len(failed):
            names = ", ".join(s.label() for s in attempts)
            self.out.append(
                f"{len(attempts)} failed attempts ({names}) for {len(failed)} the server failed"
            )
        answered = {s.span_id: n for n, s in enumerate(self.models)}
        turns = {r["turn"] for r in failed}
        for step in attempts:
            at = answered.get(step.retried_as or "")
            if at is None:
                self.out.append(f"{step.label()}: a failed attempt of no model step")
            elif at < len(self.requests) and self.requests[at]["turn"] not in turns:
                self.out.append(
                    f"{step.label()}: a failed attempt of model step {at}, whose request "
                    "the server did not fail first"
                )

    def _lost_and_invented(self) -> None:
        """Model steps that do not pair with requests: which requests are lost, which invented."""
        steps, requests = list(self.models), self.requests
        lost = []
        for n, request in enumerate(requests):
            same = next((s for s in steps if self._same_call(s, request)), None)
            if same is None:
                lost.append(f"#{n} (turn {request['turn']})")
            else:
                steps.remove(same)
        if lost and self.content:
            self.out.append(f"lost: no model step records request {', '.join(lost)}")
        if steps and self.content:
            names = ", ".join(s.label() for s in steps)
            self.out.append(f"invented or wrong: {names} records no request as sent")

    @staticmethod
    def _same_call(step: Step, request: dict[str, Any]) -> bool:
        m = step.model
        assert m is not None
        return (
            _input_difference(m, request) is None
            and first_difference(recorded(m.output_messages), answered(request)) is None
        )

    # --- tool steps ----------------------------------------------------------------
    def _tool_steps(self) -> None:
        def raising(name: str) -> bool:
            return scenario.tool_of(name) == self.scn.raising

        # Each cut answer the agent went on from ends a part of the run: its request carries
        # the results of the calls before it.
        calls, done = [], 0
        for cut in self.recovered:
            before = [r for r in self.requests[done:] if r["seq"] < cut["seq"]]
            calls += tool_calls_with_ids(before, raising, cut)
            done += len(before)
        calls += tool_calls_with_ids(self.requests[done:], raising, self.cut)
        # A run the framework ended its own way after the last answer (it raised on it, or
        # took its text as the output): that answer's calls were sent no result, and the
        # log cannot say whether they ran; a tool step of one holds what the tool returned.
        unsent = 0
        if self.case.ending is not None and self.cut is None and self.requests:
            last = answered(self.requests[-1])
            unsent = sum(1 for _, item in last if item[0] == "call")
        steps = list(self.run.tool_steps())
        if not len(calls) - unsent <= len(steps) <= len(calls):
            names = ", ".join(s.tool.tool_name for s in steps if s.tool) or "none"
            self.out.append(f"{len(steps)} tool steps ({names}) for {len(calls)} tool calls")
        seen: dict[str, int] = {}
        attempts: dict[tuple[str, str], int] = {}
        for n, (call_id, name, args, result) in enumerate(calls):
            # The how-many-th call with this id: ids may repeat across a run's model steps.
            nth = seen[call_id] = seen.get(call_id, -1) + 1
            # A tool the scenario retries raises at its first attempt only: attempts are
            # counted per tool and order, as the agent's tools count them (a call again with
            # other arguments is another order's first).
            order = str(args.get("order_id")) if isinstance(args, dict) else ""
            attempt = attempts[name, order] = attempts.get((name, order), -1) + 1
            # What the model was sent is read off the wire once (``value``: a JSON text as
            # the value it spells, content parts as their text); applying ``value`` again
            # would take a JSON text of text blocks for their joined text.
            wants = [result]
            never_sent = result is None and n >= len(calls) - unsent
            if result is None and (self.history == "text" or never_sent):
                # What the tool returned (a Python value), which the trace may hold as it
                # is or as text that spells it.
                result = _returned(self.scn, name, args, attempt)
                wants = [result, value(result)]
            step = self._step_of(steps, call_id, name, args)
            if step is None and never_sent:
                continue  # the framework stopped before running it
            if step is None:
                self.out.append(f"lost: no tool step for {name} (call {call_id})")
                continue
            steps.remove(step)
            retried, raised = self.scn.attempts(scenario.tool_of(name), attempt)
            self._tool_step(step, call_id, name, args, result, wants, raised)
            self._retried_attempts(step, retried)
            self._placement(step, call_id, nth)
        for step in steps:
            self.out.append(f"invented: {step.label()} answers no call the model made")

    def _retried_attempts(self, step: Step, retried: int) -> None:
        """A call the framework ran again after it raised keeps its failed attempts before
        its step, in order, each with the tool's error (the step is the last attempt)."""
        kept = [s for s in self.run.steps if s.retried_as == step.span_id and s.tool]
        if len(kept) != retried:
            self.out.append(
                f"{step.label()}: {len(kept)} failed attempts kept, the tool failed {retried} "
                "times before the attempt the model was sent"
            )
            return
        error = self.scn.error_of(self.order)
        for attempt in kept:
            t = attempt.tool
            assert t is not None
            if attempt.start_ns > step.start_ns or t.error is None:
                self.out.append(f"{attempt.label()}: not a failed attempt before {step.label()}")
            elif self.content and error not in t.error.message:
                self.out.append(f"{attempt.label()}: error message {short(t.error.message)}")

    @staticmethod
    def _step_of(steps: list[Step], call_id: str, name: str, args: Any) -> Step | None:
        # The first step left with the call's id (ids may repeat in a run: in order), of
        # the call's tool first (parallel calls may share an id, the empty one).
        for s in steps:
            if s.tool is not None and s.tool.call_id == call_id and s.tool.tool_name == name:
                return s
        for s in steps:
            if s.tool is not None and s.tool.call_id == call_id:
                return s
        # A step that recorded no call id (or the empty one): by name, its arguments the
        # call's first (the same tool may be called twice in a turn).
        named = [
            s
            for s in steps
            if s.tool is not None and not s.tool.call_id and s.tool.tool_name == name
        ]
        same = [s for s in named if s.tool is not None and value(s.tool.arguments) == args]
        return (same or named or [None])[0]

    def _tool_step(
        self,
        step: Step,
        call_id: str,
        name: str,
        args: Any,
        result: Any,
        wants: list[Any],
        raised: bool,
    ) -> None:
        t = step.tool
        assert t is not None
        label = step.label()
        if (t.call_id or None) != call_id:  # (an empty id is none: see ground_truth)
            self.out.append(f"{label}: call id {t.call_id!r}, the model's is {call_id!r}")
        if t.tool_name != name:
            self.out.append(f"{label}: tool name {t.tool_name!r}, the model called {name!r}")
        if t.not_run:
            # The stack answered the call itself (the tool never ran): what the model was
            # sent is checked on the model step that received it.
            return
        error = self.scn.error_of(self.order)
        if raised and not t.derived:
            if t.error is None:
                self.out.append(
                    f"{label}: the tool raised; no error recorded (result {short(t.result)})"
                )
            elif self.content and _mentions(result, error) and error not in t.error.message:
                # (A framework that tells the model no error text, openai-agents' default
                # failure message, leaves none to find.)
                self.out.append(f"{label}: error message {short(t.error.message)}")
            if t.error is not None and _other_kind(t.error.type, self.scn.raises):
                # (A framework may record its own wrapper's type: only the other kind of the
                # scenario's is wrong, a timeout recorded as an error of its own or back.)
                self.out.append(
                    f"{label}: error type {t.error.type}, the tool raised {self.scn.raises}"
                )
            if self.content and value(t.arguments) != args:
                self.out.append(
                    f"{label}: arguments {short(t.arguments)}, the model's are {short(args)}"
                )
            return
        if not self.content:
            return
        if value(t.arguments) != args:
            self.out.append(
                f"{label}: arguments {short(t.arguments)}, the model's are {short(args)}"
            )
        # (A result recorded as the very value the wire's text spells is that value, even a
        # list of text blocks, which ``value`` would otherwise take for content parts.)
        if value(t.result) not in wants and t.result not in wants:
            self.out.append(
                f"{label}: result {short(t.result)}, the model was sent {short(result)}"
            )

    def _placement(self, step: Step, call_id: str | None, nth: int) -> None:
        """A tool step sits after the model step that asked for it and before the next one.

        The ``nth`` call with ``call_id`` (in the model's order) was asked for by the model
        step that holds the ``nth`` call with that id: an id may come back in later steps."""
        if call_id is None:
            return  # a ReAct action: no id to find its model step by
        asked = [
            m
            for m in self.models
            if m.model is not None
            for msg in m.model.output_messages or []
            for p in msg["parts"]
            if p.get("type") == "tool_call" and p.get("id") == call_id
        ][nth:]
        if not asked:
            return  # reported with the model steps
        after = [m for m in self.models if m.index > asked[0].index]
        if step.index < asked[0].index or (after and step.index > after[0].index):
            self.out.append(f"{step.label()}: out of place (asked for at step {asked[0].index})")

    # --- verdict -------------------------------------------------------------------
    def _verdict(self) -> None:
        kit = self.run.kit
        if self.content:
            # Tool steps taken from the messages make a run model-only; a run that ended
            # before any tool call (an answer cut at the first turn) has none.
            derived = not self.tool_spans and any(s.kind == "tool" for s in self.run.steps)
            want = "model-only" if derived else "full"
            if kit.verdict != want:
                # Every problem: the first may be one named, not counted against the run
                # (Semantic Kernel's text beside calls), before the verdict's cause.
                why = (
                    "; ".join(kit.problems) if kit.problems else f"missing {', '.join(kit.missing)}"
                )
                self.out.append(f"verdict {kit.verdict}, not {want}: {why}")
            return
        if kit.verdict == "full":
            self.out.append("verdict full with content capture off")
        unnamed = [s.index for s in self.run.steps if not self._content_named(s, kit.missing)]
        if unnamed:
            named = [m for m in kit.missing if m.startswith("steps[")]
            self.out.append(
                f"missing does not name the content of steps {unnamed} (it names {named})"
            )

    @staticmethod
    def _content_named(step: Step, missing: list[str]) -> bool:
        fields = {
            "model": ("input_messages", "output_messages"),
            "tool": ("arguments", "result"),
        }.get(step.kind)
        if fields is None:
            return True
        return any(f"steps[{step.index}].{f}" in missing for f in fields)
