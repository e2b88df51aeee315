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
