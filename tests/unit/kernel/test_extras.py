"""A missing optional dependency is named by the extra that installs it, spelled for a
package index and for a checkout, and every extra a message names exists."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest

from otel_replay.extras import install_hint
from tests.fixtures.data import ROOT


def declared_extras() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([A-Za-z0-9_-]+)\s*=", section, flags=re.M))


def named_extras() -> set[str]:
    """The extras the source names in ``install_hint(...)`` calls."""
    named = set()
    for path in (ROOT / "src" / "otel_replay").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "install_hint"
            ):
                (arg,) = node.args
                if isinstance(arg, ast.Constant):
                    named.add(arg.value)
    return named


def test_every_extra_a_message_names_is_declared() -> None:
    named = named_extras()
    assert {"report", "mcp", "refs"} <= named
    assert named <= declared_extras()


@pytest.mark.parametrize("extra", sorted(declared_extras()))
def test_the_hint_spells_both_installs(extra: str) -> None:
    hint = install_hint(extra)
    assert f"pip install 'otel-replay[{extra}]'" in hint
    assert f"pip install -e '.[{extra}]'" in hint


def test_report_without_jinja2_says_how_to_install_it_in_a_checkout(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Jinja2 made unimportable in a child, as on a machine without the extra.
    code = (
        "import sys; sys.modules['jinja2'] = None\n"
        "from otel_replay.cli.main import main\n"
        f"sys.argv = ['otel-replay', 'report', {str(ROOT / 'examples/order_support/recordings/wrong_order.otlp')!r},"
        f" '-o', {str(tmp_path / 'x.html')!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "pip install -e '.[report]'" in done.stderr, done.stderr
