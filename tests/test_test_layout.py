"""The shape of the tests and benchmarks: shared builders in one module each, no test importing
a conftest, no benchmark importing another (read with ``ast``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> Iterator[tuple[int, str, int]]:
    """(line, module, relative level) of every import of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, node.module or "", node.level


def test_no_test_module_imports_a_conftest() -> None:
    """Builders live in ``tests/factories.py`` and the folders' ``support.py``; a conftest
    holds fixtures, which pytest hands out by name."""
    found = [
        f"{path.relative_to(REPO)}:{line} imports {module or '.'}"
        for path in sorted((REPO / "tests").rglob("*.py"))
        for line, module, _level in _imports(path)
        if module.split(".")[-1] == "conftest"
    ]
    assert found == []


def test_no_benchmark_imports_another() -> None:
    """The scripts share ``benchmarks/_harness.py`` (and helper modules named ``_*.py``,
    which ``make bench`` does not run), never each other."""
    scripts = {path.stem for path in (REPO / "benchmarks").glob("[a-z]*.py")}
    found = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in sorted((REPO / "benchmarks").glob("*.py"))
        for line, module, _level in _imports(path)
        if module.split(".")[0] in scripts or module.startswith("benchmarks")
    ]
    assert found == []


def test_the_scanners_see_an_import() -> None:
    """The check above reads imports: the benchmarks do import the harness."""
    harness_users = [
        path.name
        for path in sorted((REPO / "benchmarks").glob("*.py"))
        if any(module == "_harness" for _l, module, _v in _imports(path))
    ]
    assert "dispatch_cpu.py" in harness_users and "crash_soak.py" in harness_users
