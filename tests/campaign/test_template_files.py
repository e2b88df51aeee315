"""Where template files may live: an absolute path, the project's templates/, beside the
campaign file; a missing one names every path tried."""

from __future__ import annotations

import pytest

from scheduler.campaign.exceptions import TemplateError, TemplateNotFoundError
from scheduler.campaign.fingerprint import fingerprint_of
from scheduler.campaign.loader import load_campaign
from scheduler.campaign.plan import build_plan
from tests.factories import Project


def _texts(project: Project, step_file: str) -> list[str]:
    path = project.basic(f'[[steps]]\ntype = "text"\ntext_file = "{step_file}"\n')
    return [row["payload"]["text"] for chunk in build_plan(path).chunks() for row in chunk
            if row["state"] == "planned"]


def test_a_name_is_read_under_the_projects_templates_folder(project: Project) -> None:
    project.write("templates/oi.txt.j2", "Oi {{ nome|first_name }}")
    assert _texts(project, "oi.txt.j2") == ["Oi Maria", "Oi João"]


def test_a_name_is_read_beside_the_campaign_file(project: Project) -> None:
    project.write("campaigns/oi.txt.j2", "Beside {{ cidade }}")
    assert _texts(project, "oi.txt.j2") == ["Beside São Paulo", "Beside Rio de Janeiro"]


def test_templates_folder_comes_first_when_both_have_the_name(project: Project) -> None:
    project.write("templates/oi.txt.j2", "from templates/")
    project.write("campaigns/oi.txt.j2", "from campaigns/")
    assert _texts(project, "oi.txt.j2") == ["from templates/"] * 2


def test_absolute_and_parent_relative_paths_work(project: Project, tmp_path_factory) -> None:
    outside = tmp_path_factory.mktemp("shared") / "aviso.txt.j2"
    outside.write_text("Aviso {{ nome|first_name }}", encoding="utf-8")
    assert _texts(project, str(outside)) == ["Aviso Maria", "Aviso João"]
    project.write("textos/aviso.txt.j2", "Texto {{ valor }}")
    assert _texts(project, "../textos/aviso.txt.j2") == ["Texto 1234.5", "Texto 10"]


def test_a_template_used_from_anywhere_is_in_the_runs_fingerprint(
        project: Project, tmp_path_factory) -> None:
    outside = tmp_path_factory.mktemp("shared") / "aviso.txt.j2"
    outside.write_text("Aviso", encoding="utf-8")
    path = project.basic(f'[[steps]]\ntype = "text"\ntext_file = "{outside}"\n')
    assert f"template: {outside}" in fingerprint_of(load_campaign(path)).files


def test_a_missing_template_names_every_path_tried(project: Project) -> None:
    path = project.basic('[[steps]]\ntype = "text"\ntext_file = "nada.txt.j2"\n')
    with pytest.raises(TemplateNotFoundError) as caught:
        load_campaign(path)
    (issue,) = caught.value.issues
    assert issue.file == str(path) and issue.line is not None
    assert (f"template file 'nada.txt.j2' not found (tried {project.root}/templates/"
            f"nada.txt.j2, {project.root}/campaigns/nada.txt.j2)") in issue.message
    missing = project.root / "gone" / "x.j2"
    path = project.basic(f'[[steps]]\ntype = "text"\ntext_file = "{missing}"\n')
    with pytest.raises(TemplateNotFoundError, match=f"tried {missing}\\)"):
        load_campaign(path)


def test_a_template_that_is_not_utf8_is_named(project: Project) -> None:
    project.write_bytes("templates/velho.txt.j2", "Olá {{ nome }}".encode("cp1252"))
    path = project.basic('[[steps]]\ntype = "text"\ntext_file = "velho.txt.j2"\n')
    with pytest.raises(TemplateError, match=r"template file 'velho\.txt\.j2': not UTF-8 text"):
        load_campaign(path)
