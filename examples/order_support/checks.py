"""What the fix must keep true, as a predicate the regression test asserts."""

from __future__ import annotations

from typing import Any

from .agent import ORDERS


def owner_of(answer: str) -> str | None:
    """The user whose order the answer names (None when it names none)."""
    return next((o["user_id"] for o in ORDERS if f"#{o['order_id']}" in answer), None)


def never_another_users_order(answer: str, run: Any) -> bool:
    """The answer names no order, or one of the user who asked (``user.id`` of the run)."""
    owner = owner_of(answer)
    return owner is None or owner == run.fingerprint.get("user.id")
