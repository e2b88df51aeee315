"""Templates that would hang or exhaust a worker cost one error line naming the bound."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from scheduler.campaign.exceptions import TemplateError
from scheduler.campaign.render_bounds import RenderLimits
from scheduler.campaign.rendering import compile_leaf, make_environment
from tests.factories import Project
from tests.incli import campaign

CAMPAIGN = [sys.executable, "-c", "from scheduler.cli import main; main()"]

#: (template, the bound its breach names): each would take gigabytes or hours unbounded.
BOMBS = {
    "repetition": ("{{ 'x' * 2000000000 }}", "render_max_bytes"),
    "nested loops": ("{% for i in range(99999) %}{% for j in range(99999) %}x{% endfor %}"
                     "{% endfor %}", "render_max_loops"),
    "silent loops": ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}"
                     "{% endfor %}", "render_max_loops"),
    "recursive macro": ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
                        "render_max_depth"),
    "padding filter": ("{{ 'x'|center(2000000000) }}", "render_max_bytes"),
    "padding method": ("{{ 'x'.ljust(2000000000) }}", "render_max_bytes"),
    "percent format": ("{{ '%2000000000s' % 'x' }}", "render_max_bytes"),
    "brace format": ("{{ '{:>2000000000}'.format('x') }}", "render_max_bytes"),
    "power": ("{{ 9 ** (9 ** 9) }}", "render_max_bytes"),
    "doubling ~": ("{% set ns = namespace(s='x') %}{% for i in range(60) %}"
                   "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
                   "render_max_bytes"),
    "doubling +": ("{% set ns = namespace(s='x') %}{% for i in range(60) %}"
                   "{% set ns.s = ns.s + ns.s %}{% endfor %}", "render_max_bytes"),
    "growing list": ("{% set l = [1] %}{% for i in range(60) %}{{ l.extend(l) }}{% endfor %}",
                     "render_max_loops"),
    "join": ("{{ range(99999)|join('x' * 999999) }}", "render_max_bytes"),
    "replace": ("{{ ('x' * 999999)|replace('x', 'y' * 999999) }}", "render_max_bytes"),
    "output in a set block": ("{% set x %}{% for i in range(99999) %}{{ 'y' * 999999 }}"
                              "{% endfor %}{% endset %}{{ x|length }}", "render_max_bytes"),
    "lorem ipsum": ("{{ lipsum(2000000000) }}", "render_max_bytes"),
    "batch fill": ("{{ [1]|batch(2000000000, 'x')|list|length }}", "render_max_loops"),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_each_bomb_is_one_error_naming_its_bound(name: str) -> None:
    source, bound = BOMBS[name]
    leaf = compile_leaf(make_environment(), source, key="steps[0].text", file="c.toml", line=7)
    with pytest.raises(TemplateError) as caught:
        leaf.render({"nome": "Ana"})
    message = str(caught.value)
    assert message.startswith("c.toml:7 [steps[0].text]: template ")
    assert f"bound: bounds.{bound}" in message


def test_time_budget_stops_a_branching_recursion() -> None:
    # 2**40 calls, each within every other bound: only the clock stops it
    source = ("{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}"
              "{% endmacro %}{{ f(40) }}")
    env = make_environment(limits=RenderLimits(max_ms=200))
    leaf = compile_leaf(env, source, key="text", file="c.toml")
    with pytest.raises(TemplateError, match=r"took more than 200 ms; bound: bounds\.render_max_ms"):
        leaf.render({})


def test_ordinary_templates_render_as_before() -> None:
    source = ("Olá {{ nome }}, {% for i in range(3) %}{{ i }}{% endfor %} {{ 'ab' * 3 }} "
              "{{ '%5s' % 'x' }}|{{ nome|center(9) }}|{{ [1, 2]|join(', ') }} "
              "{{ 'a-b'|replace('-', '+') }} {{ '{:>4}'.format(7) }}")
    leaf = compile_leaf(make_environment(), source, key="text", file="c.toml")
    assert leaf.render({"nome": "Ana"}) == "Olá Ana, 012 ababab     x|   Ana   |1, 2 a+b    7"


def test_a_bound_is_set_in_the_campaign(project: Project) -> None:
    # 20 loop steps are within the default bound and over a bound of 10 set in [bounds]
    steps = ('[[steps]]\ntype = "text"\n'
             'text = "{% for i in range(20) %}{{ i }}{% endfor %} {{ nome }}"\n')
    path = project.basic(steps, extra="[bounds]\nrender_max_loops = 10\n")
    done = campaign("validate", str(path))  # the console script, in this process
    assert done.returncode == 1
    assert "looped more than 10 times; bound: bounds.render_max_loops" in done.stdout


@pytest.mark.slow  # each in a process of its own: its peak memory is measured
@pytest.mark.parametrize("command", ["validate", "preview", "plan", "run", "run --rehearse"])
@pytest.mark.parametrize("name", ["repetition", "nested loops", "recursive macro"])
def test_commands_stop_at_once_with_the_row_located(project: Project, command: str,
                                                    name: str) -> None:
    source, bound = BOMBS[name]
    path = project.basic('[[steps]]\ntype = "text"\ntext_file = "bomb.txt.j2"\n')
    project.write("templates/bomb.txt.j2", "Olá {{ nome }}\n" + source + "\n")
    # the timeout is a hang guard (a hang is minutes): the refusal itself is at once
    done = subprocess.run([*CAMPAIGN, *command.split(), str(path)], capture_output=True,
                          text=True, timeout=120, check=False, cwd=project.root)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    # the template file, its line, the row and the bound
    assert "bomb.txt.j2:2" in output and " row 1: template " in output, output
    assert f"bound: bounds.{bound}" in output
    assert peak_mb < 1024, f"{command} peaked at {peak_mb:.0f} MB"
