"""The architecture page names the layers the import contracts enforce, in their order,
and every package and root module of the library (docs/architecture.md)."""

from __future__ import annotations

import ast
import re

import pytest

from tests.fixtures.data import ROOT

PACKAGE = ROOT / "src" / "otel_replay"

tomllib = pytest.importorskip("tomllib")  # Python 3.11's


def _layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    return [[n.strip() for n in re.split(r"[|:]", layer)] for layer in layers]


def _rows() -> list[str]:
    """The first column of each row of the page's layer table."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("```text", 1)[1].split("```", 1)[0]
    return [
        re.split(r"\s{2,}", line, maxsplit=1)[0] for line in table.splitlines() if line[:1].strip()
    ]


def _row_of(name: str, rows: list[str]) -> int | None:
    for i, row in enumerate(rows):
        if name in {w.strip().rstrip("/").removesuffix(".py") for w in row.split("|")}:
            return i
    return None


def test_the_page_names_the_layers_in_their_order() -> None:
    rows = _rows()
    layers = _layers()
    kernel = layers.pop()  # the root modules: named in the last row's text, in any order
    at = [[_row_of(name, rows) for name in layer] for layer in layers]
    missing = [
        n
        for layer, found in zip(layers, at, strict=True)
        for n, i in zip(layer, found, strict=True)
        if i is None
    ]
    assert missing == [], f"the page's table has no row for {missing}"
    first = [min(i for i in found if i is not None) for found in at]
    assert first == sorted(first), "the page's layers are not in the contract's order"
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert [n for n in kernel if not re.search(rf"\b{n}\b", page)] == []


def test_every_package_and_root_module_is_in_a_layer() -> None:
    named = {name for layer in _layers() for name in layer}
    here = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    here |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert here == named


def test_the_tests_mirror_the_packages() -> None:
    """Every test sits in the folder of what it tests: tests/unit/<package>/ for a package
    of the library, or of a root module with many tests (kernel/ for the others), or one of the named folders."""
    tests = ROOT / "tests"
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    assert loose == [], f"tests outside a folder: {loose}"
    assert {
        p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))
    } == {
        "unit",
        "acceptance",
        "conformance",
        "fixtures",
        "data",
        "tool_results",
    }
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    packages |= {p.stem for p in PACKAGE.glob("*.py")} | {"kernel"}  # a root module's own tests
    folders = {p.name for p in (tests / "unit").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - packages == set(), "a folder of tests/unit/ that names no package"
    assert [p.name for p in (tests / "fixtures").glob("test_*.py")] == []


def _unexplained_imports(source: str) -> list[int]:
    """The lines of imports made inside a function with no comment saying why, on their
    line or above the block of imports they open."""

    lines = source.splitlines()
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            at = node.lineno - 1
            while "#" not in lines[at] and at > 0:
                above = lines[at - 1].strip()
                if not (above.startswith(("from ", "import ", ")")) or above.endswith((",", "("))):
                    break
                at -= 1
            if "#" not in lines[at] and not lines[at - 1].strip().startswith("#"):
                found.append(node.lineno)
    return found


def test_imports_inside_functions_say_why() -> None:
    """An import is made inside a function only to keep a dependency or a heavy module
    lazy, and a comment says which (the rule import-linter cannot check)."""
    unexplained = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in _unexplained_imports(path.read_text(encoding="utf-8"))
    ]
    assert unexplained == []


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("def f():\n    import json\n", [2]),
        ("def f():\n    import json  # lazy: why\n", []),
        (
            "def f():\n    # lazy: why\n    import json\n    from x import (\n        y,\n    )\n",
            [],
        ),
        ("def f():\n    # lazy: why\n    x = 1\n    import json\n", [4]),
        ("import json\n\ndef f():\n    return json\n", []),
    ],
)
def test_the_import_rule_reads_blocks_and_comments(source: str, lines: list[int]) -> None:
    assert _unexplained_imports(source) == lines
