"""The replay-kit check: what a run carries, what is missing, whether it replays."""

from __future__ import annotations

from .. import attributes as A
from .model import KitReport, Run

#: Run-level fields of the replay kit, where each lives once recorded.
FINGERPRINT_FIELDS = ("commit", "packages", "flags", "user.id", "tenant.id", "session.id")
MODEL_FIELDS = ("provider", "request_model", "system_instructions", "tool_definitions")
PARAM_FIELDS = ("temperature", "top_p", "seed")


def check_kit(run: Run) -> KitReport:
    missing: list[str] = []
    problems: list[str] = []
    fp = run.fingerprint
    missing.extend(f for f in FINGERPRINT_FIELDS if f not in fp)
    no_content = any(s.attributes.get(A.CONTENT) == "NO_CONTENT" for s in run.steps)
    models = [s for s in run.steps if s.kind == "model" and s.model is not None]
    tools = [s for s in run.steps if s.kind == "tool" and s.tool is not None]
    for field in MODEL_FIELDS:
        if models and all(getattr(s.model, field) in (None, [], "") for s in models):
            missing.append(field)
    for param in PARAM_FIELDS:
        if models and all(param not in s.model.params for s in models if s.model):
            missing.append(param)

    content_models = 0
    for s in models:
        m = s.model
        assert m is not None
        if m.input_messages is None:
            missing.append(f"steps[{s.index}].input_messages")
        if m.output_messages is None:
            missing.append(f"steps[{s.index}].output_messages")
            problems.append(f"{s.label()}: no output messages recorded")
        else:
            content_models += 1
        for name, p in (("input messages", m.input_payload), ("output messages", m.output_payload)):
            if p is not None and p.status in ("mismatch", "missing"):
                problems.append(f"{s.label()}: {name} not byte-exact: {p.reason}")
    tools_ok = True
    for s in tools:
        t = s.tool
        assert t is not None
        if t.error is not None:
            continue
        p = t.result_payload
        if p is None:
            missing.append(f"steps[{s.index}].result")
            problems.append(f"{s.label()}: no result recorded")
            tools_ok = False
        elif p.status in ("mismatch", "missing"):
            problems.append(f"{s.label()}: result not byte-exact: {p.reason}")
            tools_ok = False
        elif p.type == "repr":
            problems.append(f"{s.label()}: result recorded as repr() only; it cannot be restored")
            tools_ok = False

    if (
        no_content
        or (models and content_models == 0)
        or (
            not models
            and tools
            and not any(s.tool is not None and s.tool.result_payload is not None for s in tools)
        )
    ):
        verdict = "inspect-only"
        if no_content:
            problems.insert(
                0, "content capture was off (NO_CONTENT): messages and tool I/O were not recorded"
            )
    elif content_models == len(models) and tools_ok:
        verdict = "full"
    else:
        verdict = "model-only"
    replayable = verdict == "full" and not any("not byte-exact" in p for p in problems)
    return KitReport(verdict=verdict, replayable=replayable, missing=missing, problems=problems)
