"""The test modules that check recorded cases share one xdist worker (one scope)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.fixtures.worker_scopes import CASES_SCOPE, ROOT, SharedCasesScheduling, imports_check

#: Ways a module spells importing the checker, and ways it names the module without it.
_CHECKER = [
    "from tests.conformance.checks import check",
    "from tests.conformance.checks import Case, check, find_cases",
    "from tests.conformance.checks import (\n    Case,\n    check,\n)",
    "from tests.conformance.checks import check as checked",
    "from tests.conformance import checks",
    "import tests.conformance.checks",
    "def f():\n    from tests.conformance.checks import check",
]
_NOT_CHECKER = [
    "from tests.conformance.checks import CASES, Case, find_cases",
    "from tests.conformance.checks import checked",
    "# from tests.conformance.checks import check",
    'DOC = "from tests.conformance.checks import check"',
    "from tests.conformance import scenario",
    "import tests.conformance.checks_more",
]
_OTHER = st.sampled_from(["import json", "x = 1", "def g() -> None:\n    pass", ""])


@given(st.lists(_OTHER, max_size=3), st.sampled_from(_CHECKER), st.lists(_OTHER, max_size=3))
def test_a_module_importing_the_checker_however_spelled_is_found(
    before: list[str], line: str, after: list[str]
) -> None:
    assert imports_check("\n".join([*before, line, *after]))


@given(st.lists(st.one_of(_OTHER, st.sampled_from(_NOT_CHECKER)), max_size=6))
def test_a_module_not_importing_it_is_not(lines: list[str]) -> None:
    assert not imports_check("\n".join(lines))


def _scope(module: Path) -> str:
    scheduler: Any = SharedCasesScheduling.__new__(SharedCasesScheduling)
    return str(scheduler._split_scope(f"{module.relative_to(ROOT).as_posix()}::test_x[a]"))


def test_every_module_that_checks_cases_is_in_one_scope_and_no_other_is() -> None:
    modules = sorted((ROOT / "tests").rglob("test_*.py"))
    shared = {m.name for m in modules if _scope(m) == CASES_SCOPE}
    # The two that check the whole corpus, and at least the dozen more that check its cases.
    assert {"test_conformance.py", "test_serve_requests.py"} <= shared
    assert len(shared) >= 12
    for m in modules:
        checker = imports_check(m.read_text(encoding="utf-8"))
        assert (_scope(m) == CASES_SCOPE) == checker, m
        if not checker:
            assert _scope(m) == m.relative_to(ROOT).as_posix()
