"""``[blanks]``: what a blank CSV value does, per column, before any template sees it.

::

    [blanks]
    default = "error"                    # every column a template names, unless listed
    vencimento = "skip"                  # this recipient is not sent anything
    nome = { default = "cliente" }       # this value instead
    observacao = "keep"                  # the empty string reaches the template

Rules: ``"keep"`` (the empty string goes to the templates: the behaviour without
``[blanks]``; a filter that cannot read it, such as ``date_br``, is an error of that row),
``"error"`` (the plan refuses, naming the CSV file, the row and the column), ``"skip"``
(the recipient is skipped at planning with the reason ``blank_value: <column>``, counted by
``validate`` and ``plan``) or ``{ default = "…" }`` (the value used instead, stored with the
row and shown by ``preview``). A blank value is an empty or all-space cell.

Which columns: a key names a column as a template does (its slug) or as the header writes
it, ignoring case and accents (``"Data de Vencimento"``, ``data_de_vencimento``); a listed
column follows its rule whether or not a template names it. ``default`` (``"keep"`` when
left out) applies to the other columns that a template of the campaign names
(``{{ x }}``, ``{% if x %}``, a filter's argument). A key that is no column of the CSV, and
the phone column (a blank number is an invalid number), are errors of the definition.
Precedence in a row: ``skip`` first (nothing is sent, so nothing else matters), then
``error``, then defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.campaign.blanks_spec import BlankDefault, Rule
from scheduler.campaign.exceptions import DefinitionError, Issue
from scheduler.campaign.recipients import CsvLayout, slugify
from scheduler.campaign.rendering import leaves
from scheduler.campaign.suggest import closest

if TYPE_CHECKING:
    from scheduler.campaign.loader import Campaign

#: The reason of a recipient skipped for a blank value (the report groups by the prefix).
SKIP_REASON = "blank_value"


@dataclass(frozen=True)
class ColumnRule:
    """One governed column: its slug, its header as written, its rule and the key that set
    it (``blanks.<column>`` or ``blanks.default``)."""

    slug: str
    header: str
    rule: Rule
    key: str


@dataclass(frozen=True)
class BlanksVerdict:
    """What a row's blanks decide: skip it (the column), or the error columns."""

    skip: ColumnRule | None = None
    errors: tuple[ColumnRule, ...] = ()


class BlankRules:
    """The rules of one campaign over one CSV layout, applied row by row by the planner."""

    def __init__(self, rules: list[ColumnRule], issues: list[Issue] | None = None) -> None:
        self.rules = rules
        #: definition errors of a lenient read (``campaign validate``), reported with the rows
        self.issues = issues or []
        self._skip = [r for r in rules if r.rule == "skip"]
        self._error = [r for r in rules if r.rule == "error"]
        self._default = [(r.slug, r.rule.default) for r in rules
                         if isinstance(r.rule, BlankDefault)]

    def __bool__(self) -> bool:
        return bool(self._skip or self._error or self._default)

    def apply(self, variables: dict[str, str]) -> BlanksVerdict | None:
        """Fill defaults into ``variables`` (in place); the skip or errors, if any."""
        for rule in self._skip:
            if not variables[rule.slug].strip():
                return BlanksVerdict(skip=rule)
        errors = tuple(r for r in self._error if not variables[r.slug].strip())
        for slug, value in self._default:
            if not variables[slug].strip():
                variables[slug] = value
        return BlanksVerdict(errors=errors) if errors else None


def _column_of(layout: CsvLayout, name: str) -> int | None:
    target = slugify(name)
    for index, slug in enumerate(layout.slugs):
        if target in (slug, slugify(layout.header[index])):
            return index
    return None


def blank_rules(campaign: Campaign, layout: CsvLayout, phone_slug: str, *,
                strict: bool = True) -> BlankRules:
    """The campaign's rules over its CSV; a listed key that is no column (or is the phone
    column) raises a :class:`DefinitionError` naming the campaign file, the key's line and
    the columns there are (not ``strict``: kept in ``issues``, the other rules applied)."""
    spec, label, csv_label = campaign.spec.blanks, campaign.label, str(campaign.recipients_file)
    used = {name for step in campaign.steps for leaf in leaves(step.tree)
            for name in leaf.variables}
    issues: list[Issue] = []
    rules: list[ColumnRule] = []
    listed: set[str] = set()
    columns = [s for s in layout.slugs if s != phone_slug]
    for name, rule in spec.columns.items():
        key = f"blanks.{name}"
        index = _column_of(layout, name)
        if index is None or layout.slugs[index] == phone_slug:
            if index is None:
                hint = closest(slugify(name), columns)
                message = (f"[blanks] names {name!r}, which is no column of {csv_label} "
                           f"(its columns, as template names: {', '.join(columns)})"
                           + (f"; did you mean {hint!r}?" if hint else ""))
            else:
                message = (f"[blanks] names {name!r}, the phone column: a blank number is "
                           "skipped as an invalid number; remove it from [blanks]")
            issues.append(Issue(label, message, key=key, line=campaign.line_of(key)))
            continue
        slug = layout.slugs[index]
        listed.add(slug)
        rules.append(ColumnRule(slug, layout.header[index], rule, key))
    if issues and strict:
        raise DefinitionError(issues)
    if spec.default != "keep":
        for index, slug in enumerate(layout.slugs):
            if slug in used and slug not in listed and slug != phone_slug:
                rules.append(ColumnRule(slug, layout.header[index], spec.default,
                                        "blanks.default"))
    return BlankRules(rules, issues)


def blank_message(rule: ColumnRule) -> str:
    """The error of a blank value under ``"error"`` (the issue adds the file and row)."""
    return (f"blank value in column {rule.header!r} ({rule.slug}), which {rule.key} = "
            "\"error\" refuses: fill it in the CSV, or choose \"skip\", \"keep\" or "
            f"{{ default = \"…\" }} for it in [blanks]")
