"""Recipients CSV: encodings, delimiters, headers, numbers, duplicates, suppression, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.campaign.exceptions import (
    EmptyRecipientsFile,
    MissingColumnError,
    RaggedRowsError,
    RecipientsFileNotFound,
    UnreadableRecipientsFile,
)
from scheduler.campaign.plan import build_plan
from scheduler.campaign.recipients import detect_delimiter, read_layout, slugify
from tests.factories import Project

#: Every number format of the issue, plus invalid and duplicate rows.
MESSY_ROWS = [
    ("Maria da Silva", "(11) 98765-4321", "São Paulo"),  # 1 national with punctuation
    ("João Souza", "+55 11 98765-4322", "Campinas"),  # 2 international with +
    ("Conceição Araújo", "011 98765-4323", "Guarulhos"),  # 3 trunk prefix 0
    ("Antônio Gonçalves", "55 11 987654324", "Santos"),  # 4 country code, no +
    ("Ana Lima", "1234", "Recife"),  # 5 too short
    ("Bia Duplicada", "+55 (11) 98765-4321", "São Paulo"),  # 6 duplicate of row 1
    ("Caio Sem Número", "", "Belém"),  # 7 empty
    ("Davi Fixo", "(21) 2345-6789", "Niterói"),  # 8 landline
    ("Érica Operadora", "0 15 11 98765-4325", "Osasco"),  # 9 carrier code (slow path)
    ("Fábio Letras", "não tem", "Natal"),  # 10 not a number
]
EXPECTED_TO = {
    1: "5511987654321",
    2: "5511987654322",
    3: "5511987654323",
    4: "5511987654324",
    6: "5511987654321",
    8: "552123456789",
    9: "5511987654325",
}


def messy_csv(delimiter: str, header: tuple[str, str, str]) -> str:
    lines = [delimiter.join(header)]
    lines += [delimiter.join(row) for row in MESSY_ROWS]
    return "\r\n".join(lines) + "\r\n"


CASES = [
    ("utf-8", ";", ("Nome", "Telefone", "Município")),
    ("utf-8-sig", ",", ("NOME", "TELEFONE", "MUNICÍPIO")),
    ("cp1252", "\t", ("nome", "Teléfone", "municipio")),
    ("latin-1", ";", (" Nome ", "telefone", "Município")),
    ("utf-16", ",", ("Nome", "Telefone", "Município")),
]


@pytest.mark.parametrize(("encoding", "delimiter", "header"), CASES, ids=lambda v: repr(v))
def test_messy_csv_in_every_encoding_and_delimiter(
    project: Project, encoding: str, delimiter: str, header: tuple[str, str, str]
) -> None:
    project.write("data/r.csv", messy_csv(delimiter, header), encoding=encoding)
    path = project.campaign(
        'name = "m"\nsenders = ["s1"]\n[recipients]\nfile = "data/r.csv"\n'
        'phone_column = "telefone"\n[[steps]]\ntype = "text"\n'
        'text = "{{ nome|first_name }} de {{ municipio }}"\n'
    )
    plan = build_plan(path, chunk_rows=3)
    rows = [r for chunk in plan.chunks() for r in chunk]
    by_row = {r["row"]: r for r in rows}
    assert sorted(by_row) == list(range(1, 11))
    for number, to in EXPECTED_TO.items():
        assert by_row[number]["to"] == to
    assert by_row[1]["payload"] == {"text": "Maria de São Paulo"}
    assert by_row[3]["payload"] == {"text": "Conceição de Guarulhos"}
    assert by_row[1]["variables"] == {"nome": "Maria da Silva", "municipio": "São Paulo"}
    assert by_row[6]["state"] == "skipped" and by_row[6]["reason"] == "duplicate"
    assert by_row[5]["reason"] == "invalid_number: too short" and by_row[5]["to"] == "1234"
    assert by_row[7]["reason"] == "invalid_number: empty"
    assert by_row[10]["reason"].startswith("invalid_number:")
    assert by_row[8]["reason"] == "landline: WhatsApp and SMS need a mobile number"
    stats = plan.stats
    assert (stats.read, stats.valid, stats.duplicates, stats.invalid_total) == (10, 5, 1, 4)
    assert [i["row"] for i in stats.invalid] == [5, 7, 8, 10] and stats.unreachable == 1


def test_layout_detection(project: Project) -> None:
    path = project.write("data/x.csv", 'Nome;Valor\n"Silva, Ana";1.234,56\n', "cp1252")
    layout = read_layout(path)
    assert (layout.encoding, layout.delimiter, layout.slugs) == ("utf-8", ";", ["nome", "valor"])
    latin = project.write_bytes("data/l.csv", "nome\nJos\u00e9\n".encode("cp1252"))
    assert read_layout(latin).encoding == "cp1252"
    undefined = project.write_bytes("data/u.csv", b"nome\nA\x81B\n")
    assert read_layout(undefined).encoding == "latin-1"
    assert detect_delimiter("a\tb\tc\n1\t2\t3\n") == "\t"
    assert detect_delimiter("telefone\n11987654321\n") == ","


def test_slugs() -> None:
    assert slugify("Município de Nascimento") == "municipio_de_nascimento"
    assert slugify("  TELEFONE ") == "telefone"
    assert slugify("1º Nome") == "col_1o_nome"
    assert slugify("\ufeffNome") == "nome"


def test_blank_lines_keep_row_numbers_and_short_rows_get_empty_values(project: Project) -> None:
    csv = "nome;telefone;cidade\nAna;11987654321;SP\n\nBia;21998765432\n"
    path = project.basic('[[steps]]\ntype = "text"\ntext = "{{ nome }}/{{ cidade }}"\n', csv=csv)
    rows = [r for c in build_plan(path).chunks() for r in c]
    assert [(r["row"], r["payload"]["text"]) for r in rows] == [(1, "Ana/SP"), (3, "Bia/")]


def test_suppression_lists_csv_and_txt(project: Project) -> None:
    project.write("data/optout.txt", "# opt-outs\n+55 11 98765-4321\n\n")
    project.write("data/block.csv", "Nome,Celular\nJoão,(21) 99876-5432\n")
    path = project.basic(extra="")
    text = path.read_text().replace(
        'phone_column = "telefone"',
        'phone_column = "telefone"\nsuppression = ["data/optout.txt", "data/block.csv"]',
    )
    path.write_text(text)
    plan = build_plan(path)
    rows = [r for c in plan.chunks() for r in c]
    reasons = {r["row"]: r["reason"] for r in rows}
    assert reasons == {
        1: "suppressed",
        2: "suppressed",
        3: "invalid_number: too short",
        4: "suppressed",
    }
    assert plan.stats.suppressed == 3 and plan.stats.valid == 0


def test_duplicates_keep_the_first_row_across_chunks(project: Project) -> None:
    csv = "telefone;nome\n" + "".join(f"1198765432{i % 3};n{i}\n" for i in range(9))
    path = project.basic(csv=csv)
    rows = [r for c in build_plan(path, chunk_rows=2).chunks() for r in c]
    planned = [(r["row"], r["variables"]["nome"]) for r in rows if r["state"] == "planned"]
    assert planned == [(1, "n0"), (2, "n1"), (3, "n2")]
    assert all(r["reason"] == "duplicate" for r in rows if r["row"] > 3)


def test_missing_recipients_file_is_a_definition_error(project: Project) -> None:
    path = project.basic()
    (project.root / "data" / "r.csv").unlink()
    from scheduler.campaign.exceptions import DefinitionError

    with pytest.raises(DefinitionError, match=r"r\.csv"):
        build_plan(path)
    with pytest.raises(RecipientsFileNotFound):
        read_layout(project.root / "data" / "r.csv")


def test_missing_phone_column(project: Project) -> None:
    path = project.basic(csv="nome;celular\nAna;11987654321\n")
    with pytest.raises(MissingColumnError) as caught:
        build_plan(path)
    assert "telefone" in str(caught.value) and "'celular'" in str(caught.value)
    assert caught.value.issues[0].key == "recipients.phone_column"


@pytest.mark.parametrize("content", ["", "   \n\n", "nome;telefone\n"])
def test_empty_csv(project: Project, content: str) -> None:
    path = project.basic(csv=content)
    with pytest.raises(EmptyRecipientsFile):
        build_plan(path)


def test_ragged_rows_are_all_listed(project: Project) -> None:
    csv = "nome;telefone\nAna;11987654321\nBia;21998765432;extra\nCaio;1;2;3\nDavi;3\n"
    path = project.basic(csv=csv)
    plan = build_plan(path)
    with pytest.raises(RaggedRowsError) as caught:
        plan.consume()
    hint = " (a value containing ';' must be in double quotes)"
    assert [(i.row, i.line, i.message) for i in caught.value.issues] == [
        (2, 3, "ragged row: 3 fields, the header has 2" + hint),
        (3, 4, "ragged row: 4 fields, the header has 2" + hint),
    ]
    first_row_ragged = project.basic(csv="nome;telefone\nAna;1;x\nBia;2\n")
    with pytest.raises(RaggedRowsError):
        build_plan(first_row_ragged).consume()


def test_binary_file_is_refused(project: Project) -> None:
    path = project.basic()
    project.write_bytes("data/r.csv", b"PK\x03\x04\x00\x00binary")
    with pytest.raises(UnreadableRecipientsFile, match="not a text file"):
        build_plan(path)


def test_memory_stays_in_chunks(project: Project) -> None:
    csv = "telefone;nome\n" + "".join(f"119{i:08d};n{i}\n" for i in range(1000))
    path = project.basic(csv=csv)
    sizes = [len(c) for c in build_plan(path, chunk_rows=100).chunks()]
    assert sizes == [100] * 10  # one step: one row per recipient, 100 per chunk


def test_path_objects_and_strings(project: Project) -> None:
    path = project.basic()
    assert build_plan(str(path)).consume().valid == build_plan(Path(path)).consume().valid == 2
