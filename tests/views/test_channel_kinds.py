"""The views' table of channel outcomes says what the channel classes say (issue 32: the
views read it without importing the channels and their wire models)."""

from __future__ import annotations

import pytest

from scheduler.dispatch.channels import CHANNELS, has_outcomes, known_channel
from scheduler.views import channel_kinds


@pytest.mark.parametrize("name", [*CHANNELS, "fax", "", "SMS"])
def test_each_channel_has_the_outcomes_its_class_says(name: str) -> None:
    channel = known_channel(name)
    kind = channel_kinds.outcome_kind(name)
    if channel is None:
        assert kind is None
    else:
        assert kind == channel_kinds.OutcomeKind(reports=bool(channel.error_codes),
                                                 keys=bool(channel.reports_keys),
                                                 calls=bool(channel.has_calls))
    assert channel_kinds.has_outcomes(name) == bool(has_outcomes(name))


def test_every_channel_is_in_the_table() -> None:
    assert sorted(channel_kinds.KINDS) == sorted(CHANNELS)
    assert channel_kinds.outcome_kind(None) is None
