"""``campaign --help`` at 80 columns: flags shown as flags, arguments by name, a version."""

from __future__ import annotations

import re
from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from scheduler.cli import app

runner = CliRunner()


def _help(*args: str) -> str:
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    return result.output


@pytest.mark.parametrize("command", [("validate",), ("plan",), ("status",), ("runs",),
                                     ("events",), ("sessions", "status"), ()])
def test_flags_take_no_value_in_help(command: tuple[str, ...]) -> None:
    shown = _help(*command)
    assert "<bool>" not in shown
    assert re.search(r"--help\s+Show this message", shown)
    if command and command != ("events",):
        assert re.search(r"--json\s+Print JSON", shown), shown


def test_arguments_are_shown_by_name() -> None:
    shown = _help("validate")
    assert "Usage: campaign validate [OPTIONS] FILE" in shown
    assert "{file}" not in shown
    assert re.search(r"Arguments:\n\s+FILE <path>\s+The campaign definition \(TOML\)\.\s+"
                     r"\[required\]", shown), shown
    assert "Usage: campaign status [OPTIONS] [RUN_ID]" in _help("status")
    assert "Usage: campaign sessions create [OPTIONS] SESSION_ID" in _help("sessions", "create")


def test_a_flag_given_a_value_says_so_without_a_traceback() -> None:
    result = runner.invoke(app, ["validate", "campaign.toml", "--json", "true"])
    assert result.exit_code == 2
    assert "unexpected extra argument" in result.output and "Traceback" not in result.output


def test_a_missing_argument_is_named_in_capitals() -> None:
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 2 and "Missing argument 'FILE'" in result.output


def test_version_comes_from_the_package_metadata() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"campaign {version('campaign-scheduler')}\n"
    assert "--version" in _help()


def test_the_command_list_shows_each_first_paragraph_whole() -> None:
    """Plain help (issue 32: no Rich panels) still shows each command's whole summary,
    wrapped under its own column, where click would cut it with "..."."""
    shown = _help()
    assert "..." not in shown.split("Commands:")[1]
    flat = " ".join(shown.split())
    assert ("status A run's status: deliveries by state, and the channel's outcomes (WhatsApp: "
            "sent / delivered / read / replied / opted out; SMS: delivered / undelivered, "
            "segments, cost; voice: answered / not answered, digits pressed).") in flat
    assert "[privacy] keep_bodies" in flat  # brackets are text, not markup
    assert not any(c in shown for c in "╭│╰")
    group = _help("sessions")
    assert re.search(r"Commands:\n\s+list\s+List the account's sessions", group), group


def test_docstring_paragraphs_wrap_at_the_terminal_width() -> None:
    # preview's docstring breaks its line after "sends" in the source: help must not
    lines = _help().splitlines()
    assert any("client sends them" in line for line in lines)


def _entries() -> list[tuple[str, ...]]:
    """Every command and group of ``campaign`` and every command of each group."""
    from scheduler.cli import _name_of

    found: list[tuple[str, ...]] = [(str(_name_of(c)),) for c in app.registered_commands]
    for group in app.registered_groups:
        name = str(_name_of(group))
        found.append((name,))
        assert group.typer_instance is not None
        found += [(name, str(c.name)) for c in group.typer_instance.registered_commands]
    return found


def test_the_app_that_runs_one_command_shows_and_parses_it_as_the_whole_app() -> None:
    """``campaign NAME …`` runs a copy of the app holding only NAME (Typer builds no other
    command: issue 32): every command's and group's help, and its usage errors, are the
    whole app's; anything else runs the whole app."""
    from scheduler.cli import app_for

    env = {"COLUMNS": "80", "NO_COLOR": "1"}
    entries = _entries()
    assert len(entries) > 40 and all(None not in e and "None" not in e for e in entries)
    for args in [*([*e, "--help"] for e in entries), ["status", "--bogus"], ["status", "x"],
                 ["sessions", "bogus"]]:
        one = app_for(args)
        assert one is not app and len(one.registered_commands + one.registered_groups) == 1
        whole = runner.invoke(app, args, env=env)
        alone = runner.invoke(one, args, env=env)
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output), args
    for args in [[], ["--help"], ["statuss"], ["-x", "status"]]:
        assert app_for(args) is app
    for args in [["--version"], ["--version", "status"], ["--version", "bogus"]]:
        alone = runner.invoke(app_for(args), args, env=env)
        whole = runner.invoke(app, args, env=env)
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output), args


def test_each_command_is_made_from_the_module_that_registers_it() -> None:
    """``campaign NAME`` imports only NAME's module (``cli.OWNERS``): the table names every
    command and group each module registers, and nothing else."""
    from scheduler.cli import COMMAND_MODULES, OWNERS, _app_of, _name_of

    registered = {}
    for module in COMMAND_MODULES:
        one = _app_of((module,))
        for entry in (*one.registered_commands, *one.registered_groups):
            registered[str(_name_of(entry))] = module
    assert registered == OWNERS
    assert set(registered) == {str(_name_of(e)) for e in (*app.registered_commands,
                                                         *app.registered_groups)}
