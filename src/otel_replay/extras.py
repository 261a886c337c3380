"""How a missing optional dependency is named: the extra that installs it.

One spelling for every message that says an extra is missing, from a package
index and in a checkout of the project (where ``pip install 'otel-replay[...]'``
would install the published release beside the checkout).
"""

from __future__ import annotations

__all__ = ["install_hint"]


def install_hint(extra: str) -> str:
    """The commands that install the extra ``extra`` (one of ``pyproject.toml``'s)."""
    return f"pip install 'otel-replay[{extra}]' (in a checkout: pip install -e '.[{extra}]')"
