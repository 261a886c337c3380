"""Which runs a cohort takes: ``--sample N`` drawn with ``--seed S``, then the first
``--limit N`` by start.

A run's place in the draw is the SHA-256 of the seed and its run id
(``f"{seed}:{run_id}"``): the sample is the N runs whose digests are the
smallest.  The same seed draws the same runs from the same runs, whatever
holds them: a ClickHouse table computes the digest in its query (see
:mod:`.clickhouse_summary`), and so leaves every run it does not draw in
ClickHouse; a file's runs are drawn here from their summaries.  A run drawn
stays drawn when runs are added, unless a new one takes its place.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["Draw", "draw_key", "drawn"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Draw:
    """The runs a cohort takes of those the filters keep: ``sample`` of them drawn with
    ``seed`` (all when there are no more), then the first ``limit`` by start."""

    sample: int | None = None
    seed: int | None = None
    limit: int | None = None

    @property
    def seed_text(self) -> str:
        """The seed as the digest reads it ("" for none)."""
        return "" if self.seed is None else str(self.seed)


def draw_key(seed_text: str, run_id: str) -> bytes:
    """A run's place in the draw of ``seed_text`` (see :attr:`Draw.seed_text`): the smallest
    are drawn."""
    return hashlib.sha256(f"{seed_text}:{run_id}".encode()).digest()


def drawn(
    items: Sequence[T],
    sample: int | None,
    seed: int | None,
    limit: int | None,
    ident: Callable[[T], str] = str,
) -> list[T]:
    """The cohort: the ``sample`` items of ``items`` whose ids (``ident``) have the smallest
    keys for ``seed`` (all when there are no more), kept in their order, then the first
    ``limit``.  The same seed draws the same items."""
    picked = list(items)
    if sample is not None and sample < len(picked):
        seed_text = Draw(seed=seed).seed_text
        keys = [(draw_key(seed_text, ident(item)), i) for i, item in enumerate(picked)]
        chosen = sorted(i for _, i in sorted(keys)[:sample])
        picked = [picked[i] for i in chosen]
    return picked if limit is None else picked[:limit]
