"""Flattened attribute lists (``prefix.0.message.role``...) back into nested values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def unflatten(attrs: Mapping[str, Any], prefix: str) -> list[Any]:
    """The list flattened under ``prefix`` (``prefix.<i>.<path>`` keys), in index order.

    Path segments nest as dicts, integer segments as lists; gaps in the indices
    are closed (some instrumentations skip indices).
    """
    root: dict[Any, Any] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        node = root
        segments = [_segment(s) for s in key[len(start) :].split(".")]
        for seg in segments[:-1]:
            child = node.get(seg)
            if not isinstance(child, dict):
                child = node[seg] = {}
            node = child
        if not isinstance(node.get(segments[-1]), dict):  # a leaf never hides a subtree
            node[segments[-1]] = value
    listed = _lists(root)
    return listed if isinstance(listed, list) else []


def _segment(s: str) -> int | str:
    return int(s) if s.isdigit() else s


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(isinstance(k, int) for k in node):
        return [_lists(node[k]) for k in sorted(node)]
    return {str(k): _lists(v) for k, v in node.items()}


def path(node: Any, *keys: str | int) -> Any:
    """``node[k1][k2]...``, or None where a step is missing."""
    for key in keys:
        if isinstance(node, Mapping):
            node = node.get(key)
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            return None
    return node
