"""docs/architecture.md names only what exists: every file and folder it cites, every
``scheduler.x.y`` module, every ``Class.member`` or ``module.name`` of the package and every
class name (read from the page's backticked spans, checked against the code)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import textwrap
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Table

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "architecture.md"
#: Where a file or folder the page names may live (it often names them from their package:
#: ``runs.py``, ``channels/whatsapp.py``).
TREES = ("scheduler", "tests", "benchmarks", "docs", "scripts")

_SPAN = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"^[\w.-]+(/[\w.-]+)*(\.py|/)$")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_CLASS = re.compile(r"^_?[A-Z][a-z0-9]+[A-Z]?\w*$")  # CamelCase: Ledger, ServiceCalls


def spans(text: str) -> list[str]:
    """The backticked spans of ``text``, a call's arguments dropped
    (``channels.channel_for(name, options)`` → ``channels.channel_for``)."""
    return [re.sub(r"\(.*\)$", "", span.strip()) for span in _SPAN.findall(text)]


@cache
def index() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(modules by their last name, modules defining each top-level name) of the package,
    read with ``ast`` (``limits`` → ``scheduler.dispatch.limits``; ``SenderPool`` →
    ``scheduler.dispatch.senders``)."""
    modules: dict[str, list[str]] = defaultdict(list)
    names: dict[str, list[str]] = defaultdict(list)
    root = REPO / "scheduler"
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        dotted = ".".join(parts)
        modules[parts[-1]].append(dotted)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names[node.name].append(dotted)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update({t.id: [*names[t.id], dotted] for t in targets
                              if isinstance(t, ast.Name)})
    return dict(modules), dict(names)


def _instance_attributes(cls: type) -> set[str]:
    """The ``self.name = …`` attributes the methods of ``cls`` and its bases set."""
    found: set[str] = set()
    for base in cls.__mro__:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(base)))
        except (OSError, TypeError):  # a builtin or a class made at run time
            continue
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            found.update(t.attr for t in targets if isinstance(t, ast.Attribute)
                         and isinstance(t.value, ast.Name) and t.value.id == "self")
    return found


def has_member(owner: Any, member: str) -> bool:
    """Whether ``owner`` (a module, class or table) has ``member``: an attribute, a field of
    a dataclass or pydantic model, an annotated attribute of it or its bases, an attribute
    its methods set on ``self``, or a column of a table (``deliveries.worker``)."""
    if hasattr(owner, member):
        return True
    if isinstance(owner, Table):
        return member in owner.c
    if not isinstance(owner, type):
        return False
    if dataclasses.is_dataclass(owner) and member in {f.name for f in dataclasses.fields(owner)}:
        return True
    if member in getattr(owner, "model_fields", {}):
        return True
    if any(member in getattr(base, "__annotations__", {}) for base in owner.__mro__):
        return True
    return member in _instance_attributes(owner)


def _resolve(dotted: str) -> Any:
    """The object ``scheduler.a.b.Name.member`` names: the longest importable module
    prefix, then attributes (a missing one raises ``AttributeError``)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for i, part in enumerate(parts[cut:], start=cut):
            if not has_member(found, part):
                raise AttributeError(f"{'.'.join(parts[:i])} has no {part}")
            found = getattr(found, part, None)
        return found
    raise ModuleNotFoundError(dotted)


def problem(span: str) -> str | None:
    """Why ``span`` names nothing that exists, or ``None`` (also for spans that are no
    name of the code: commands, events, tables, settings)."""
    modules, names = index()
    if _PATH.match(span):
        if (REPO / span).exists():
            return None
        wanted = span.rstrip("/")
        kind = "is_dir" if span.endswith("/") else "is_file"
        for tree in TREES:
            for path in (REPO / tree).rglob(Path(wanted).name):
                if path.as_posix().endswith("/" + wanted) and getattr(path, kind)():
                    return None
        return "no such file or folder"
    if span.startswith("scheduler.") and _DOTTED.match(span):
        try:
            _resolve(span)
        except (ModuleNotFoundError, AttributeError) as exc:
            return str(exc)
        return None
    if _DOTTED.match(span):
        head, *rest = span.split(".")
        owners = [f"{m}.{head}" for m in names.get(head, [])] + modules.get(head, [])
        if not owners:
            return "no module or class of that name" if _CLASS.match(head) else None
        errors = []
        for owner in owners:
            try:
                _resolve(".".join([owner, *rest]))
                return None
            except (ModuleNotFoundError, AttributeError) as exc:
                errors.append(str(exc))
        return "; ".join(errors)
    if _CLASS.match(span) and span not in names:
        return "no class or name of that name in scheduler"
    return None


def test_every_name_the_architecture_page_cites_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    cited = spans(text)
    assert len(cited) > 100  # it reads the page
    broken = sorted({f"`{span}`: {why}" for span in cited if (why := problem(span))})
    assert not broken, "docs/architecture.md cites what does not exist:\n" + "\n".join(broken)


def test_the_checker_tells_real_names_from_made_up_ones() -> None:
    real = ["scheduler/core/units.py", "ledger/queries/leases.py", "channels/whatsapp.py",
            "service/", "tests/factories.py", "scheduler.dispatch.retry", "SenderPool",
            "scheduler.settings.load.Settings.service_endpoint", "Settings.service_endpoint",
            "SenderState.call_until", "limits.follow_sender_calls", "cli.COMMAND_MODULES",
            "EngineSettings.bulk_max", "SenderPool.held", "deliveries.worker",
            "messages.sent", "campaign run FILE", "--new-run"]
    assert {span: problem(span) for span in real} == dict.fromkeys(real)
    made_up = ["scheduler/nowhere.py", "channels/telegram.py", "nowhere/",
               "scheduler.dispatch.nowhere", "scheduler.settings.load.Settings.nothing",
               "Settings.nothing", "limits.nothing", "SenderPoolz", "Nowhere.thing",
               "SenderPool.nothing", "deliveries.nothing"]
    assert [span for span in made_up if problem(span) is None] == []
    assert spans("`channels.channel_for(name, options)` and `Ledger.read()`") == [
        "channels.channel_for", "Ledger.read"]


def test_the_packages_table_names_every_package_and_loose_module() -> None:
    """The page's table of packages leaves none out (``views/``, ``sender_care.py``, ...)."""
    page = PAGE.read_text(encoding="utf-8")
    table = "\n".join(line for line in page.splitlines() if line.startswith("| `"))
    root = REPO / "scheduler"
    packages = [p.parent.name for p in root.glob("*/__init__.py")]
    modules = [p.name for p in root.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    left_out = ([f"{name}/" for name in packages if f"`{name}/`" not in table]
                + [name for name in modules if f"{name}`" not in table])
    assert not left_out, f"docs/architecture.md's packages table leaves out {left_out}"


WALK = "### The files one WhatsApp delivery passes through"


def walk_files(page: str) -> tuple[list[str], int]:
    """The files the page's walk of one WhatsApp delivery names (each once, in order), and
    the count it states (``**29 files**``)."""
    section = page.split(WALK, 1)[1].split("\n#", 1)[0]
    steps, _, after = section.partition("\n\n**")
    files = list(dict.fromkeys(s for s in spans(steps) if s.endswith(".py")))
    stated = re.match(r"(\d+) files\*\*", after)
    assert stated is not None, "the walk states no count of its files"
    return files, int(stated.group(1))


def test_the_walk_of_one_delivery_counts_the_files_it_names() -> None:
    """The page walks one WhatsApp delivery from ``campaign run`` to the send and back
    through the webhook; the count it states is the count of files it names, and every
    one is a module of the package (the names checker sees them too)."""
    files, stated = walk_files(PAGE.read_text(encoding="utf-8"))
    assert files[:2] == ["cli.py", "commands/run.py"] and "service/client.py" in files
    assert stated == len(files), f"the walk names {len(files)} files, says {stated}"
    missing = [f for f in files if not (REPO / "scheduler" / f).is_file()]
    assert not missing, f"the walk names files that are not in scheduler/: {missing}"
