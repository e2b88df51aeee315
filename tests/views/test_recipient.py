"""The recipient's name a run's recent events show: read from the delivery's CSV values
(``deliveries.variables``) by :func:`scheduler.views.run_parts.recipient`."""

from __future__ import annotations

import json

import pytest

from scheduler.views.run_parts import NAME_COLUMNS, TEXT_AT_MOST, recipient


@pytest.mark.parametrize(("variables", "name"), [
    ({"cidade": "Recife", "nome": "Ana Souza"}, "Ana Souza"),
    ({"Full_Name": "  Bruno Lima  ", "cliente": "not this one"}, "Bruno Lima"),
    ({"CLIENTE": "<script>alert(1)</script>"}, "<script>alert(1)</script>"),
    ({"customer": 42}, "42"),
    ({"nome": "", "name": "second"}, None),  # the first name column, blank: no name
    ({"plano": "10", "nomes": "not a name column"}, None),
    ({}, None),
])
def test_the_name_is_the_first_name_column_in_any_case(variables: dict[str, object],
                                                        name: str | None) -> None:
    assert recipient(json.dumps(variables)) == name


def test_every_documented_column_is_read_and_a_long_name_is_cut() -> None:
    for column in NAME_COLUMNS:
        assert recipient(json.dumps({column.upper(): "Ana"})) == "Ana"
    cut = recipient(json.dumps({"name": "x" * 500}))
    assert cut is not None and len(cut) == TEXT_AT_MOST and cut.endswith("…")


@pytest.mark.parametrize("stored", [None, "", "not json", "[1, 2]", '"Ana"'])
def test_no_values_or_broken_values_give_no_name(stored: str | None) -> None:
    assert recipient(stored) is None
