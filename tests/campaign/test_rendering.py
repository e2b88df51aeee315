"""Rendering: filters, the fast path equals Jinja, the sandbox, row errors, SMS segments."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.campaign import filters
from scheduler.campaign.exceptions import (
    InvalidRenderedBodyError,
    SandboxViolationError,
    TemplateError,
    UndefinedVariableError,
)
from scheduler.campaign.plan import build_plan
from scheduler.campaign.rendering import FastTemplate, compile_leaf, make_environment
from scheduler.campaign.segments import sms_segments
from tests.factories import Project

ENV = make_environment()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1234.56", "R$ 1.234,56"),
        ("1.234,56", "R$ 1.234,56"),
        ("1234,5", "R$ 1.234,50"),
        ("12.500", "R$ 12.500,00"),
        (49.9, "R$ 49,90"),
        ("R$ 10", "R$ 10,00"),
        ("-3,2", "-R$ 3,20"),
        ("1000000", "R$ 1.000.000,00"),
    ],
)
def test_brl(value: object, expected: str) -> None:
    assert filters.brl(value) == expected


def test_other_filters() -> None:
    assert filters.number_br("1234.567", 1) == "1.234,6"
    assert filters.amount("1.234,5") == "1234.50"
    assert filters.date_br("2025-03-10") == "10/03/2025"
    long_form = filters.date_br("10/03/2025", "%d de %B de %Y (%A)")
    assert long_form == "10 de março de 2025 (segunda-feira)"
    assert filters.date_br(date(2025, 12, 1), "%b/%y") == "dez/25"
    assert filters.first_name("  MARIA DA SILVA ") == "Maria"
    assert filters.first_name("") == ""
    assert filters.name_case("JOSÉ DOS SANTOS e silva") == "José dos Santos e Silva"
    assert filters.phone_br("5511987654321") == "(11) 98765-4321"
    assert filters.phone_br("x") == "x"
    with pytest.raises(ValueError, match="not an amount"):
        filters.brl("abc")
    with pytest.raises(ValueError, match="not a date"):
        filters.date_br("ontem")


TEMPLATES = [
    "Olá {{ nome }}!",
    "{{ nome|first_name }}, {{ valor|brl }} em {{ data|date_br('%d de %B') }}",
    "{{ nome|upper }}{{ 'x' }}{{ 3 }} {{- nome|trim -}} .",
    "{{ nome|name_case|first_name }}\n",
    "no variables at all",
]


@pytest.mark.parametrize("source", TEMPLATES)
def test_simple_templates_take_the_fast_path(source: str) -> None:
    assert compile_leaf(ENV, source, key="k", file="f").fast is not None


@pytest.mark.parametrize(
    "source",
    [
        "{% if nome %}a{% endif %}",
        "{{ nome.upper() }}",
        "{{ nome|default('x') }}",
        "{{ nome ~ 'x' }}",
        "{{ nome|replace('a', 'b') }}",
    ],
)
def test_other_templates_use_jinja(source: str) -> None:
    assert compile_leaf(ENV, source, key="k", file="f").fast is None


_names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)


@settings(max_examples=300, deadline=None)
@given(
    nome=_names,
    valor=st.decimals(-1e6, 1e6, places=2, allow_nan=False),
    dia=st.dates(date(2000, 1, 1), date(2040, 12, 31)),
)
def test_fast_path_output_equals_jinja(nome: str, valor: object, dia: date) -> None:
    ctx = {"nome": nome, "valor": str(valor), "data": dia.isoformat()}
    for source in TEMPLATES:
        leaf = compile_leaf(ENV, source, key="k", file="f")
        assert isinstance(leaf.fast, FastTemplate)
        assert leaf.fast.render(ctx) == leaf.template.render(ctx)


def test_missing_name_falls_back_to_jinja_and_reports_it() -> None:
    leaf = compile_leaf(ENV, "Oi {{ cidade }}", key="steps[0].text", file="c.toml")
    with pytest.raises(UndefinedVariableError) as caught:
        leaf.render({"nome": "Ana"})
    assert "'cidade' is undefined" in str(caught.value)


@pytest.mark.parametrize(
    "source",
    [
        "{{ nome.__class__.__mro__[1].__subclasses__() }}",
        "{{ nome.__class__ }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ lipsum.__globals__ }}",
    ],
)
def test_sandbox_violation(source: str) -> None:
    leaf = compile_leaf(ENV, source, key="steps[0].text", file="c.toml")
    with pytest.raises(SandboxViolationError, match="sandbox violation"):
        leaf.render({"nome": "Ana"})


def test_filter_error_is_a_template_error() -> None:
    leaf = compile_leaf(ENV, "{{ v|brl }}", key="k", file="f")
    with pytest.raises(TemplateError, match="not an amount"):
        leaf.render({"v": "dez reais"})


def test_undefined_variable_names_the_row(project: Project) -> None:
    path = project.basic('[[steps]]\ntype = "text"\ntext = "Oi {{ apelido }}"\n')
    with pytest.raises(UndefinedVariableError) as caught:
        build_plan(path).consume()
    issue = caught.value.issues[0]
    assert issue.row == 1 and "apelido" in issue.message and issue.key == "steps[0].text"
    plan = build_plan(path, strict=False)
    stats = plan.consume()
    # rows 1 and 2 fail alike (row 3: invalid number, 4: duplicate): one error, the first row
    assert [e.row for e in stats.errors] == [1]
    assert stats.error_total == 2 and stats.planned_per_step[0] == 0


def test_sandbox_violation_in_a_campaign_names_the_row(project: Project) -> None:
    path = project.basic('[[steps]]\ntype = "text"\ntext = "{{ nome.__class__.__base__ }}"\n')
    with pytest.raises(SandboxViolationError) as caught:
        build_plan(path).consume()
    assert caught.value.issues[0].row == 1


def test_rendered_body_is_checked_with_the_endpoint_model(project: Project) -> None:
    csv = "telefone;nome;opcao\n11987654321;Ana;Sim\n21998765432;;Não\n"
    steps = (
        '[[steps]]\ntype = "poll"\nquestion = "{{ nome }}"\noptions = ["{{ opcao }}", "Talvez"]\n'
    )
    path = project.basic(steps, csv=csv)
    with pytest.raises(InvalidRenderedBodyError) as caught:
        build_plan(path).consume()
    issue = caught.value.issues[0]
    assert issue.row == 2 and issue.key == "steps[0].question"
    assert "must not be empty" in issue.message


def test_template_files_render_with_trailing_newline_removed(project: Project) -> None:
    project.write("templates/t.txt.j2", "Linha {{ nome|first_name }}\nfim\n")
    path = project.basic('[[steps]]\ntype = "text"\ntext_file = "t.txt.j2"\n')
    rows = next(iter(build_plan(path).chunks()))
    assert rows[0]["payload"]["text"] == "Linha Maria\nfim"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ("GSM-7", 0, 0)),
        ("a" * 160, ("GSM-7", 160, 1)),
        ("a" * 161, ("GSM-7", 161, 2)),
        ("a" * 306, ("GSM-7", 306, 2)),
        ("a" * 307, ("GSM-7", 307, 3)),
        ("€" * 80, ("GSM-7", 160, 1)),
        ("a" + "€" * 80, ("GSM-7", 161, 2)),
        ("ã" * 70, ("UCS-2", 70, 1)),
        ("ã" * 71, ("UCS-2", 71, 2)),
        ("ç" * 134, ("UCS-2", 134, 2)),
        ("ç" * 135, ("UCS-2", 135, 3)),
        ("😀" * 35, ("UCS-2", 70, 1)),
        ("Olá, você", ("UCS-2", 9, 1)),
        ("Ola, voce é", ("GSM-7", 11, 1)),
    ],
)
def test_sms_segments(text: str, expected: tuple[str, int, int]) -> None:
    assert tuple(sms_segments(text)) == expected


def test_gsm_extension_character_is_not_split() -> None:
    # 152 plain characters then '€' (2 septets) cannot fit the 153-septet first part.
    assert sms_segments("a" * 152 + "€" + "a" * 10).parts == 2
    assert sms_segments("a" * 152 + "€" + "a" * 152).parts == 3  # 306 septets, yet 3 parts


def test_sms_plan_counts_segments(project: Project) -> None:
    project.write("data/r.csv", "telefone;nome\n11987654321;Ana\n21998765432;João\n")
    path = project.campaign(
        'name = "s"\nchannel = "sms"\n[recipients]\nfile = "data/r.csv"\n'
        '[[steps]]\ntext = "{{ nome }} ' + "x" * 160 + '"\n'
    )
    plan = build_plan(path)
    rows = [r for c in plan.chunks() for r in c]
    assert rows[0]["kind"] == "sms" and rows[0]["path"] == "/api/v1/sms/send"
    assert plan.stats.sms_segments_per_step[0] == 2 + 3
    assert plan.stats.sms_encodings == {"GSM-7": 1, "UCS-2": 1}


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**12), st.integers(0, 99), st.sampled_from([",", "."]))
def test_amount_fast_paths_equal_the_decimal_path(whole: int, cents: int, sep: str) -> None:
    from decimal import Decimal

    text = f"{whole}{sep}{cents:02d}"
    expected = (
        f"{Decimal(f'{whole}.{cents:02d}'):,.2f}".replace(",", "_")
        .replace(".", ",")
        .replace("_", ".")
    )
    assert filters.number_br(text) == expected
    assert filters.brl(text) == f"R$ {expected}"


@pytest.mark.parametrize("value", [5, 2.5, None, True, "1234,5", Decimal("7.10")])
def test_bare_names_builtins_and_our_filters_render_any_value_as_jinja(value: object) -> None:
    # our filters' results are joined as they are; the rest still goes through str()
    ctx = {"n": value, "v": "1234,5"}
    for source in ("{{ n }}", "{{ n|upper }} {{ n|lower|upper }}", "n={{ n }}{{ 3 }}",
                   "{{ v|brl }} {{ v|number_br(0) }} {{ v|amount|brl }} {{ n|first_name }}"):
        leaf = compile_leaf(ENV, source, key="k", file="f")
        assert isinstance(leaf.fast, FastTemplate)
        assert leaf.render(ctx) == leaf.template.render(ctx)
