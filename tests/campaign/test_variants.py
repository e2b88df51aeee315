"""A step's variants and ``[experiment]``: the definition's checks, each recipient's variant
in the plan, the split, the held rest with every variant's payload."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scheduler.campaign.exceptions import CampaignError
from scheduler.campaign.plan import build_plan, load_campaign
from scheduler.experiments import variant_of
from scheduler.experiments.exact import exact_split
from tests.factories import Project

TWO = ('[[steps]]\ntype = "text"\ntext = "base {{ nome }}"\n'
       'variants = [{name = "A", text = "A: Oi {{ nome }}"}, '
       '{name = "B", text_file = "b.txt.j2", weight = 3}]\n')


def _csv(n: int) -> str:
    return "nome;telefone\n" + "".join(f"P{i};+55 11 9{i:08d}\n" for i in range(n))


def _rows(path: Any, **kw: Any) -> list[dict[str, Any]]:
    return [row for chunk in build_plan(path, **kw).chunks() for row in chunk]


def _project(project: Project, steps: str = TWO, extra: str = "", n: int = 4) -> Any:
    project.write("templates/b.txt.j2", "B: Olá {{ nome }}")
    return project.basic(steps, extra=extra, csv=_csv(n))


def test_each_recipient_gets_their_variant_in_every_step(project: Project) -> None:
    steps = TWO + ('[[steps]]\ntype = "text"\ndelay = "1m"\ntext = "x"\n'
                   'variants = [{name = "B", text = "B2"}, {name = "A", text = "A2"}]\n')
    rows = _rows(_project(project, steps, n=40))
    for row in rows:
        expected = variant_of("t", row["to"], [("A", 1), ("B", 3)])
        assert row["variant"] == expected
        assert row["payload"]["text"].startswith(expected)
        assert "choices" not in row or row["choices"] is None
    assert {r["variant"] for r in rows} == {"A", "B"}


def test_the_split_follows_the_weights_within_a_few_percent(project: Project) -> None:
    path = _project(project, n=4000)
    plan = build_plan(path)
    rows = [r for chunk in plan.chunks() for r in chunk]
    share_b = Counter(r["variant"] for r in rows)["B"] / len(rows)
    assert abs(share_b - 0.75) < 0.03
    assert plan.stats.variant_recipients == Counter(r["variant"] for r in rows)


def test_the_process_pool_plans_the_same_variants(project: Project) -> None:
    path = _project(project, n=300)
    one = [(r["to"], r["variant"]) for r in _rows(path)]
    two = [(r["to"], r["variant"]) for r in _rows(path, workers=2, chunk_rows=50)]
    assert one == two


def test_experiment_holds_the_rest_with_every_variants_payload(project: Project) -> None:
    extra = '\n[experiment]\ntest_share = "20%"\nwait = "2h"\n'
    # [experiment] must come after the top-level keys: put it at the end of the file
    path = _project(project, n=2000)
    path.write_text(path.read_text() + extra)
    plan = build_plan(path)
    rows = [r for chunk in plan.chunks() for r in chunk]
    held = [r for r in rows if r["state"] == "held"]
    test = [r for r in rows if r["state"] == "planned"]
    assert len(test) == 400  # 20% of 2,000 counted, not drawn (scheduler.experiments.exact)
    split = exact_split("t", [r["to"] for r in rows], 0.2, [("A", 1), ("B", 3)])
    for row in held:
        assert not split.assign(row["to"])[1]
        assert row["variant"] is None
        name = row["variables"]["nome"]
        assert row["choices"] == {"A": {"text": f"A: Oi {name}"},
                                  "B": {"text": f"B: Olá {name}"}}
    for row in test:
        assert split.assign(row["to"]) == (row["variant"], True)
        assert row["choices"] is None
    assert Counter(r["variant"] for r in test) == {"A": 100, "B": 300}  # by weight, exactly
    assert plan.stats.held_recipients == len(held)
    assert sum(plan.stats.variant_recipients.values()) == len(test)


@pytest.mark.parametrize(("steps", "extra", "message"), [
    ('[[steps]]\ntype = "text"\nvariants = [{name = "A", text = "a"}]\n', "",
     "at least two variants"),
    ('[[steps]]\ntype = "text"\nvariants = [{name = "A", text = "a"}, '
     '{name = "A", text = "b"}]\n', "", "named twice"),
    ('[[steps]]\ntype = "text"\nvariants = [{name = "A", text = "a"}, '
     '{name = "B", text = "b", delay = "1m"}]\n', "", "delay belongs to the step"),
    ('[[steps]]\ntype = "text"\nvariants = [{name = "A", text = "a"}, '
     '{name = "B", txt = "b"}]\n', "", "no field 'txt'"),
    (TWO + '[[steps]]\ntype = "text"\ntext = "x"\n'
     'variants = [{name = "A", text = "a"}, {name = "C", text = "c"}]\n', "",
     "every varied step names the same variants"),
    ('[[steps]]\ntype = "text"\ntext = "x"\n', '[experiment]\ntest_share = "20%"\n',
     "[experiment] needs variants"),
    (TWO, '[experiment]\ntest_share = "20%"\nno_winner = "Z"\n', "no_winner 'Z'"),
    (TWO, '[experiment]\ntest_share = "120%"\n', "under 100%"),
    (TWO, '[experiment]\ntest_share = "20%"\nmetric = "opens"\n', "metric"),
])
def test_wrong_variants_are_named_with_their_key(project: Project, steps: str, extra: str,
                                                 message: str) -> None:
    project.write("templates/b.txt.j2", "B")
    path = project.basic(steps, csv=_csv(2))
    if extra:
        path.write_text(path.read_text().replace("[recipients]", extra + "\n[recipients]"))
    with pytest.raises(CampaignError) as caught:
        load_campaign(path)
    assert message in str(caught.value)


def test_a_link_in_one_variant_only_is_tracked(project: Project) -> None:
    """link() in variant B alone: the campaign has links (B's are short links)."""
    import json

    from typer.testing import CliRunner

    from scheduler.cli import app
    from tests.links.support import short_links, with_public_address

    with_public_address(project)
    path = project.basic('[[steps]]\ntype = "text"\nvariants = [{name = "A", text = "A"}, '
                         '{name = "B", text = \'B {{ link("https://loja.example/b") }}\'}]\n',
                         csv=_csv(30))
    result = CliRunner().invoke(app, ["preview", str(path), "--json", "--rows", "30"])
    assert result.exit_code == 0, result.output
    texts = {m["variant"]: m["body"]["text"] for m in json.loads(result.stdout)}
    assert texts["A"] == "A" and len(short_links(texts["B"])) == 1
