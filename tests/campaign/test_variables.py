"""How CSV headers become template names, and what an undefined name's error says."""

from __future__ import annotations

import pytest

from scheduler.campaign.exceptions import UndefinedVariableError
from scheduler.campaign.plan import build_plan
from scheduler.campaign.recipients import read_layout, slugify
from scheduler.campaign.suggest import closest
from tests.factories import Project


@pytest.mark.parametrize(("header", "name"), [
    ("Nome", "nome"),
    ("Nome do Cliente", "nome_do_cliente"),
    ("Último Pedido", "ultimo_pedido"),
    ("  Município de Nascimento ", "municipio_de_nascimento"),
    ("VALOR (R$)", "valor_r"),
    ("E-mail", "e_mail"),
    ("2ª via", "col_2a_via"),
    ("\ufeffcódigo", "codigo"),
])
def test_a_header_becomes_its_slug(header: str, name: str) -> None:
    assert slugify(header) == name


def test_empty_and_repeated_headers_get_numbered_names(project: Project) -> None:
    path = project.write("data/x.csv", "nome;Nome;;telefone;!!\nA;B;C;11987654321;D\n")
    assert read_layout(path).slugs == ["nome", "nome_2", "column_3", "telefone", "column_5"]


@pytest.mark.parametrize(("name", "hint"), [
    ("Nome", "nome"), ("ULTIMO_PEDIDO", "ultimo_pedido"), ("cidades", "cidade"),
    ("pedido", "ultimo_pedido"), ("xyz", None), ("nome", None)])
def test_did_you_mean(name: str, hint: str | None) -> None:
    assert closest(name, ["nome", "cidade", "ultimo_pedido", "to"]) == hint


def test_an_undefined_name_lists_the_columns_and_the_closest(project: Project) -> None:
    project.write("templates/t.txt.j2", "Olá!\nSeu pedido, {{ Nome }}")
    path = project.basic('[[steps]]\ntype = "text"\ntext_file = "t.txt.j2"\n')
    with pytest.raises(UndefinedVariableError) as caught:
        list(build_plan(path).chunks())
    issue = caught.value.issues[0]
    assert issue.file == str(project.root / "templates" / "t.txt.j2")
    assert (issue.line, issue.row) == (2, 1)
    assert issue.message.startswith(
        "undefined variable 'Nome': no column of the CSV has this template name; did you "
        "mean 'nome'? (its columns, as template names: nome, cidade, valor, to;")
