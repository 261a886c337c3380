"""What a cohort adds up to: each candidate's :class:`Totals` (outcomes counted, tokens,
time, cost, the slowest and costliest runs), and the :class:`Price` of a model's tokens.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from ..replay.candidate_model import CandidateModel
from .cohort_outcomes import OUTCOMES, Outcome


@dataclasses.dataclass(frozen=True)
class Price:
    """What a model's tokens cost: US dollars per million input and per million output
    tokens (no price list is shipped: prices change, and each deployment has its own)."""

    input: float
    output: float

    @classmethod
    def parse(cls, text: str) -> tuple[str, Price]:
        """``MODEL=IN/OUT`` (``gpt-4.1-mini=0.4/1.6``; MODEL as the candidate names it,
        with or without its ``PROVIDER:``): the model and its price; ``ValueError`` naming
        what is wrong."""
        model, sep, rates = text.rpartition("=")
        said_in, slash, said_out = rates.partition("/")
        try:
            price = cls(float(said_in), float(said_out))
        except ValueError:
            price = None
        if not sep or not model.strip() or not slash or price is None:
            raise ValueError(f"{text!r}: give it as MODEL=IN/OUT, dollars per million tokens")
        if (
            not all(map(math.isfinite, (price.input, price.output)))
            or min(price.input, price.output) < 0
        ):
            raise ValueError(f"{text!r}: a price is a finite number, not negative")
        return model.strip(), price

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """The tokens' cost; None when neither count is known."""
        if input_tokens is None and output_tokens is None:
            return None
        return ((input_tokens or 0) * self.input + (output_tokens or 0) * self.output) / 1e6


def price_of(model: CandidateModel, prices: Mapping[str, Price]) -> Price | None:
    """``model``'s price in ``prices`` (by ``PROVIDER:MODEL``, else ``MODEL``), if given."""
    return prices.get(f"{model.provider}:{model.model}") or prices.get(model.model)


# --- totals ----------------------------------------------------------------------------

#: How many runs each candidate's totals name as its slowest and as its costliest.
WORST = 3


@dataclasses.dataclass
class Totals:
    """Per candidate: how many runs had each outcome, tokens, time and cost where known,
    and the slowest and costliest runs."""

    candidate: str
    counts: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float = 0.0
    cost: float | None = None
    #: First-divergence steps, by recorded step index (``None``: past the recording).
    diverged_at: dict[str, int] = dataclasses.field(default_factory=dict)
    #: ``(latency ms, run id)`` of the slowest runs, ``(cost, run id)`` of the costliest,
    #: the most first (a few: the totals stay the same size however many runs there are).
    slowest: list[tuple[float, str]] = dataclasses.field(default_factory=list)
    costliest: list[tuple[float, str]] = dataclasses.field(default_factory=list)
    #: Runs not replayed against it: a cap was reached, or the command stopped, first.
    not_run: int = 0

    def add(self, out: Outcome, run_id: str = "") -> None:
        self.counts[out.kind] += 1
        if out.input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + out.input_tokens
        if out.output_tokens is not None:
            self.output_tokens = (self.output_tokens or 0) + out.output_tokens
        if out.latency_ms is not None:
            self.latency_ms += out.latency_ms
            _keep(self.slowest, (out.latency_ms, run_id))
        if out.cost is not None:
            self.cost = (self.cost or 0.0) + out.cost
            _keep(self.costliest, (out.cost, run_id))
        if out.divergence is not None:
            key = "end" if out.divergence.step is None else str(out.divergence.step)
            self.diverged_at[key] = self.diverged_at.get(key, 0) + 1

    @property
    def runs(self) -> int:
        return sum(self.counts.values())

    def rate(self, kind: str) -> float | None:
        return self.counts[kind] / self.runs if self.runs else None

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "runs": self.runs,
            "counts": dict(self.counts),
            "same_rate": self.rate("same"),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_ms": round(self.latency_ms, 3),
            "latency_ms_per_run": round(self.latency_ms / self.runs, 3) if self.runs else None,
            "cost": self.cost,
            "first_divergence_steps": dict(self.diverged_at),
            "slowest": [{"run_id": r, "latency_ms": ms} for ms, r in self.slowest],
            "costliest": [{"run_id": r, "cost": c} for c, r in self.costliest],
            "not_run": self.not_run,
        }


def _keep(worst: list[tuple[float, str]], one: tuple[float, str]) -> None:
    worst.append(one)
    worst.sort(key=lambda w: -w[0])  # the same value: the earlier run stays first
    del worst[WORST:]
