"""Templates: a sandboxed Jinja2 environment, compiled once, and a fast path for the common case.

Every string of a step is a template. The environment is
:class:`jinja2.sandbox.SandboxedEnvironment` with :class:`jinja2.StrictUndefined` (a missing
variable is an error, not an empty string) and no autoescaping (messages are not HTML).

Fast path: most campaign templates are text with ``{{ name }}`` and ``{{ name|filter(…) }}``
only. Such a template is also compiled into a list of constants and (variable, filters)
pairs that renders several times faster than Jinja's generic machinery, with the same
output (``str()`` of each value, as Jinja does without autoescape). Only our own filters and
a few plain built-ins qualify; attribute access, tests, loops or a name the row does not
have fall back to Jinja itself, so the sandbox and the error messages stay Jinja's.

Jinja2 errors are translated here into :mod:`scheduler.campaign.exceptions` classes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import SandboxedEnvironment, SecurityError

from scheduler.campaign.exceptions import (
    Issue,
    SandboxViolationError,
    TemplateError,
    TemplateNotFoundError,
    TemplateSyntaxError,
    UndefinedVariableError,
)
from scheduler.campaign.filters import FILTERS
from scheduler.campaign.render_bounds import BoundedSandbox, RenderBoundError, RenderLimits
from scheduler.campaign.templatefiles import CampaignLoader, not_found_message
from scheduler.links.render import Linker, link_addresses

_PLAIN_BUILTINS = ("upper", "lower", "title", "capitalize", "trim")
_TEMPLATE_MARKERS = ("{{", "{%", "{#")
#: Filters that always return a ``str`` (ours, :mod:`scheduler.campaign.filters`).
_RETURN_STR = frozenset(FILTERS.values())


def make_environment(folders: Sequence[Path] = (),
                     limits: RenderLimits | None = None,
                     linker: Linker | None = None) -> BoundedSandbox:
    """The sandboxed environment every campaign template is compiled in; template files
    are found in ``folders`` (see :mod:`scheduler.campaign.templatefiles`), every render
    keeps within ``limits`` (see :mod:`scheduler.campaign.render_bounds`), and ``link()``
    is ``linker`` (tracked links, :mod:`scheduler.links.render`; unbound by default)."""
    env = BoundedSandbox(
        limits=limits,
        loader=CampaignLoader(folders) if folders else None,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        auto_reload=False,
    )
    env.filters.update(FILTERS)
    env.globals["link"] = linker if linker is not None else Linker()
    return env


def linker_of(env: jinja2.Environment) -> Linker:
    """The ``link()`` of an environment made by :func:`make_environment`."""
    found = env.globals.get("link")
    assert isinstance(found, Linker), "not an environment of make_environment"
    return found


def is_template(value: str) -> bool:
    """Whether a string has Jinja syntax (plain strings are used as they are)."""
    return any(marker in value for marker in _TEMPLATE_MARKERS)


class _Fallback(Exception):
    """The fast path cannot render this row; Jinja will."""


Part = str | tuple[str, tuple[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]], ...]]


def _fast_expr(node: nodes.Node, env: SandboxedEnvironment) -> Part | None:
    chain: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []
    while isinstance(node, nodes.Filter):
        fn = env.filters.get(node.name)
        plain = node.name in FILTERS or node.name in _PLAIN_BUILTINS
        if fn is None or not plain or getattr(fn, "jinja_pass_arg", None) is not None:
            return None
        if node.dyn_args or node.dyn_kwargs:
            return None
        args: list[Any] = []
        for arg in node.args:
            if not isinstance(arg, nodes.Const):
                return None
            args.append(arg.value)
        kwargs: dict[str, Any] = {}
        for pair in node.kwargs:  # Keyword nodes (jinja2 annotates them as Pair)
            if not isinstance(pair, nodes.Keyword) or not isinstance(pair.value, nodes.Const):
                return None
            kwargs[pair.key] = pair.value.value
        chain.append((fn, tuple(args), kwargs))
        if node.node is None:  # a {% filter %} block
            return None
        node = node.node
    if isinstance(node, nodes.Const) and not chain:
        return str(node.value)
    if isinstance(node, nodes.Name) and node.ctx == "load":
        return (node.name, tuple(reversed(chain)))
    return None


def _bind(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable:
    """``fn`` with its constant arguments bound, memoised on the value (filters are pure, and
    names, dates and amounts repeat a lot in a campaign). An unhashable value raises
    ``TypeError``, which sends the row to Jinja. Without constant arguments the filter
    itself is memoised (no wrapper to call on each miss)."""
    if not args and not kwargs:
        return lru_cache(maxsize=8192, typed=True)(fn)
    return lru_cache(maxsize=8192, typed=True)(lambda value: fn(value, *args, **kwargs))


class FastTemplate:
    """Constants and (variable, filter chain) pairs; same output as the Jinja template.

    The parts are compiled once into one Python function that concatenates constants
    (``repr``-quoted) and filtered ``ctx[name]`` look-ups; a missing name raises
    :class:`_Fallback` so Jinja renders that row instead.
    """

    __slots__ = ("_body", "_namespace", "parts", "render")

    def __init__(self, parts: list[Part]) -> None:
        self.parts = parts
        namespace: dict[str, Any] = {"_Fallback": _Fallback}
        self._namespace = namespace
        exprs: list[str] = []
        for i, part in enumerate(parts):
            if isinstance(part, str):
                exprs.append(repr(part))
                continue
            name, chain = part
            expr = f"ctx[{name!r}]"
            for j, (fn, args, kwargs) in enumerate(chain):
                namespace[f"_f{i}_{j}"] = _bind(fn, args, kwargs)
                expr = f"_f{i}_{j}({expr})"
            # our filters return a str: only a bare name (or a built-in's result) needs str()
            exprs.append(expr if chain and chain[-1][0] in _RETURN_STR else f"str({expr})")
        self._body = f"''.join(({', '.join(exprs)},))" if exprs else "''"
        #: Render with ``ctx``; raises :class:`_Fallback` when a name is missing.
        self.render: Callable[[dict[str, Any]], str] = self._compile(
            "    except (KeyError, TypeError):\n        raise _Fallback from None\n"
        )

    def _compile(self, handlers: str, **names: Any) -> Callable[[dict[str, Any]], str]:
        namespace = {**self._namespace, **names}
        source = f"def render(ctx):\n    try:\n        return {self._body}\n{handlers}"
        exec(compile(source, "<fast-template>", "exec"), namespace)
        return namespace["render"]

    def bound(
        self, fallback: Callable[[dict[str, Any]], str], translate: Callable[[Exception], Exception]
    ) -> Callable[[dict[str, Any]], str]:
        """A render function that hands rows it cannot do to ``fallback`` (Jinja) and turns
        a filter's exception into ``translate(exc)``: one call per leaf on the hot path."""
        return self._compile(
            "    except (KeyError, TypeError):\n        return _fallback(ctx)\n"
            "    except Exception as exc:\n        raise _translate(exc) from None\n",
            _fallback=fallback,
            _translate=translate,
        )

    @classmethod
    def build(cls, ast: nodes.Template, env: SandboxedEnvironment) -> FastTemplate | None:
        """A fast template for ``ast``, or ``None`` when it uses anything beyond the subset."""
        parts: list[Part] = []
        for stmt in ast.body:
            if not isinstance(stmt, nodes.Output):
                return None
            for node in stmt.nodes:
                if isinstance(node, nodes.TemplateData):
                    parts.append(node.data)
                    continue
                part = _fast_expr(node, env)
                if part is None:
                    return None
                parts.append(part)
        return cls(parts)


def template_line(exc: BaseException, filename: str | None) -> int | None:
    """The template line an error was raised at (Jinja puts template frames in tracebacks)."""
    line = None
    tb = exc.__traceback__
    name = filename or "<template>"
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == name:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


@dataclass
class Leaf:
    """One templated string of a step: where it is, where it came from, how to render it.

    ``line`` is where the string starts in the campaign file, for inline templates (their
    errors name the campaign file); a template file's errors name the file and its line.
    """

    key: str
    file: str
    template: jinja2.Template
    fast: FastTemplate | None
    variables: frozenset[str]
    line: int | None = None
    #: Its ``link()`` calls' addresses, in order: quoted ones, ``None`` for any other
    #: (tracked links, :func:`scheduler.links.render.link_addresses`).
    links: tuple[str | None, ...] = ()
    #: ``render(ctx)``: the rendered string; Jinja errors become campaign ``TemplateError``
    #: classes. The hot path: one generated function per leaf, else Jinja's template.
    render: Callable[[dict[str, Any]], str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.render = (self._jinja if self.fast is None
                       else self.fast.bound(self._jinja, self._error))

    def _jinja(self, ctx: dict[str, Any]) -> str:
        env = self.template.environment
        try:
            if isinstance(env, BoundedSandbox):
                with env.rendering():
                    return self.template.render(ctx)
            return self.template.render(ctx)
        except Exception as exc:
            raise self._error(exc) from None

    def _where(self, exc: Exception) -> int | None:
        found = template_line(exc, self.template.filename)
        if self.line is None:
            return found
        return self.line + (found - 1 if found else 0)

    def _error(self, exc: Exception) -> TemplateError:
        line = self._where(exc)
        if isinstance(exc, RecursionError):
            exc = RenderBoundError("template calls nested too deep (a macro or include that "
                                   "calls itself?)", "bounds.render_max_depth")
        if isinstance(exc, RenderBoundError):
            return TemplateError(Issue(self.file, str(exc), key=self.key, line=line))
        if isinstance(exc, SecurityError):
            return SandboxViolationError(
                Issue(self.file, f"sandbox violation: {exc}", key=self.key, line=line)
            )
        if isinstance(exc, jinja2.UndefinedError):
            return UndefinedVariableError(
                Issue(self.file, f"undefined variable: {exc.message}", key=self.key, line=line)
            )
        text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return TemplateError(Issue(self.file, f"cannot render: {text}", key=self.key, line=line))


def _syntax_issue(
    exc: jinja2.TemplateSyntaxError, file: str, key: str, base: int | None = None
) -> Issue:
    line = exc.lineno if base is None else base + max(exc.lineno - 1, 0)
    return Issue(file, f"template syntax error: {exc.message}", key=key, line=line)


def compile_leaf(
    env: SandboxedEnvironment, source: str, *, key: str, file: str, line: int | None = None
) -> Leaf:
    """Compile an inline template string (``file`` is the campaign file, ``line`` where the
    string starts in it, for messages)."""
    try:
        ast = env.parse(source)
        template = env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateSyntaxError(_syntax_issue(exc, file, key, line)) from None
    return Leaf(
        key,
        file,
        template,
        FastTemplate.build(ast, env),
        frozenset(meta.find_undeclared_variables(ast)),
        line,
        tuple(link_addresses(ast)),
    )


def compile_file_leaf(
    env: SandboxedEnvironment,
    name: str,
    *,
    key: str,
    campaign_file: str,
    line: int | None = None,
) -> Leaf:
    """Compile a template file (found as :mod:`scheduler.campaign.templatefiles` says);
    ``line`` is where the campaign file names it."""
    loader = env.loader
    try:
        if loader is None:
            raise jinja2.TemplateNotFound(name)
        source, filename, _ = loader.get_source(env, name)
    except jinja2.TemplateNotFound:
        raise TemplateNotFoundError(
            Issue(campaign_file, not_found_message(loader, name), key=key, line=line)
        ) from None
    except TemplateError as exc:  # not UTF-8: said where the campaign file names it
        raise TemplateError(Issue(campaign_file, f"template file {name!r}: "
                                  f"{exc.issues[0].message}", key=key, line=line)) from None
    display = str(Path(filename or name))
    try:
        ast = env.parse(source, name, filename)
        template = env.get_template(name)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateSyntaxError(_syntax_issue(exc, display, key)) from None
    return Leaf(
        key,
        display,
        template,
        FastTemplate.build(ast, env),
        frozenset(meta.find_undeclared_variables(ast)),
        links=tuple(link_addresses(ast)),
    )


class EmptyRender(Exception):
    """A required templated field rendered empty (see :func:`compile_tree`)."""


def _non_empty(render: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
    def call(ctx: dict[str, Any]) -> str:
        """Render; an empty result raises :class:`EmptyRender`."""
        value = render(ctx)
        if not value:
            raise EmptyRender
        return value

    return call


def compile_tree(
    node: Any, required: frozenset[int] = frozenset()
) -> Callable[[dict[str, Any]], Any]:
    """A function of ``ctx`` that builds a fresh copy of ``node`` with every leaf rendered.

    Leaves whose ``id`` is in ``required`` raise :class:`EmptyRender` when they render empty.
    """
    if isinstance(node, Leaf):
        return _non_empty(node.render) if id(node) in required else node.render
    if isinstance(node, dict):
        items = [(key, compile_tree(value, required)) for key, value in node.items()]
        if len(items) == 1:
            ((key0, fn0),) = items
            return lambda ctx: {key0: fn0(ctx)}
        return lambda ctx: {key: fn(ctx) for key, fn in items}
    if isinstance(node, list):
        fns = [compile_tree(value, required) for value in node]
        return lambda ctx: [fn(ctx) for fn in fns]
    return lambda _ctx: node


def render_tree(node: Any, ctx: dict[str, Any]) -> Any:
    """A fresh copy of ``node`` with every :class:`Leaf` rendered with ``ctx``."""
    if isinstance(node, Leaf):
        return node.render(ctx)
    if isinstance(node, dict):
        return {key: render_tree(value, ctx) for key, value in node.items()}
    if isinstance(node, list):
        return [render_tree(value, ctx) for value in node]
    return node


def placeholder_tree(node: Any, target: Leaf | None = None, value: str = "0") -> Any:
    """``node`` with every :class:`Leaf` replaced by ``"0"`` (``target`` by ``value``)."""
    if isinstance(node, Leaf):
        return value if node is target else "0"
    if isinstance(node, dict):
        return {key: placeholder_tree(v, target, value) for key, v in node.items()}
    if isinstance(node, list):
        return [placeholder_tree(v, target, value) for v in node]
    return node


def leaves(node: Any) -> list[Leaf]:
    """Every :class:`Leaf` of a tree, in order."""
    if isinstance(node, Leaf):
        return [node]
    values = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return [leaf for value in values for leaf in leaves(value)]
