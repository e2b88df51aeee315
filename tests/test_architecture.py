"""The shape of the code: rules over the whole ``scheduler`` package, read with ``ast``."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

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
    """The package (``scheduler.campaign``) or top-level module (``scheduler.wiring``) that
    ``dotted`` belongs to; ``None`` outside scheduler and for ``scheduler`` itself."""
    parts = dotted.split(".")
    if parts[0] != "scheduler" or len(parts) < 2:
        return None
    return parts[1]


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """Dotted names an ``import`` / ``from … import`` node brings in (relative ones resolved;
    ``from scheduler.core import units`` names ``scheduler.core.units``)."""
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
    """campaign, dispatch, ledger, … (and top-level modules such as wiring) import each other
    in one direction only: what two packages share lives in a third."""
    edges = package_imports()
    assert ("campaign", "core") in edges and ("dispatch", "core") in edges  # it sees imports
    found = cycles(edges)
    assert not found, "import cycles between scheduler packages:\n" + "\n".join(
        describe_cycle(group, edges) for group in found)


def test_the_house_is_cut_by_role() -> None:
    """No ``app/`` package of mixed kinds: the use cases in ``usecases/``, the read models in
    ``views/`` (which reads the ledger and never imports a use case), the demo in ``demo/``,
    the wiring in ``wiring.py``."""
    assert not (ROOT / "app").exists()
    for package in ("usecases", "views", "demo"):
        assert (ROOT / package / "__init__.py").is_file(), package
    assert (ROOT / "wiring.py").is_file()
    edges = package_imports()
    assert ("usecases", "views") in edges  # it sees the use cases' imports
    assert edges.get(("views", "usecases"), []) == [], "views imports a use case"


def test_the_cycle_finder_finds_and_names_cycles() -> None:
    edges = {("campaign", "dispatch"): ["scheduler/campaign/a.py:3"],
             ("dispatch", "ledger"): ["scheduler/dispatch/b.py:5"],
             ("ledger", "campaign"): ["scheduler/ledger/c.py:7", "scheduler/ledger/d.py:1"],
             ("usecases", "campaign"): ["scheduler/usecases/e.py:2"],
             ("units", "errors"): ["scheduler/core/units.py:1"]}
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
    ``ledger.queries`` functions inside ``access.transaction()`` / ``access.read()``, never
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
        "with access.transaction(ledger.engine, 'x') as conn:\n    dq.claim(conn, rows, now)\n"
        "client.connect()\nfrom scheduler.ledger.queries import dispatch as dq\n")
    assert sql_uses(tree, "scheduler.dispatch.example") == [
        (1, "imports sqlite3"), (2, "imports sqlalchemy"),
        (3, "imports apscheduler.jobstores.sqlalchemy"), (4, "engine.begin()"),
        (5, ".execute(…)"), (6, "engine.connect()"), (7, ".exec_driver_sql(…)"),
        (8, ".begin_nested(…)")]


# ------------------------------------------------------- the engine's doors into the ledger

#: The ledger's modules the engine may not import: the concrete ``Ledger`` and the classes it
#: is built on, the transaction scopes, the query modules. The engine holds the store
#: protocols of ``dispatch/store.py``; plain rows, states and changes are data.
LEDGER_INSIDES = ("scheduler.ledger.runs", "scheduler.ledger.core",
                  "scheduler.ledger.run_control", "scheduler.ledger.access",
                  "scheduler.ledger.queries", "scheduler.ledger.db")
#: The most methods a store protocol may have (a door by role, not the whole ledger).
MOST_STORE_METHODS = 12


def _names_the_ledger(node: ast.AST) -> bool:
    """``Ledger``, or a string annotation naming it (``"Ledger | None"``)."""
    if isinstance(node, ast.Name):
        return node.id == "Ledger"
    return isinstance(node, ast.Constant) and isinstance(node.value, str) \
        and "Ledger" in [part.strip() for part in node.value.split("|")]


def ledger_insides(tree: ast.AST, module: str, is_package: bool = False) -> list[str]:
    """What of the ledger's insides a module reaches: ``imports <module>`` for each import
    of :data:`LEDGER_INSIDES`, ``Ledger`` for each annotation that names the ``Ledger``."""
    found = []
    for node in ast.walk(tree):
        names = _imported(node, module, is_package)
        if isinstance(node, ast.ImportFrom) and names:
            names += [f"{names[0]}.{alias.name}" for alias in node.names]
        inside = next((n for n in names if n.startswith(LEDGER_INSIDES)), None)
        if inside is not None:
            found.append(f"{node.lineno}: imports {inside}")  # type: ignore[attr-defined]
        if isinstance(node, ast.ImportFrom) and any(a.name == "Ledger" for a in node.names):
            found.append(f"{node.lineno}: imports Ledger")
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations = [a.annotation for a in (*node.args.args, *node.args.kwonlyargs,
                                                  *node.args.posonlyargs) if a.annotation]
            annotations += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        for annotation in annotations:
            if any(_names_the_ledger(n) for n in ast.walk(annotation)):
                found.append(f"{annotation.lineno}: takes the Ledger")
    return sorted(set(found), key=lambda f: (int(f.split(":")[0]), f))


def _scan(prefix: str) -> dict[str, list[str]]:
    """:func:`ledger_insides` of every module under ``scheduler.<prefix>``."""
    out = {}
    for path, module in _modules():
        if module == f"scheduler.{prefix}" or module.startswith(f"scheduler.{prefix}."):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            if found := ledger_insides(tree, module, path.name == "__init__.py"):
                out[module] = found
    return out


def test_no_engine_module_takes_the_ledger() -> None:
    """The engine (``dispatch/``: the dispatcher, the workers, the triggers, the judging of
    unknown rows) holds store protocols: it never takes the concrete ``Ledger``, opens a
    transaction or imports a query module."""
    assert "scheduler.views.reading" in {m for m, _ in _scan("views").items()}  # it sees
    offences = _scan("dispatch")
    assert not offences, f"the engine reaches into the ledger: {offences}"


def _type_only_lines(tree: ast.AST) -> set[int]:
    """Lines of the statements under ``if TYPE_CHECKING:`` (imports of types only)."""
    return {inner.lineno for node in ast.walk(tree) if isinstance(node, ast.If)
            and _names(node.test)[-1:] == ["TYPE_CHECKING"]
            for stmt in node.body for inner in ast.walk(stmt) if hasattr(inner, "lineno")}


def tracking_queries(tree: ast.AST, module: str, is_package: bool = False) -> list[str]:
    """Where a tracking module reaches the ledger's queries or transactions: any import of
    a query module, any import of ``scheduler.ledger.access`` but the type of a caller's
    snapshot under ``if TYPE_CHECKING:``."""
    typed = _type_only_lines(tree)
    return [what for what in ledger_insides(tree, module, is_package)
            if "scheduler.ledger.queries" in what or (
                "scheduler.ledger.access" in what and int(what.split(":")[0]) not in typed)]


def test_tracking_calls_no_ledger_query_module() -> None:
    """Tracking applies events through its stores (``tracking/store.py``, over the ledger's)
    and its read models (a run's funnel and events, the answers' tallies) read through the
    ledger's read doors: none of its modules imports a query module or opens a
    transaction."""
    offences = {}
    for path, module in _modules():
        if module == "scheduler.tracking" or module.startswith("scheduler.tracking."):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            if found := tracking_queries(tree, module, path.name == "__init__.py"):
                offences[module] = found
    assert not offences, f"tracking reaches the ledger's queries: {offences}"
    seen = tracking_queries(ast.parse(
        "from scheduler.ledger import access\nif TYPE_CHECKING:\n"
        "    from scheduler.ledger.access import Connection\n"
        "from scheduler.ledger.queries import answers as aq\n"), "scheduler.tracking.x")
    assert seen == ["1: imports scheduler.ledger.access", "4: imports scheduler.ledger.queries"]


def query_importers() -> set[str]:
    """Modules outside the ledger importing ``scheduler.ledger.queries`` (any import)."""
    found = set()
    for path, module in _modules():
        if module == "scheduler.ledger" or module.startswith("scheduler.ledger."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if any("imports scheduler.ledger.queries" in what
               for what in ledger_insides(tree, module, path.name == "__init__.py")):
            found.add(module.removeprefix("scheduler."))
    return found


def test_nothing_outside_the_ledger_imports_its_queries() -> None:
    """The ledger's query modules are its own: other packages go through its stores
    (``ledger/*_store.py``) and its read doors (``ledger/*_reads.py``). Issue 33 began
    with 57 modules importing one."""
    found = query_importers()  # the finder's own test: ..._see_what_they_look_for
    assert not found, f"modules outside the ledger import its query modules: {sorted(found)}"


def store_protocols(tree: ast.AST) -> dict[str, int]:
    """Each ``Protocol`` class named ``…Store`` and how many methods it has."""
    return {node.name: sum(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                           for s in node.body)
            for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and node.name.endswith("Store")
            and any(_names(base)[-1:] == ["Protocol"] for base in node.bases)}


def test_no_store_protocol_over_twelve_methods() -> None:
    sizes = {f"{module}.{name}": n for path, module in _modules()
             for name, n in store_protocols(ast.parse(path.read_text("utf-8"))).items()}
    assert "scheduler.dispatch.store.QueueStore" in sizes  # it sees the engine's stores
    over = {name: n for name, n in sizes.items() if n > MOST_STORE_METHODS}
    assert not over, f"store protocols over {MOST_STORE_METHODS} methods: {over}"


def test_the_ledger_imports_nothing_from_tracking() -> None:
    """The ledger never calls up into tracking (events are matched by tracking itself)."""
    edges = package_imports()
    assert ("wiring", "tracking") in edges  # it sees such edges
    assert edges.get(("ledger", "tracking"), []) == [], edges.get(("ledger", "tracking"))


def test_the_ledger_and_store_finders_see_what_they_look_for() -> None:
    source = ("from scheduler.ledger.runs import Ledger\nfrom scheduler.ledger import access\n"
              "from scheduler.ledger.queries import leases as lq\n"
              "from scheduler.ledger.rows import LeaseRow\n"
              "def f(ledger: Ledger, n: int) -> 'Ledger | None': ...\n"
              "class A(Protocol):\n    x: int\n    def a(self) -> None: ...\n"
              "class BStore(typing.Protocol):\n    def a(self) -> None: ...\n"
              "    def b(self) -> None: ...\nclass CStore:\n    def a(self) -> None: ...\n")
    tree = ast.parse(source)
    assert ledger_insides(tree, "scheduler.dispatch.x") == [
        "1: imports Ledger", "1: imports scheduler.ledger.runs",
        "2: imports scheduler.ledger.access", "3: imports scheduler.ledger.queries",
        "5: takes the Ledger"]
    assert store_protocols(tree) == {"BStore": 2}


def module_imports(*, every_import: bool = False) -> Edges:
    """Edges between scheduler's modules made by imports at module level (those run when
    a module is imported; one inside a function runs later and breaks no import order);
    ``every_import``: also those inside functions and under ``if TYPE_CHECKING:``.
    ``from package import name`` counts as importing ``package.name`` when that is a module.
    """
    known = {module for _path, module in _modules()}
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path, module in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        nodes = ast.walk(tree) if every_import else iter(tree.body)
        for node in nodes:
            names = _imported(node, module, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):
                base = names[0] if names else ""
                names = names + [f"{base}.{alias.name}" for alias in node.names]
            for name in names:
                if name in known and name != module:
                    where = f"{path.relative_to(ROOT.parent)}:{node.lineno}"  # type: ignore[attr-defined]
                    edges[(module, name)].append(where)
    return dict(edges)


def _between_modules(edges: Edges) -> Edges:
    """``edges`` without those between a package's ``__init__`` and its own modules (a
    package re-exporting its modules is not a cycle of modules)."""
    return {(a, b): sites for (a, b), sites in edges.items()
            if not (b.startswith(a + ".") or a.startswith(b + "."))}


def test_no_import_cycle_between_modules() -> None:
    """No two modules import each other at module level, however indirectly: a cycle makes
    the import order fragile (issue 10 found sandbox/world.py ⇄ calls.py / recipients.py).
    A package's ``__init__`` re-exporting its own modules is not a cycle of modules."""
    edges = _between_modules(module_imports())
    assert ("scheduler.campaign.loader", "scheduler.campaign.definition") in edges
    found = cycles(edges)
    assert not found, "import cycles between scheduler modules:\n" + "\n".join(
        describe_cycle(group, edges) for group in found)


# ------------------------------------ modules: cycles by any import, length, the clock

#: Known offences of the rules below (each rule fails on anything else, and on an entry
#: here that no longer offends, so the lists only shrink).
#: Clocks read outside timeutil (none left: issue 21 routed the last, the receiver).
PENDING_CLOCK_READS: frozenset[str] = frozenset()
#: Import cycles between modules (none left: issue 21 typed the sandbox's desks with
#: ``sandbox.world_view.WorldView`` instead of the ``Sandbox`` that builds them).
KNOWN_MODULE_CYCLES: frozenset[frozenset[str]] = frozenset()


def _beyond(found: set[str] | set[frozenset[str]], allowed: frozenset[Any],
            name: str) -> list[str]:
    """What ``found`` has beyond ``allowed``, and the entries of ``allowed`` (the list
    called ``name``) that ``found`` no longer has: both are failures."""
    problems = [f"{sorted(x) if isinstance(x, frozenset) else x}" for x in found
                if x not in allowed]
    problems += [f"{sorted(x) if isinstance(x, frozenset) else x}: no longer found, remove "
                 f"it from {name}" for x in allowed if x not in found]
    return sorted(problems)


def test_no_import_cycle_between_modules_by_any_import() -> None:
    """No two modules import each other, however indirectly, counting every import: those
    inside functions and under ``if TYPE_CHECKING:`` too. An import moved into a function,
    or made type-only, still makes two modules that can only be understood together."""
    edges = _between_modules(module_imports(every_import=True))
    assert ("scheduler.campaign.blanks", "scheduler.campaign.loader") in edges  # type-only
    assert ("scheduler.commands.workers", "scheduler.ledger.db") in edges  # inside a function
    found = {frozenset(group): group for group in cycles(edges)}
    unexpected = [group for key, group in found.items() if key not in KNOWN_MODULE_CYCLES]
    assert not unexpected, "import cycles between scheduler modules (every import):\n" + \
        "\n".join(describe_cycle(group, edges) for group in unexpected)
    stale = _beyond(set(found) & KNOWN_MODULE_CYCLES, KNOWN_MODULE_CYCLES,
                    "KNOWN_MODULE_CYCLES")
    assert not stale, "\n".join(stale)


#: The most lines a module may have (a longer one has more than one role).
MAX_LINES = 400


def long_modules() -> dict[str, int]:
    """Modules over :data:`MAX_LINES` lines, by path, with their length."""
    lengths = {str(path.relative_to(ROOT.parent)): len(path.read_text("utf-8").splitlines())
               for path, _module in _modules()}
    return {path: n for path, n in lengths.items() if n > MAX_LINES}


def test_no_module_over_400_lines() -> None:
    """Every module of the package fits in 400 lines: one role each."""
    assert long_modules() == {}


#: The clocks of the standard library: ``module.function`` read, called or imported.
CLOCKS = {"time": {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter",
                   "perf_counter_ns", "process_time", "process_time_ns", "localtime",
                   "gmtime", "ctime"},
          "datetime": {"now", "utcnow", "today"}, "date": {"today"}}
#: The one module that reads them.
CLOCK_MODULE = "scheduler/core/timeutil.py"


def _names(node: ast.expr) -> list[str]:
    """``datetime.datetime.now`` → ``["datetime", "datetime", "now"]``; a call in the chain
    is its function's last name with ``()`` (``asyncio.get_running_loop().time`` →
    ``["get_running_loop()", "time"]``); anything else ends the chain."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call) and (called := _names(node.func)):
            parts.append(f"{called[-1]}()")
            break
        else:
            if isinstance(node, ast.Name):
                parts.append(node.id)
            break
    return parts[::-1]


def clock_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every clock read in a module: ``time.monotonic`` and the like
    (called or handed over), ``datetime.now()``, ``from time import monotonic``, and an
    event loop's ``loop.time()``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            found += [(node.lineno, f"from time import {alias.name}")
                      for alias in node.names if alias.name in CLOCKS["time"]]
        elif isinstance(node, ast.Attribute):
            names = _names(node)
            owner = names[-2] if len(names) >= 2 else ""
            if names[-1] in CLOCKS.get(owner, ()) or (
                    names[-1] == "time" and (owner == "loop" or owner.endswith("_loop()"))):
                found.append((node.lineno, ".".join(names)))
    return sorted(found)


def test_the_clock_is_read_in_one_module() -> None:
    """Only ``scheduler/core/timeutil.py`` reads the machine's clocks (``utcnow``, ``monotonic``,
    ``seconds_since``, ``local_zone``); everything else asks it, or takes an injected clock,
    so a test can fix the time of anything."""
    offences: dict[str, list[str]] = defaultdict(list)
    for path, _module in _modules():
        where = str(path.relative_to(ROOT.parent))
        if where == CLOCK_MODULE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, what in clock_reads(tree):
            offences[where].append(f"{where}:{line}: {what}")
    problems = _beyond(set(offences), PENDING_CLOCK_READS, "PENDING_CLOCK_READS")
    assert not problems, "clocks read outside scheduler/core/timeutil.py:\n" + "\n".join(
        "\n".join(offences[p]) if p in offences else p for p in problems)


def test_the_clock_finder_sees_every_way_of_reading_it() -> None:
    tree = ast.parse(
        "import time\nfrom time import monotonic\nt = time.monotonic()\n"
        "clock = time.perf_counter\nnow = datetime.now(UTC)\nd = datetime.datetime.utcnow()\n"
        "loop.time()\nasyncio.get_running_loop().time()\nday = date.today()\n"
        "moment.time()\ndatetime.fromisoformat(text).time()\ntime.sleep(1)\nutcnow()\n")
    assert clock_reads(tree) == [
        (2, "from time import monotonic"), (3, "time.monotonic"), (4, "time.perf_counter"),
        (5, "datetime.now"), (6, "datetime.datetime.utcnow"), (7, "loop.time"),
        (8, "get_running_loop().time"), (9, "date.today")]


#: The names of the channels (``runs.channel``); their differences live in the channel modules.
CHANNEL_NAMES = frozenset({"whatsapp", "sms", "voice", "calls"})
#: The channel modules, where a channel's name may be compared: the channels themselves, their
#: words (``core/channel_terms.py``: one table, below every package, so that the campaign
#: file's checks and the ledger's funnels read it too), and
#: the sandbox, which plays the service: the names there are the service's own words on the
#: wire (a session's ``limits.sms``, an account webhook's ``channel``, ``/sandbox/outcomes``),
#: never the engine choosing what to do by a run's channel.
CHANNEL_MODULES = ("dispatch/channels/", "sandbox/", "core/channel_terms.py")
#: Where a channel's name is still compared outside the channel modules, and how many times:
#: a ratchet (issue 33 lowered it from 47 to none; the last four, the plan's JSON keys, the
#: account webhook's event names and the opt-out key, moved into the channel's terms, the
#: sandbox and ``channel.name``). A channel's name read as data is still counted.
CHANNEL_COMPARISONS_LEFT: dict[str, int] = {}
#: Packages where no channel's name is compared at all (the ratchet may list none of them).
NO_CHANNEL_COMPARISON = ("api/", "dashboard/", "dispatch/", "metrics/", "reports/", "tracking/")


def _names_a_channel(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in CHANNEL_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_channel(e) for e in node.elts)
    return False


def _channel_comparisons(tree: ast.AST) -> int:
    """Comparisons with a channel's name in ``tree``: ``==``, ``in (...)``, ``case "sms"``,
    and the hidden ones: a table keyed by channel names (``{"sms": …}``, one per table) and
    a lookup by one (``table["sms"]``, ``.get("voice")``)."""
    def compares(node: ast.AST) -> bool:
        if isinstance(node, ast.MatchValue):
            return _names_a_channel(node.value)
        if isinstance(node, ast.Dict):
            return any(map(_names_a_channel, node.keys))
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            return isinstance(node.slice, ast.Constant) and _names_a_channel(node.slice)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and node.args:
            return isinstance(node.args[0], ast.Constant) and _names_a_channel(node.args[0])
        return isinstance(node, ast.Compare) and (
            _names_a_channel(node.left) or any(map(_names_a_channel, node.comparators)))

    return sum(1 for node in ast.walk(tree) if compares(node))


def test_no_comparison_with_a_channel_name_outside_the_channel_modules() -> None:
    found = {}
    for path, _ in _modules():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(CHANNEL_MODULES):
            continue
        n = _channel_comparisons(ast.parse(path.read_text(encoding="utf-8")))
        if n:
            found[rel] = n
    more = {rel: n for rel, n in found.items() if n > CHANNEL_COMPARISONS_LEFT.get(rel, 0)}
    assert not more, f"a channel's name compared outside the channel modules: {more}"
    fewer = {rel: n for rel, n in CHANNEL_COMPARISONS_LEFT.items() if found.get(rel, 0) < n}
    assert not fewer, f"fewer comparisons than listed (lower the list): {fewer}"
    assert not [rel for rel in CHANNEL_COMPARISONS_LEFT if rel.startswith(NO_CHANNEL_COMPARISON)]


def test_the_channel_comparison_finder_sees_each_way_of_comparing() -> None:
    source = ('if c == "sms": pass\nif c in ("voice", "x"): pass\nif "calls" != c: pass\n'
              'match c:\n    case "whatsapp": pass\nif c == "email": pass\n'
              'WORDS = {"sms": "SMS", "voice": "call"}\nWORDS["sms"]\nWORDS.get("voice", "")\n'
              'out["sms"] = 1\nWORDS.get(c)\n{"email": 1, **extra}\n')
    assert _channel_comparisons(ast.parse(source)) == 7


# The settings: one package, every default written once, nothing copied field by field.
#: The classes whose fields hold settings or a run's options: the settings package, and the
#: engine's view of a run (which holds the engine's section whole).
SETTINGS_MODULES = ("settings/", "dispatch/options.py")


def _default_of(value: ast.expr, sections: Collection[str]) -> str | None:
    """The default a field's value writes (``= 60.0``, ``Field(60.0, …)``,
    ``Field(default=…)``, ``field(default_factory=…)``), as source; None when it writes
    none, only ``None`` (no value chosen), or a section's class (its own defaults)."""
    if isinstance(value, ast.Call) and _names(value.func)[-1:] in (["Field"], ["field"]):
        given = [k.value for k in value.keywords if k.arg in ("default", "default_factory")]
        value = (value.args or given or [ast.Constant(None)])[0]
    if isinstance(value, ast.Constant) and value.value in (None, ...):
        return None
    if isinstance(value, ast.Name) and value.id in sections:
        return None
    return ast.unparse(value)


def _classes(tree: ast.AST) -> list[ast.ClassDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]


def field_defaults(tree: ast.AST, where: str,
                   sections: Collection[str] = ()) -> dict[str, list[str]]:
    """Field name → where a class of ``tree`` writes a default for it
    (``settings/engine.py:EngineSettings.bulk_max = 1000``)."""
    found: dict[str, list[str]] = defaultdict(list)
    for cls in _classes(tree):
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                    and stmt.value is not None and stmt.target.id != "model_config":
                default = _default_of(stmt.value, sections)
                if default is not None:
                    found[stmt.target.id].append(
                        f"{where}:{cls.name}.{stmt.target.id} = {default}")
    return found


def settings_tables(trees: Mapping[str, ast.AST]) -> dict[str, str]:
    """The modules of the settings file's tables (``[senders]``, ``[dashboard]``, …): each
    names its own keys. Found as the modules of the classes of ``Settings``' fields, but
    for ``engine``, whose keys are flat (the file's top level)."""
    where = {c.name: rel for rel, tree in trees.items() for c in _classes(tree)}
    settings = next(c for c in _classes(trees["settings/load.py"]) if c.name == "Settings")
    return {rel: rel for stmt in settings.body if isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name) and stmt.target.id != "engine"
            and isinstance(stmt.annotation, ast.Name)
            and (rel := where.get(stmt.annotation.id, "")).startswith("settings/")}


def test_the_settings_defaults_are_each_written_once() -> None:
    trees = {rel: ast.parse(path.read_text("utf-8")) for path, _ in _modules()
             if (rel := path.relative_to(ROOT).as_posix()).startswith(SETTINGS_MODULES)}
    assert "settings/load.py" in trees, "Settings is not in scheduler/settings/load.py"
    tables = settings_tables(trees)
    sections = {c.name for tree in trees.values() for c in _classes(tree)}
    defaults: dict[tuple[str, str], list[str]] = defaultdict(list)
    for rel, tree in trees.items():
        for name, places in field_defaults(tree, rel, sections).items():
            defaults[tables.get(rel, "top level"), name] += places
    twice = {name: places for (_, name), places in defaults.items() if len(places) > 1}
    assert not twice, f"a setting's default written more than once: {twice}"
    assert ("top level", "bulk_max") in defaults and "settings/senders.py" in tables
    stray = [p.relative_to(ROOT).as_posix() for p in ROOT.glob("*.py")
             if p.stem in ("config", "engine_settings", "dashboard_settings", "sender_care",
                           "run_options", "recycle_options")]
    assert not stray, f"settings outside scheduler/settings/: {stray}"
    # the engine's own knobs (issue 33: six defaults of DispatchOptions nobody could set)
    # are settings of the engine, beside the others
    assert {("top level", k) for k in ENGINE_KNOBS} <= set(defaults), ENGINE_KNOBS
    chosen = [place for rel, tree in trees.items() if not rel.startswith("settings/")
              for places in field_defaults(tree, rel, sections).values() for place in places
              if own_choice(place.split(" = ", 1)[1])]
    assert not chosen, f"defaults chosen outside scheduler/settings/ (read them from it): {chosen}"


#: The engine's knobs that ``DispatchOptions`` used to write itself.
ENGINE_KNOBS = ("send_max_attempts", "send_backoff_base_s", "send_backoff_cap_s",
                "send_concurrency", "sender_cooloff_s", "sender_failure_threshold")


def own_choice(default: str) -> bool:
    """Whether a default (as source) chooses a value of its own: a number or a word written
    there, not nothing (``False``, ``0``, empty) nor a value read from a name of the settings
    (``parse_rate(DEFAULT_RATE)``)."""
    return any(isinstance(n, ast.Constant) and n.value not in (None, False, 0, "", ...)
               for n in ast.walk(ast.parse(default, mode="eval")))


def reflection_copies(tree: ast.AST) -> list[int]:
    """Lines of loops over a class's fields (``fields(X)``, ``X.model_fields``) that read
    each field's value with ``getattr``: a copy of one class's fields into another."""
    def over_fields(node: ast.expr) -> bool:
        return any((isinstance(n, ast.Attribute) and n.attr == "model_fields")
                   or (isinstance(n, ast.Call) and _names(n.func)[-1:] == ["fields"])
                   for n in ast.walk(node))

    lines = []
    for node in ast.walk(tree):
        loops = ([node.iter] if isinstance(node, ast.For)
                 else [g.iter for g in node.generators]
                 if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp,
                                      ast.GeneratorExp)) else [])
        if any(over_fields(i) for i in loops) and any(
                isinstance(n, ast.Call) and _names(n.func) == ["getattr"]
                for n in ast.walk(node)):
            lines.append(node.lineno)
    return lines


def test_no_settings_copied_field_by_field() -> None:
    copies = {path.relative_to(ROOT).as_posix(): lines for path, _ in _modules()
              if (lines := reflection_copies(ast.parse(path.read_text("utf-8"))))}
    assert not copies, f"fields copied by reflection (hold the section instead): {copies}"


def test_the_settings_checks_see_defaults_and_copies() -> None:
    source = ("class A:\n    x: int = 1\n    y: int | None = None\n"
              "    z: float = Field(2.0, gt=0)\n    w: dict = Field(default_factory=dict)\n"
              "    s: S = Field(default_factory=S)\n"
              "class B:\n    x: int = 1\n    v: int = field(default=3)\n    u: int\n")
    found = field_defaults(ast.parse(source), "m.py", {"S"})
    assert found == {"x": ["m.py:A.x = 1", "m.py:B.x = 1"], "z": ["m.py:A.z = 2.0"],
                     "w": ["m.py:A.w = dict"], "v": ["m.py:B.v = 3"]}
    copying = ("def engine(self):\n    values = {}\n"
               "    for f in fields(EngineSettings):\n"
               "        values[f.name] = getattr(self, f.name)\n"
               "    return {n: getattr(s, n) for n in EngineSettings.model_fields}\n"
               "names = {n.upper() for n in Settings.model_fields}\n")
    assert reflection_copies(ast.parse(copying)) == [3, 5]
    assert [own_choice(d) for d in ("5", "60.0", "'x'", "parse_rate(DEFAULT_RATE)", "False",
                                    "(0.0,)", "EngineSettings", "dict")] == [
        True, True, True, False, False, False, False, False]


# ------------------------------------------------------------------ the documents cited

#: Documents the code may cite that live outside the repository: the service's contract.
EXTERNAL_DOCUMENTS = frozenset({"service-interface.md"})
#: The docs site's pages written at build time (``docs/hooks/reference.py``).
GENERATED_PAGES = "reference/"


def cited_documents(text: str) -> list[str]:
    """The Markdown files a text names (``docs/service-facts.md``, ``DESIGN.md``)."""
    return re.findall(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.md)\b", text)


def test_every_document_the_code_cites_is_in_the_repository() -> None:
    """A module, or a README beside the code, cites a document by a path from the
    repository's root (``docs/service-facts.md``) or beside itself; each exists (issue 33:
    21 citations of ``service-facts.md`` and ``DESIGN.md`` pointed outside the repo)."""
    repo = ROOT.parent
    missing = []
    sources = [*ROOT.rglob("*.py"), *ROOT.rglob("README.md"), repo / "benchmarks" / "README.md",
               *(repo / "benchmarks").glob("*.py")]
    for path in sources:
        for name in cited_documents(path.read_text(encoding="utf-8")):
            if name in EXTERNAL_DOCUMENTS or name.startswith(GENERATED_PAGES) \
                    or (repo / name).is_file() \
                    or (path.parent / name).is_file() or (repo / "docs" / name).is_file():
                continue
            missing.append(f"{path.relative_to(repo)}: {name}")
    assert cited_documents("see ``docs/service-facts.md`` and DESIGN.md, not a.mdx") == [
        "docs/service-facts.md", "DESIGN.md"]
    assert not missing, "documents cited that are not in the repository:\n" + "\n".join(missing)


#: The packages of the engine and below it: they say times in words
#: (``core/time_words.py``) but never print to a terminal.
ENGINE_PACKAGES = ("dispatch", "ledger", "tracking", "campaign", "service", "settings")


def test_the_engine_imports_no_terminal_text() -> None:
    """Terminal text (``core/display.py``: escaping for rich, tables) is for the commands and
    the views; the engine's notes say times through ``core/time_words.py`` (issue 33: eight
    engine modules imported the terminal's module for its times)."""
    edges = module_imports(every_import=True)
    assert ("scheduler.commands.preview", "scheduler.core.display") in edges  # it sees them
    found = sorted(f"{a} ({sites[0]})" for (a, b), sites in edges.items()
                   if b == "scheduler.core.display" and _unit(a) in ENGINE_PACKAGES)
    assert not found, "the engine imports terminal text:\n" + "\n".join(found)
