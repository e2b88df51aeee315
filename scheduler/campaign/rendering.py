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

from collections.abc import Callable
from dataclasses import dataclass
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

_PLAIN_BUILTINS = ("upper", "lower", "title", "capitalize", "trim")
_TEMPLATE_MARKERS = ("{{", "{%", "{#")


def make_environment(templates_dir: Path | None = None) -> SandboxedEnvironment:
    """The sandboxed environment every campaign template is compiled in."""
    env = SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(templates_dir)) if templates_dir else None,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        auto_reload=False,
    )
    env.filters.update(FILTERS)
    return env


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
        if not all(isinstance(a, nodes.Const) for a in node.args):
            return None
        if not all(isinstance(k.value, nodes.Const) for k in node.kwargs):
            return None
        args = tuple(a.value for a in node.args)
        kwargs = {k.key: k.value.value for k in node.kwargs}
        chain.append((fn, args, kwargs))
        node = node.node  # type: ignore[assignment]
    if isinstance(node, nodes.Const) and not chain:
        return str(node.value)
    if isinstance(node, nodes.Name) and node.ctx == "load":
        return (node.name, tuple(reversed(chain)))
    return None


class FastTemplate:
    """Constants and (variable, filter chain) pairs; same output as the Jinja template."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[Part]) -> None:
        self.parts = parts

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

    def render(self, ctx: dict[str, Any]) -> str:
        """Render with ``ctx``; raises :class:`_Fallback` when a name is missing."""
        out = []
        for part in self.parts:
            if type(part) is str:
                out.append(part)
                continue
            name, chain = part
            try:
                value = ctx[name]
            except KeyError:
                raise _Fallback from None
            for fn, args, kwargs in chain:
                value = fn(value, *args, **kwargs)
            out.append(value if type(value) is str else str(value))
        return "".join(out)


@dataclass
class Leaf:
    """One templated string of a step: where it is, where it came from, how to render it."""

    key: str
    file: str
    template: jinja2.Template
    fast: FastTemplate | None
    variables: frozenset[str]

    def render(self, ctx: dict[str, Any]) -> str:
        """The rendered string; Jinja errors become campaign ``TemplateError`` classes."""
        if self.fast is not None:
            try:
                return self.fast.render(ctx)
            except _Fallback:
                pass
            except Exception as exc:  # a filter refused the row's value
                raise self._error(exc) from None
        try:
            return self.template.render(ctx)
        except Exception as exc:
            raise self._error(exc) from None

    def _error(self, exc: Exception) -> TemplateError:
        if isinstance(exc, SecurityError):
            return SandboxViolationError(
                Issue(self.file, f"sandbox violation: {exc}", key=self.key)
            )
        if isinstance(exc, jinja2.UndefinedError):
            return UndefinedVariableError(
                Issue(self.file, f"undefined variable: {exc.message}", key=self.key)
            )
        text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return TemplateError(Issue(self.file, f"cannot render: {text}", key=self.key))


def _syntax_issue(exc: jinja2.TemplateSyntaxError, file: str, key: str) -> Issue:
    return Issue(file, f"template syntax error: {exc.message}", key=key, line=exc.lineno)


def compile_leaf(
    env: SandboxedEnvironment, source: str, *, key: str, file: str
) -> Leaf:
    """Compile an inline template string (``file`` is the campaign file, for messages)."""
    try:
        ast = env.parse(source)
        template = env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateSyntaxError(_syntax_issue(exc, file, key)) from None
    return Leaf(key, file, template, FastTemplate.build(ast, env),
                frozenset(meta.find_undeclared_variables(ast)))  # fmt: skip


def compile_file_leaf(
    env: SandboxedEnvironment, name: str, *, key: str, campaign_file: str
) -> Leaf:
    """Compile a template file of ``templates/`` (named relative to that folder)."""
    loader = env.loader
    try:
        if loader is None:
            raise jinja2.TemplateNotFound(name)
        source, filename, _ = loader.get_source(env, name)
    except jinja2.TemplateNotFound:
        raise TemplateNotFoundError(
            Issue(campaign_file, f"template file {name!r} not found under templates/", key=key)
        ) from None
    display = str(Path(filename or name))
    try:
        ast = env.parse(source, name, filename)
        template = env.get_template(name)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateSyntaxError(_syntax_issue(exc, display, key)) from None
    return Leaf(key, display, template, FastTemplate.build(ast, env),
                frozenset(meta.find_undeclared_variables(ast)))  # fmt: skip


def render_tree(node: Any, ctx: dict[str, Any]) -> Any:
    """A fresh copy of ``node`` with every :class:`Leaf` rendered with ``ctx``."""
    if isinstance(node, Leaf):
        return node.render(ctx)
    if isinstance(node, dict):
        return {key: render_tree(value, ctx) for key, value in node.items()}
    if isinstance(node, list):
        return [render_tree(value, ctx) for value in node]
    return node


def placeholder_tree(node: Any) -> Any:
    """``node`` with every :class:`Leaf` replaced by ``"0"``, to check a step's shape early."""
    if isinstance(node, Leaf):
        return "0"
    if isinstance(node, dict):
        return {key: placeholder_tree(value) for key, value in node.items()}
    if isinstance(node, list):
        return [placeholder_tree(value) for value in node]
    return node
