"""A step's ``variants`` compiled: each variant's fields over the step's (``text`` and
``text_file`` are one field), checked like a step's, and the campaign's split."""

from __future__ import annotations

import pytest

from scheduler.campaign.exceptions import CampaignError
from scheduler.campaign.experiment_spec import ExperimentSpec
from scheduler.campaign.loader import load_campaign
from scheduler.campaign.rendering import placeholder_tree
from scheduler.campaign.step_compile import campaign_split
from scheduler.campaign.variants import experiment_problem
from tests.factories import Project

STEP = ('[[steps]]\ntype = "image"\nimage = "https://x/i.jpg"\ncaption = "base"\n'
        'variants = [{name = "A", caption = "A {{ nome }}"}, '
        '{name = "B", caption_file = "b.txt.j2", weight = 3}]\n')


def test_variants_override_the_steps_fields(project: Project) -> None:
    project.write("templates/b.txt.j2", "B {{ nome }}")
    campaign = load_campaign(project.basic(STEP))
    [step] = campaign.steps
    assert [(v.name, v.weight, v.ok) for v in step.variants] == [("A", 1.0, True),
                                                                 ("B", 3.0, True)]
    trees = {v.name: placeholder_tree(v.tree) for v in step.variants}
    assert trees["A"]["image"] == trees["B"]["image"] == "https://x/i.jpg"
    assert step.tree is step.variants[0].tree  # the control is the step's own tree
    split, problems = campaign_split(campaign.steps)
    assert problems == [] and split is not None
    assert split.pairs == [("A", 1.0), ("B", 3.0)] and split.control == "A"
    assert split.shares() == {"A": 0.25, "B": 0.75} and split.steps == (0,)


@pytest.mark.parametrize(("variants", "message"), [
    ('[{name = "A", text = "a"}]', "at least two variants"),
    ('[{name = "A", text = "a"}, {name = "A", text = "b"}]', "named twice"),
    ('[{name = "A", text = "a"}, {name = "B", text = "b", delay = "1m"}]',
     "delay belongs to the step"),
    ('[{name = "A", text = "a"}, {name = "B", txt = "b"}]', "no field 'txt'"),
    ('[{name = "A", text = "a"}, {text = "b"}]', "every variant needs a name"),
    ('[{name = "A", text = "a"}, {name = "B", text = "b", weight = -1}]', "weight -1"),
    ('"A"', "variants must be a list of tables"),
])
def test_a_wrong_variant_is_named_with_its_key(project: Project, variants: str,
                                               message: str) -> None:
    path = project.basic(f'[[steps]]\ntype = "text"\nvariants = {variants}\n')
    with pytest.raises(CampaignError) as caught:
        load_campaign(path)
    assert message in str(caught.value)
    assert "steps[0].variants" in str(caught.value) or "line" in str(caught.value)


def test_varied_steps_must_name_the_same_variants(project: Project) -> None:
    steps = ('[[steps]]\ntype = "text"\nvariants = [{name = "A", text = "a"}, '
             '{name = "B", text = "b"}]\n'
             '[[steps]]\ntype = "text"\nvariants = [{name = "A", text = "a"}, '
             '{name = "C", text = "c"}]\n')
    campaign = load_campaign(project.basic(steps), lenient=True)
    _split, problems = campaign_split(campaign.steps)
    assert problems == [(1, "every varied step names the same variants: step 1 has A, "
                            "B, this one A, C")]


def test_the_experiment_needs_variants_and_a_known_fallback(project: Project) -> None:
    spec = ExperimentSpec(test_share="20%", wait="4h", no_winner="Z")
    assert spec.test_share == pytest.approx(0.2) and spec.wait == 4 * 3600
    campaign = load_campaign(project.basic(STEP.replace(
        'caption_file = "b.txt.j2"', 'caption = "B"')))
    split, _ = campaign_split(campaign.steps)
    assert experiment_problem(None, spec) is not None
    assert "no_winner 'Z'" in (experiment_problem(split, spec) or "")
    assert experiment_problem(split, ExperimentSpec(test_share=0.1)) is None
    for wrong in ("0%", "100%", "abc", True, 1.5):
        with pytest.raises(ValueError):
            ExperimentSpec(test_share=wrong)


def test_a_varied_step_keeps_its_own_key_for_the_plans_errors(project: Project) -> None:
    """A step's key (``steps[i]``, what a row's render error names) is its own, not its
    last variant's name nor a dispatcher field's: the loops over them once rebound it."""
    steps = ('[[steps]]\ntype = "text"\ntext = "a"\n'
             '[[steps]]\ntype = "text"\nvariants = [{name = "A", text = "a"}, '
             '{name = "B", text = "b"}]\n')
    campaign = load_campaign(project.basic(steps))
    assert [step.key for step in campaign.steps] == ["steps[0]", "steps[1]"]
    wrong = load_campaign(project.basic('[[steps]]\ntype = "text"\ntext = "a"\nto = "x"\n'),
                          lenient=True)
    assert wrong.steps[0].key == "steps[0]"
