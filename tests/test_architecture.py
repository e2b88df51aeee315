"""The shape of the code: rules over the whole ``scheduler`` package, read with ``ast``."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "scheduler"

#: (importing package, imported package) → where: "scheduler/campaign/loader.py:58".
Edges = Mapping[tuple[str, str], list[str]]


def _modules() -> Iterator[tuple[Path, str]]:
    """Every module of the package with its dotted name."""
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield path, ".".join(parts)


def _unit(dotted: str) -> str | None:
    """The package (``scheduler.campaign``) or top-level module (``scheduler.units``) that
    ``dotted`` belongs to; ``None`` outside scheduler and for ``scheduler`` itself."""
    parts = dotted.split(".")
    if parts[0] != "scheduler" or len(parts) < 2:
        return None
    return parts[1]


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """Dotted names an ``import`` / ``from … import`` node brings in (relative ones resolved;
    ``from scheduler import units`` names ``scheduler.units``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        anchor = anchor if is_package else anchor[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    if base == "scheduler":
        return [f"scheduler.{alias.name}" for alias in node.names]
    return [base]


def package_imports() -> dict[tuple[str, str], list[str]]:
    """Edges between scheduler's packages (and top-level modules), with their import sites;
    every import counts: module level, inside functions, under ``TYPE_CHECKING``."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path, module in _modules():
        source = _unit(module) or "__init__"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for name in _imported(node, module, path.name == "__init__.py"):
                target = _unit(name)
                if target is not None and target != source:
                    where = f"{path.relative_to(ROOT.parent)}:{getattr(node, 'lineno', 0)}"
                    edges[(source, target)].append(where)
    return dict(edges)


def cycles(edges: Edges) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan), each sorted."""
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        graph[source].add(target)
        graph.setdefault(target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe_cycle(group: list[str], edges: Edges) -> str:
    """``campaign ⇄ dispatch``, then each edge inside the group with its first import sites."""
    lines = [" ⇄ ".join(group)]
    for (source, target), sites in sorted(edges.items()):
        if source in group and target in group:
            more = f" (+{len(sites) - 3} more)" if len(sites) > 3 else ""
            lines.append(f"  {source} → {target}: {', '.join(sites[:3])}{more}")
    return "\n".join(lines)


def test_no_import_cycle_between_packages() -> None:
    """campaign, dispatch, ledger, … (and top-level modules such as units) import each other
    in one direction only: what two packages share lives in a third."""
    edges = package_imports()
    assert ("campaign", "units") in edges and ("dispatch", "units") in edges  # it sees imports
    found = cycles(edges)
    assert not found, "import cycles between scheduler packages:\n" + "\n".join(
        describe_cycle(group, edges) for group in found)


def test_the_cycle_finder_finds_and_names_cycles() -> None:
    edges = {("campaign", "dispatch"): ["scheduler/campaign/a.py:3"],
             ("dispatch", "ledger"): ["scheduler/dispatch/b.py:5"],
             ("ledger", "campaign"): ["scheduler/ledger/c.py:7", "scheduler/ledger/d.py:1"],
             ("app", "campaign"): ["scheduler/app/e.py:2"],
             ("units", "errors"): ["scheduler/units.py:1"]}
    assert cycles(edges) == [["campaign", "dispatch", "ledger"]]
    assert describe_cycle(["campaign", "dispatch", "ledger"], edges) == (
        "campaign ⇄ dispatch ⇄ ledger\n"
        "  campaign → dispatch: scheduler/campaign/a.py:3\n"
        "  dispatch → ledger: scheduler/dispatch/b.py:5\n"
        "  ledger → campaign: scheduler/ledger/c.py:7, scheduler/ledger/d.py:1")
    assert cycles({("a", "b"): [], ("b", "a"): [], ("c", "d"): []}) == [["a", "b"]]


def test_relative_and_package_imports_are_resolved() -> None:
    tree = ast.parse("from . import outcomes\nfrom ..units import Rate\nfrom scheduler import "
                     "units, errors\nimport scheduler.ledger.queries as q\n")
    names = [n for node in tree.body
             for n in _imported(node, "scheduler.dispatch.start", is_package=False)]
    assert names == ["scheduler.dispatch", "scheduler.units", "scheduler.units",
                     "scheduler.errors", "scheduler.ledger.queries"]
    assert [_unit(n) for n in names] == ["dispatch", "units", "units", "errors", "ledger"]


# ---------------------------------------------------------------------- the ledger's door

#: Database libraries: only ``scheduler/ledger`` imports them.
DATABASE_LIBRARIES = frozenset({"sqlalchemy", "sqlmodel", "sqlite3", "psycopg", "psycopg2",
                                "alembic"})
#: Calls that run SQL or manage a transaction by hand (``ledger.access`` does that).
SQL_CALLS = frozenset({"execute", "executemany", "exec_driver_sql", "begin_nested"})


def _is_engine(node: ast.expr) -> bool:
    """``engine`` or ``<anything>.engine``."""
    return (isinstance(node, ast.Name) and node.id == "engine") or (
        isinstance(node, ast.Attribute) and node.attr == "engine")


def sql_uses(tree: ast.AST, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, what) of every database import and hand-made SQL call in a module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        for name in _imported(node, module, is_package):
            if DATABASE_LIBRARIES & set(name.split(".")):
                found.append((node.lineno, f"imports {name}"))  # type: ignore[attr-defined]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in SQL_CALLS:
                found.append((node.lineno, f".{attr}(…)"))
            elif attr in ("begin", "connect") and _is_engine(node.func.value):
                found.append((node.lineno, f"engine.{attr}()"))
    return sorted(found)


def test_no_sql_outside_the_ledger() -> None:
    """Only ``scheduler/ledger`` talks to the database: other packages call
    ``ledger.queries`` functions inside ``ledger.transaction()`` / ``ledger.read()``, never
    import a database library, build SQL, or open a transaction themselves."""
    offences = []
    scanned = 0
    for path, module in _modules():
        if module == "scheduler.ledger" or module.startswith("scheduler.ledger."):
            continue
        scanned += 1
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        offences += [f"{path.relative_to(ROOT.parent)}:{line}: {what}"
                     for line, what in sql_uses(tree, module, path.name == "__init__.py")]
    assert scanned > 50  # it looked at the whole package
    assert not offences, "SQL outside scheduler/ledger:\n" + "\n".join(offences)


def test_the_sandbox_has_no_database() -> None:
    """The embedded sandbox stands for the remote service: it keeps its state in memory and
    never reaches the ledger."""
    edges = package_imports()
    assert [(s, t) for s, t in edges if s == "sandbox" and t == "ledger"] == []


def test_the_sql_scanner_sees_imports_and_calls() -> None:
    tree = ast.parse(
        "import sqlite3\nfrom sqlalchemy import select\n"
        "from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore\n"
        "with self.ledger.engine.begin() as conn:\n    conn.execute(select(t))\n"
        "engine.connect()\nraw.exec_driver_sql('PRAGMA x')\nconn.begin_nested()\n"
        "with ledger.transaction('x') as conn:\n    dq.claim(conn, rows, now)\n"
        "client.connect()\nfrom scheduler.ledger.queries import dispatch as dq\n")
    assert sql_uses(tree, "scheduler.dispatch.example") == [
        (1, "imports sqlite3"), (2, "imports sqlalchemy"),
        (3, "imports apscheduler.jobstores.sqlalchemy"), (4, "engine.begin()"),
        (5, ".execute(…)"), (6, "engine.connect()"), (7, ".exec_driver_sql(…)"),
        (8, ".begin_nested(…)")]


def module_imports() -> Edges:
    """Edges between scheduler's modules made by imports at module level (those run when
    a module is imported; one inside a function runs later and breaks no import order).
    ``from package import name`` counts as importing ``package.name`` when that is a module.
    """
    known = {module for _path, module in _modules()}
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path, module in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:  # module level only
            names = _imported(node, module, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):
                base = names[0] if names else ""
                names = names + [f"{base}.{alias.name}" for alias in node.names]
            for name in names:
                if name in known and name != module:
                    where = f"{path.relative_to(ROOT.parent)}:{node.lineno}"
                    edges[(module, name)].append(where)
    return dict(edges)


def test_no_import_cycle_between_modules() -> None:
    """No two modules import each other at module level, however indirectly: a cycle makes
    the import order fragile (issue 10 found sandbox/world.py ⇄ calls.py / recipients.py).
    A package's ``__init__`` re-exporting its own modules is not a cycle of modules."""
    edges = {(a, b): sites for (a, b), sites in module_imports().items()
             if not (b.startswith(a + ".") or a.startswith(b + "."))}
    assert ("scheduler.dispatch.dispatcher", "scheduler.dispatch.outcomes") in edges
    found = cycles(edges)
    assert not found, "import cycles between scheduler modules:\n" + "\n".join(
        describe_cycle(group, edges) for group in found)
