"""Bounds on what one template may cost when it renders: time, output, loops, nesting.

Jinja2's sandbox stops unsafe attribute access and a single ``range()`` over 100,000
items, but not a template that is merely expensive: ``{{ 'x' * 2000000000 }}`` allocates
2 GB (at compile time, by constant folding), two nested loops of 99,999 spin for hours, a
macro that calls itself twice per level never ends. A marketing team edits templates by
hand, so a typo must cost one error line, not a hung worker. :class:`BoundedSandbox`
enforces, per template and row (``[bounds]`` in the campaign, :class:`RenderLimits`):

- ``render_max_bytes``: the output a render may produce (UTF-8 bytes), counted as it is
  produced, in macros and ``{% set %}`` blocks too; a string, list or number an operator,
  filter or method would build over it is refused *before* it is built (``*``, ``+``,
  ``~``, ``%``, ``**``, ``center``, ``indent``, ``format``, ``join``, ``replace``, …);
- ``render_max_loops``: loop iterations in all, every ``{% for %}`` counted (a list that
  grows past it is refused too);
- ``render_max_depth``: calls nested in each other (a recursive macro);
- ``render_max_ms``: wall time, checked at every loop step, call, operator and output.

A breach raises :class:`RenderBoundError`, which the rendering layer reports with the
file, line, row and the bound's name. The checks are compiled into the template (the AST
is rewritten before code generation), so a template on the plan's fast path (plain
``{{ name|filter }}``) pays nothing. A call that never returns escapes every bound; the
planner's own time limit (``scheduler.usecases.plan_process``) covers that.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from jinja2 import nodes, pass_context
from jinja2.filters import FILTERS as JINJA_FILTERS
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum

from scheduler.core.timeutil import monotonic

_LOOP = "_bounded_loop"
_CHARGE = "_bounded_output"
_JOIN = "_bounded_concat"
#: The largest integer an operator may build (bits): far past any amount or count, far
#: short of a number whose arithmetic takes seconds.
MAX_INT_BITS = 100_000


@dataclass(frozen=True)
class RenderLimits:
    """The bounds of one render (``[bounds]`` in the campaign file; see the module)."""

    max_bytes: int = 1_000_000
    max_loops: int = 100_000
    max_depth: int = 50
    max_ms: int = 2_000


class RenderBoundError(Exception):
    """A render broke one of its bounds; ``setting`` names it (``bounds.render_max_…``)."""

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(f"{message}; bound: {setting}")
        self.setting = setting


def _size(limit: int) -> str:
    if limit >= 1_000_000 and limit % 1_000_000 == 0:
        return f"{limit // 1_000_000} MB"
    if limit >= 1_000 and limit % 1_000 == 0:
        return f"{limit // 1_000} kB"
    return f"{limit:,} bytes"


@dataclass
class Budget:
    """What one render has spent so far, and its limits."""

    limits: RenderLimits
    deadline: float = field(init=False)
    produced: int = 0
    loops: int = 0
    depth: int = 0

    def __post_init__(self) -> None:
        self.deadline = monotonic() + self.limits.max_ms / 1000

    def tick(self) -> None:
        """Check the time budget."""
        if monotonic() > self.deadline:
            raise RenderBoundError(
                f"template took more than {self.limits.max_ms:,} ms", "bounds.render_max_ms")

    def size(self, n: int, what: str = "a value") -> None:
        """Refuse a string or list of ``n`` bytes or items before it is built."""
        if n > self.limits.max_bytes:
            raise RenderBoundError(
                f"template would build {what} of {n:,} bytes or items, more than "
                f"{_size(self.limits.max_bytes)}", "bounds.render_max_bytes")

    def charge(self, text: str) -> None:
        """Count output as it is produced (in UTF-8 bytes)."""
        self.produced += len(text) if text.isascii() else len(text.encode("utf-8", "replace"))
        if self.produced > self.limits.max_bytes:
            raise RenderBoundError(
                f"template produced more than {_size(self.limits.max_bytes)}",
                "bounds.render_max_bytes")
        self.tick()

    def step(self) -> None:
        """Count one loop iteration."""
        self.loops += 1
        if self.loops > self.limits.max_loops:
            raise RenderBoundError(
                f"template looped more than {self.limits.max_loops:,} times",
                "bounds.render_max_loops")
        if not self.loops & 0xFF:
            self.tick()

    def items(self, n: int) -> None:
        """Refuse a list, dict or set grown past the loop bound."""
        if n > self.limits.max_loops:
            raise RenderBoundError(
                f"template grew a list past {self.limits.max_loops:,} items",
                "bounds.render_max_loops")


_CURRENT: ContextVar[Budget | None] = ContextVar("render_budget", default=None)


class _Render:
    """A budget for one render (the one already running, if any: a nested render shares it)."""

    __slots__ = ("_budget", "_token")

    def __init__(self, limits: RenderLimits) -> None:
        self._budget = Budget(limits)
        self._token: Token[Budget | None] | None = None

    def __enter__(self) -> Budget:
        running = _CURRENT.get()
        if running is not None:
            return running
        self._token = _CURRENT.set(self._budget)
        return self._budget

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)


class BoundedSandbox(SandboxedEnvironment):
    """Jinja2's sandbox with :class:`RenderLimits` enforced (see the module)."""

    intercepted_binops = frozenset({"*", "+", "%", "**"})

    def __init__(self, *args: Any, limits: RenderLimits | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits or RenderLimits()
        self.filters.update(_bounded_filters(self))
        self.filters[_LOOP] = _loop_filter
        self.filters[_CHARGE] = _charge_filter
        self.filters[_JOIN] = _concat_filter
        self.globals["lipsum"] = self._lipsum

    def rendering(self) -> _Render:
        """``with env.rendering():`` around one render: its budget."""
        return _Render(self.limits)

    def budget(self) -> Budget:
        """The running render's budget (at compile time, a fresh one: constant folding)."""
        return _CURRENT.get() or Budget(self.limits)

    # -- the hooks Jinja's sandbox calls -------------------------------------------------

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """Refuse an operator whose result would break a bound, before computing it."""
        budget = self.budget()
        budget.tick()
        if operator == "*":
            _check_repeat(budget, left, right)
            _check_repeat(budget, right, left)
            if _is_int(left) and _is_int(right):
                _check_bits(budget, abs(left).bit_length() + abs(right).bit_length())
        elif operator == "+" and isinstance(left, str | list | tuple) and isinstance(
                right, str | list | tuple):
            budget.size(len(left) + len(right), "a value")
        elif operator == "%" and isinstance(left, str):
            _check_format(budget, left, right if isinstance(right, tuple | dict) else (right,))
        elif operator == "**" and _is_int(left) and _is_int(right) and right > 0:
            _check_bits(budget, int(right * math.log2(abs(left))) if abs(left) > 1 else 1)
        return super().call_binop(context, operator, left, right)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Count the call's nesting, check string methods that grow, and lists that grew."""
        budget = self.budget()
        budget.tick()
        target = getattr(obj, "__wrapped__", obj)  # str.format, wrapped by the sandbox
        owner = getattr(target, "__self__", None)
        if isinstance(owner, str):
            _check_str_method(budget, owner, getattr(target, "__name__", ""), args, kwargs)
        budget.depth += 1
        try:
            if budget.depth > budget.limits.max_depth:
                raise RenderBoundError(
                    f"template calls nested more than {budget.limits.max_depth} deep "
                    "(a macro that calls itself?)", "bounds.render_max_depth")
            result = super().call(context, obj, *args, **kwargs)
        except RecursionError:
            raise RenderBoundError("template calls nested too deep (a macro that calls "
                                   "itself?)", "bounds.render_max_depth") from None
        finally:
            budget.depth -= 1
        if isinstance(owner, list | dict | set):
            budget.items(len(owner))
        return result

    def _lipsum(self, n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
        self.budget().size(int(n) * int(max) * 12, "lorem ipsum")
        return str(generate_lorem_ipsum(n, html, min, max))

    # -- the checks compiled into every template -----------------------------------------

    def _generate(self, source: nodes.Template, name: str | None, filename: str | None,
                  defer_init: bool = False) -> str:
        _instrument(source)
        return super()._generate(source, name, filename, defer_init)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_bits(budget: Budget, bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise RenderBoundError(
            f"template would compute a number of about {bits:,} bits, more than "
            f"{MAX_INT_BITS:,}", "bounds.render_max_bytes")


def _check_repeat(budget: Budget, seq: Any, times: Any) -> None:
    if isinstance(seq, str | list | tuple) and _is_int(times):
        budget.size(len(seq) * max(times, 0), "a repeated value")


_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_NUMBER = re.compile(r"\d+")


def _check_format(budget: Budget, fmt: str, args: Iterable[Any]) -> None:
    """Refuse a ``%`` format whose width or precision would build more than the bound."""
    specs = [m.groups() for m in _PERCENT_SPEC.finditer(fmt)]
    widths = [int(n) for spec in specs for n in spec if n and n != "*"]
    if any("*" in spec for spec in specs):  # a width from the arguments
        widths += [a for a in args if _is_int(a)]
    budget.size(max(widths, default=0), "a formatted value")


def _check_brace_format(budget: Budget, fmt: str, args: Iterable[Any]) -> None:
    """Refuse a ``str.format`` whose widths (or width arguments) break the bound."""
    widths: list[int] = []
    try:
        for _text, _field, spec, _conv in string.Formatter().parse(fmt):
            if spec:
                widths += [int(n) for n in _NUMBER.findall(spec)]
                if "{" in spec:
                    widths += [a for a in args if _is_int(a)]
    except ValueError:
        return  # malformed: str.format raises its own error
    budget.size(max(widths, default=0), "a formatted value")


def _check_str_method(budget: Budget, text: str, name: str, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> None:
    values = [*args, *kwargs.values()]
    if name in ("ljust", "rjust", "center", "zfill") and values and _is_int(values[0]):
        budget.size(values[0], "a padded value")
    elif name == "expandtabs":
        width = values[0] if values and _is_int(values[0]) else 8
        budget.size(len(text) + text.count("\t") * max(width, 0), "a value")
    elif name == "replace" and len(values) >= 2 and isinstance(values[0], str) \
            and isinstance(values[1], str):
        _check_replace(budget, text, values[0], values[1])
    elif name in ("format", "format_map"):
        _check_brace_format(budget, text, [*args, *kwargs.values()])
    elif name == "join" and values:
        _check_join(budget, text, values[0])


def _check_replace(budget: Budget, text: str, old: str, new: str) -> None:
    hits = len(text) + 1 if not old else text.count(old)
    budget.size(len(text) + hits * max(len(new) - len(old), 0), "a replaced value")


def _check_join(budget: Budget, sep: str, items: Any) -> None:
    if hasattr(items, "__len__"):
        budget.size(len(sep) * max(len(items) - 1, 0), "a joined value")


def _bounded_filters(env: BoundedSandbox) -> dict[str, Callable[..., Any]]:
    """Jinja's built-in filters that can build a large value, with their arguments checked."""
    center, indent, fmt = JINJA_FILTERS["center"], JINJA_FILTERS["indent"], JINJA_FILTERS["format"]
    replace, join = JINJA_FILTERS["replace"], JINJA_FILTERS["join"]
    batch, slice_ = JINJA_FILTERS["batch"], JINJA_FILTERS["slice"]

    def bounded_center(value: Any, width: int = 80) -> str:
        env.budget().size(int(width), "a centred value")
        return str(center(value, width))

    def bounded_indent(value: Any, width: int | str = 4, first: bool = False,
                       blank: bool = False) -> str:
        text = str(value)
        pad = len(width) if isinstance(width, str) else int(width)
        env.budget().size(len(text) + (text.count("\n") + 1) * pad, "an indented value")
        return str(indent(value, width, first, blank))

    def bounded_format(value: str, *args: Any, **kwargs: Any) -> str:
        _check_format(env.budget(), str(value), args or kwargs)
        return str(fmt(value, *args, **kwargs))

    @pass_context
    def bounded_replace(context: Context, value: Any, old: str, new: str,
                        count: int | None = None) -> str:
        _check_replace(env.budget(), str(value), str(old), str(new))
        return str(replace(context.eval_ctx, value, old, new, count))

    @pass_context
    def bounded_join(context: Context, value: Any, d: str = "",
                     attribute: str | int | None = None) -> str:
        items = list(value)
        _check_join(env.budget(), str(d), items)
        return str(join(context.eval_ctx, items, d, attribute))

    def bounded_batch(value: Any, linecount: int, fill_with: Any = None) -> Any:
        if fill_with is not None:
            env.budget().items(int(linecount))
        return batch(value, linecount, fill_with)

    def bounded_slice(value: Any, slices: int, fill_with: Any = None) -> Any:
        env.budget().items(int(slices))
        return slice_(value, slices, fill_with)

    return {"center": bounded_center, "indent": bounded_indent, "format": bounded_format,
            "replace": bounded_replace, "join": bounded_join, "batch": bounded_batch,
            "slice": bounded_slice}


def _budget_of(context: Context) -> Budget:
    env = context.environment
    assert isinstance(env, BoundedSandbox)
    return env.budget()


@pass_context
def _loop_filter(context: Context, iterable: Any) -> Iterator[Any]:
    budget = _budget_of(context)
    for item in iterable:
        budget.step()
        yield item


@pass_context
def _charge_filter(context: Context, value: Any) -> Any:
    _budget_of(context).charge(value if isinstance(value, str) else str(value))
    return value


@pass_context
def _concat_filter(context: Context, value: str) -> str:
    _budget_of(context).size(len(value), "a joined value")
    return value


def _filter(node: nodes.Node, name: str) -> nodes.Filter:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


def _instrument(tree: nodes.Node) -> None:
    """Compile the budget's checks into a template: every loop counted, every output
    charged, every ``~`` measured."""
    for loop in tree.find_all(nodes.For):
        loop.iter = _filter(loop.iter, _LOOP)
    for concat in list(tree.find_all(nodes.Concat)):
        concat.nodes = [_filter(nodes.Concat(list(concat.nodes), lineno=concat.lineno), _JOIN)]
    for output in tree.find_all(nodes.Output):
        output.nodes = [
            _filter(nodes.Const(node.data, lineno=node.lineno)
                    if isinstance(node, nodes.TemplateData) else node, _CHARGE)
            for node in output.nodes if isinstance(node, nodes.Expr)
        ]
