"""The docs: the README stays a landing page whose links lead somewhere, and the reference
pages that ``docs/hooks/reference.py`` writes at build time name every key of a campaign
file, every step type and every command and option the program has (``make test`` also
builds the site with ``mkdocs build --strict``)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer.main
from pydantic import BaseModel

from scheduler.campaign.definition import CampaignSpec
from scheduler.campaign.steps import WHATSAPP_KINDS
from scheduler.cli import app

REPO = Path(__file__).resolve().parents[1]


def _hook(name: str = "reference") -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_{name}",
                                                  REPO / "docs" / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()
LISTS = _hook("lists")


def _models(model: type[BaseModel], key: str = "") -> list[tuple[str, type[BaseModel]]]:
    """(table key, model) of the definition and every table under it."""
    found = [(key, model)]
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            found += _models(kind, name)
    return found


def test_the_readme_is_a_landing_page_with_the_two_commands() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 170
    assert "```\nmake demo\nmake test\n```" in text
    for page in ("guides/first-campaign", "guides/operator", "guides/reports", "guarantees",
                 "scaling", "benchmarks", "configuration", "editor"):
        assert f"(docs/{page}.md)" in text, page
    assert re.search(r"^demo: ", (REPO / "Makefile").read_text(), re.M)
    assert re.search(r"^test: ", (REPO / "Makefile").read_text(), re.M)


@pytest.mark.parametrize("page", ["README.md", *sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))])
def test_every_relative_link_leads_to_a_file(page: str) -> None:
    path = REPO / page
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    missing = [link for link in links if "://" not in link
               and not (path.parent / link).exists()
               and not (REPO / "docs" / link).exists()  # generated pages: reference/*.md
               and link.removeprefix("../") not in HOOK.PAGES]
    assert missing == []


def test_the_campaign_file_page_names_every_key_with_its_default() -> None:
    page = HOOK.campaign_file_page()
    for key, model in _models(CampaignSpec):
        if key:
            assert f"\n## {key}\n" in page
        for name in model.model_fields:
            assert f"| `{name}` |" in page, (key, name)
    assert '| `rate` | text, e.g. `"30/min"`' in page
    assert '| `"20/min"` |' in page and '| `"America/Sao_Paulo"` |' in page
    assert "| `name` | text (not empty) | required |" in page


def test_the_steps_page_has_every_step_type_of_every_channel() -> None:
    page = HOOK.steps_page()
    for name in WHATSAPP_KINDS:
        assert f"\n### whatsapp: {name}\n" in page
    for heading in ("whatsapp: call_event", "sms: sms", "voice: voice", "calls: call"):
        assert f"\n### {heading}\n" in page
    assert "| `text` | text (not empty) | required |" in page
    assert "`sessionId`" not in page.split("## whatsapp")[1]  # the dispatcher's keys


def _commands(command: Any, path: str) -> list[tuple[str, Any]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, f"{path} {name}")
    return found


def test_the_commands_page_has_every_command_and_option() -> None:
    page = HOOK.commands_page()
    commands = _commands(typer.main.get_command(app), "campaign")
    assert len(commands) > 30
    for path, command in commands:
        assert re.search(rf"^##+ {re.escape(path)}$", page, re.M), path
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert f"`{opt}`" in page, (path, opt)
    assert "| `--rows` | integer | How many recipients to show. [default: 3; x>=1] |" in page


def test_the_hook_adds_the_pages_the_nav_names() -> None:
    from mkdocs.config import load_config
    from mkdocs.structure.files import Files

    config = load_config(str(REPO / "mkdocs.yml"))
    assert [Path(h.__file__).name for h in config["hooks"].values()] == ["reference.py",
                                                                         "lists.py"]
    files = config.plugins.on_files(Files([]), config=config)  # as a build runs it
    assert sorted(f.src_uri for f in files) == sorted(HOOK.PAGES)
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in HOOK.PAGES:
        assert f": {page}\n" in nav


def _html(markdown_text: str) -> str:
    """A page's HTML as the site's Markdown extensions render it."""
    import markdown
    from mkdocs.config import load_config

    config = load_config(str(REPO / "mkdocs.yml"))
    return markdown.markdown(markdown_text, extensions=config["markdown_extensions"],
                             extension_configs=config["mdx_configs"])


BROKEN_LIST = """Steps:

1. **One.** Set it:

   ```toml
   a = 1
   ```

2. **Two.** Then:

   ```
   campaign run
   ```

3. **Three.** Done.
"""


def test_a_numbered_list_split_by_a_three_space_code_block_is_named_with_its_line() -> None:
    html = _html(BROKEN_LIST)
    assert LISTS.top_lists(html) == [1, 1, 1]  # what the browser shows as 1., 1., 1.
    assert LISTS.list_restarts(BROKEN_LIST, html) == [
        "line 9: item 2. starts a new numbered list, shown as 1. (indent the blocks inside "
        "item 1. by four spaces)",
        "line 15: item 3. starts a new numbered list, shown as 1. (indent the blocks inside "
        "item 2. by four spaces)"]
    fixed = BROKEN_LIST.replace("\n   ", "\n    ")
    assert LISTS.top_lists(_html(fixed)) == [3]
    assert LISTS.list_restarts(fixed, _html(fixed)) == []


def test_two_lists_the_source_numbers_from_1_each_are_not_a_restart() -> None:
    text = "1. a\n2. b\n\nBetween.\n\n1. c\n2. d\n\n```\n1. not an item\n```\n"
    assert LISTS.top_lists(_html(text)) == [2, 2]
    assert LISTS.list_restarts(text, _html(text)) == []


@pytest.mark.parametrize("page", sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md")))
def test_no_numbered_list_of_the_docs_restarts(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    assert LISTS.list_restarts(text, _html(text)) == []


@pytest.mark.parametrize("page", sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md")))
def test_no_escaped_pipe_shows_in_the_built_page(page: str) -> None:
    """A table's ``\\|`` inside backticks is shown as typed (backslash and all) by
    Python-Markdown: a table cell says its alternatives with words or commas instead."""
    html = _html((REPO / page).read_text(encoding="utf-8"))
    assert "\\|" not in html
