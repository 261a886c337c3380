"""The repairs run on steps as runs are built: one ordered list per stage, each with why.

Building runs (:mod:`.build`) goes: spans -> a tree per trace -> GenAI
content sent as events joined to its model steps (:mod:`.log_events`) ->
:data:`TRACE_REPAIRS` on each trace's own steps -> traces that record one call
twice merged (:func:`.double_spans.merge_twin_traces`) and client-only traces
stitched into conversations (:mod:`.stitch`) -> :data:`RUN_REPAIRS` on each
run's steps.

A repair sets steps right in place and returns how many it changed; it never
drops a step (one it demotes stays in the tree as an ``other`` step) and
leaves the span's recorded attributes as they were.  A repair that belongs to
one stack's way of recording reads a mark its dialect put on the span
(:mod:`otel_replay.dialects`), or a function of that dialect's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

from .cached_tools import mark_cached_tools
from .call_ids import repair_call_ids
from .derived_tools import derive_tool_steps
from .double_spans import merge_double_spans
from .given_ids import give_back_call_ids
from .item_references import reference_answers
from .made_ids import forget_unmatched_ids, in_tree, unmake_call_ids
from .model import Step
from .preparations import demote_preparations
from .recovered_turns import recover_turns
from .retries import (
    align_tool_attempts,
    fold_failed_attempts,
    fold_retried_tools,
    fold_tool_attempts,
)
from .sent_errors import wrap_sent_errors
from .text_blocks import whole_text_blocks
from .tool_spans import join_tool_spans


@dataclasses.dataclass
class Steps:
    """What a repair is given: a trace's or a run's roots and steps (tree order)."""

    roots: list[Step]
    steps: Sequence[Step]

    @functools.cached_property
    def models(self) -> list[Step]:
        """The model steps, in call order (start, then tree order), as they were when first
        asked for: no repair that reads them makes a step a model step or no longer one."""
        return sorted(
            (s for s in self.steps if s.kind == "model"), key=lambda s: (s.start_ns, s.index)
        )


@dataclasses.dataclass(frozen=True)
class Repair:
    """One repair: its ``name``, ``why`` it is made, and how (``apply``: how many it changed).

    ``adds_steps``: it puts new steps in the tree, whose order is then made again.
    """

    name: str
    why: str
    apply: Callable[[Steps], int]
    adds_steps: bool = False


def _on_steps(repair: Callable[[Sequence[Step]], int]) -> Callable[[Steps], int]:
    return lambda given: repair(given.steps)


def _on_models(repair: Callable[[Sequence[Step]], int]) -> Callable[[Steps], int]:
    return lambda given: repair(given.models)


#: On each trace's own steps, before traces are merged or stitched, in this order.
TRACE_REPAIRS: tuple[Repair, ...] = (
    Repair(
        "preparations",
        "a framework method traced as a model call that only builds the request is no model step",
        _on_steps(demote_preparations),
    ),
    Repair(
        "retried_tools",
        "a tool a framework retried from inside its first attempt ran once for the model",
        _on_steps(fold_retried_tools),
    ),
    Repair(
        "tool_attempts",
        "a tool a framework ran again at once after it raised is one call: its last attempt",
        _on_steps(fold_tool_attempts),
    ),
    Repair(
        "cached_tools",
        "a call a framework answered from its tool cache did not run the tool",
        _on_steps(mark_cached_tools),
    ),
    Repair(
        "double_spans",
        "one model call traced by two tracers on one client is one model step",
        _on_steps(merge_double_spans),
    ),
    Repair(
        "failed_attempts",
        "a model call a framework retried after failures answered once: the attempt that did",
        _on_steps(fold_failed_attempts),
    ),
    Repair(
        "text_blocks",
        "an answer recorded as its first text block reads whole from what its caller returned",
        _on_steps(whole_text_blocks),
    ),
)

#: On a run stitched from several traces, before :data:`RUN_REPAIRS`: what a trace's own
#: repairs could not see, its parts being in other traces.  A run of one trace had them
#: all made by :data:`TRACE_REPAIRS`.
JOINED_REPAIRS: tuple[Repair, ...] = (
    Repair(
        "failed_attempts_stitched",
        "a model call retried after failures answered once, its attempts in traces of their "
        "own (a task run again from its first request): the attempt that did",
        _on_steps(fold_failed_attempts),
    ),
)

#: On each run's steps once its traces are stitched (a conversation may span several
#: traces), in this order: each reads what the ones before it set right.
RUN_REPAIRS: tuple[Repair, ...] = (
    Repair(
        "recovered_turns",
        "turns an input recorded without their calls or ids are filled from the rest of the run",
        _on_models(recover_turns),
    ),
    Repair(
        "item_references",
        "earlier answers a Responses client sent back as item references read as they were sent",
        _on_models(reference_answers),
    ),
    Repair(
        "call_ids",
        "tool-call ids recorded wrongly take the ids the conversation answers",
        _on_models(repair_call_ids),
    ),
    Repair(
        "unmatched_made_ids",
        "a tool span under an id its framework made that no call of the model's has is "
        "joined by its tool and arguments",
        _on_steps(forget_unmatched_ids),
    ),
    Repair(
        "tool_spans",
        "framework tool spans are joined to the model's calls they answer, by those ids",
        _on_steps(join_tool_spans),
    ),
    Repair(
        "tool_attempts_joined",
        "a tool's failed attempts take the call id and arguments its step was joined by",
        _on_steps(align_tool_attempts),
    ),
    Repair(
        "sent_errors",
        "a failed tool's result recorded as bare text reads as the provider sent it, wrapped",
        _on_steps(wrap_sent_errors),
    ),
    Repair(
        "derived_tools",
        "tool calls no tool span records become tool steps, last: a tool span always wins",
        lambda given: len(derive_tool_steps(given.roots, given.steps)),
        adds_steps=True,
    ),
    Repair(
        "made_ids",
        "a call id the framework made for a call the model sent without one is no id of the "
        "model's: last, once tools are joined by it",
        # (From the roots: the tool steps derived just before are in the tree only.)
        lambda given: unmake_call_ids(in_tree(given.roots)),
    ),
    Repair(
        "given_ids",
        "a call id a client gave the agent in place of the model's (LiteLLM's Responses "
        "route, for a counter's) is the model's where the client's raw answer holds it",
        lambda given: give_back_call_ids(in_tree(given.roots)),
    ),
)


def apply_repairs(repairs: Sequence[Repair], given: Steps) -> bool:
    """Run ``repairs`` in order on ``given``; whether one of them added steps to the tree."""
    added = False
    for repair in repairs:
        changed = repair.apply(given)
        added = added or (repair.adds_steps and changed > 0)
    return added
