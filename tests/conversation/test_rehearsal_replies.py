"""``campaign run --rehearse`` of a conversation shows each branch: replies drawn to match
the campaign's answers at ``[replies] expected_rate``, or scripted per number
(``--replies FILE``, the sandbox's ``whatsapp_replies_by_number``); the answers made from
the ``reply_matches`` expressions; a bad file's error."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from scheduler.settings.conversation import ConversationOptions, StepCondition
from scheduler.usecases.rehearsal import Rehearsal, rehearse_campaign
from scheduler.usecases.rehearsal_replies import (
    RepliesFileError,
    answer_for,
    answers,
    candidates,
    draw_replies,
    load_replies,
)
from tests.app.support import clean_env
from tests.factories import REPO
from tests.incli import in_process

EXAMPLE = REPO / "campaigns" / "conversa_confirmacao.toml"
START = datetime.fromisoformat("2026-11-30T09:00:00-03:00")


def _cond(step: int, kind: str, pattern: str | None = None,
          keywords: tuple[str, ...] = ()) -> StepCondition:
    return StepCondition(step=step, looks_at=0, kind=kind, pattern=pattern, keywords=keywords,
                         wait_s=3600, text=kind)


OPTIONS = ConversationOptions(expected_rate=0.6, conditions=(
    _cond(1, "reply_matches", r"^\s*(1|sim|confirm)"),
    _cond(2, "reply_matches", r"^\s*(2|reagend|nao)", ("remarcar", "outro dia")),
    _cond(3, "not_replied")))


def _went(rehearsal: Rehearsal) -> Counter[str]:
    """Recipients each step went to, summed over the timeline's decision lines."""
    went: Counter[str] = Counter()
    for entry in rehearsal.timeline:
        found = re.match(r"step \d+ '(\w+)' .*: goes to (\d+), not to \d+$",
                         " ".join(entry.what.split()))
        if found:
            went[found[1]] += int(found[2])
    return went


def test_answers_are_made_from_the_expressions_each_taking_its_own_branch() -> None:
    assert candidates(r"^\s*(1|sim|confirm)")[:3] == ["1", "sim", "confirm"]
    assert candidates(r"\b(?:yes|y)\b[0-9]+") == ["yes0", "y0"]
    assert candidates("(unclosed") == []
    assert answers(OPTIONS) == ["1", "2"]
    only_keywords = _cond(2, "reply_matches", None, ("remarcar",))
    assert answer_for(only_keywords, []) == "remarcar"
    # an answer the other expression also takes is passed over for one only this takes
    wide, narrow = _cond(1, "reply_matches", "s"), _cond(2, "reply_matches", "^(sim|s)$")
    assert answer_for(narrow, [wide]) is None
    assert answer_for(wide, [narrow]) is None
    assert answers(ConversationOptions(conditions=(_cond(1, "replied"),))) == ["ok"]
    assert answers(ConversationOptions(conditions=(_cond(1, "not_read"),))) == []


def test_drawn_replies_follow_the_expected_rate_evenly_among_the_answers() -> None:
    numbers = [f"55119{i:08d}" for i in range(2000)]
    script = draw_replies(OPTIONS, numbers, random.Random(7))
    assert list(script) == numbers and all(len(v) == 1 for v in script.values())
    said = Counter(v[0]["text"] if v[0] else None for v in script.values())
    assert set(said) == {"1", "2", None}
    assert 0.55 < (said["1"] + said["2"]) / 2000 < 0.65
    assert abs(said["1"] - said["2"]) < 150


def test_the_rehearsal_of_the_example_shows_each_branch() -> None:
    rehearsal = rehearse_campaign(EXAMPLE, start=START)  # seed 1: "1", "2", "1", -, "2"
    went = _went(rehearsal)
    assert went["confirmar"] >= 1 and went["reagendar"] >= 1 and went["lembrete"] >= 1, [
        e.what for e in rehearsal.timeline]
    assert went == Counter({"confirmar": 2, "reagendar": 2, "lembrete": 1})
    assert any(e.what == "run completed" for e in rehearsal.timeline)


def test_a_scripted_rehearsal_gives_each_number_its_branch(tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({"whatsapp_replies_by_number": {
        "5581983100001": [{"text": "Sim!", "after_s": 30}],
        "+55 (62) 96797-9221": [{"text": "outro dia"}],
        "5511976543210": [None],
        "5521998712233": [{"text": "quem é?"}],
        "5531981234567": [{"text": "2"}]}}), encoding="utf-8")
    rehearsal = rehearse_campaign(EXAMPLE, start=START, seed=3, replies=replies)
    assert _went(rehearsal) == Counter({"confirmar": 1, "reagendar": 2, "lembrete": 1}), [
        e.what for e in rehearsal.timeline]


@pytest.mark.parametrize(("content", "says"), [
    ("{", "not JSON"),
    ('{"5511": [{"txt": "1"}]}', "5511.0.text: Field required"),
    ('{"5511": []}', "5511: List should have at least 1 item"),
])
def test_a_bad_replies_file_is_named_with_its_fault(tmp_path: Path, content: str,
                                                    says: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RepliesFileError, match=re.escape(says)) as caught:
        load_replies(path)
    assert str(path) in str(caught.value)
    env = clean_env(CAMPAIGN_CONFIG=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    out = in_process(env, "run", str(EXAMPLE), "--rehearse", "--replies", str(path),
                     cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert says in out.stderr
    out = in_process(env, "run", str(EXAMPLE), "--replies", str(path), cwd=tmp_path)
    assert out.returncode == 1 and "--replies goes with --rehearse" in out.stderr
