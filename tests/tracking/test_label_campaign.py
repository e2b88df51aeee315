"""The example label-filtered campaign planned from a sandbox's label events: real-time and
full-sync events through a real receiver, the webhook repeating and reordering them."""

from __future__ import annotations

from typing import Any

from scheduler.campaign.plan import build_plan, load_campaign
from scheduler.ledger.runs import Ledger
from scheduler.usecases.label_lookup import label_audience
from tests.factories import REPO
from tests.tracking.support import table, wait_until

SESSION = "loja-sp-01"  # the example's sender


def _post(sandbox: Any, path: str, body: dict[str, Any] | None = None) -> int:
    response = sandbox.http.post(f"/sandbox/sessions/{SESSION}/labels{path}", json=body or {})
    response.raise_for_status()
    return int(response.json()["events"])


def test_the_vip_example_is_planned_from_the_sandboxs_label_events(
        tledger: Ledger, make_sandbox: Any, make_receiver: Any) -> None:
    sandbox = make_sandbox(webhook_duplicate_rate=0.5, webhook_reorder=True)
    receiver = make_receiver(tledger)
    sandbox.create_session(SESSION, webhook_url=receiver.url)
    sent = _post(sandbox, "", {
        "labels": [{"id": "1", "name": "VIP", "color": 3}, {"id": "2", "name": "Inativo"},
                   {"id": "3", "name": "Antigo"}],
        "chats": [{"label": "1", "chat": n} for n in (
            "5511981112201", "5511981112202", "5521992223304", "5531983334406",
            "554194445508",            # an old account: its JID has no ninth digit
            "77001122@lid")]            # not resolved to a phone: matches nobody
        + [{"label": "2", "chat": "5511981112202"}, {"label": "3", "chat": "5511981112203"}],
    })
    sent += _post(sandbox, "/full-sync")
    sent += _post(sandbox, "", {"labels": [{"id": "3", "deleted": True}],
                                "chats": [{"label": "1", "chat": "5531983334406",
                                           "labeled": False}]})
    assert sent == 11 + 11 + 2  # 3 labels, 8 chats; their full sync; 2 changes
    wait_until(lambda: len([e for e in table(tledger, "events")
                            if "label" in e["event"]]) == sent)
    assert any(w["event"].startswith("appstate.label.") for w in sandbox.webhooks())

    campaign = load_campaign(REPO / "campaigns" / "vip_labels.toml")
    audience = label_audience(tledger.engine, campaign)
    plan = build_plan(campaign, labels=audience)
    rows = [(r["to"], r["state"], r["reason"]) for chunk in plan.chunks() for r in chunk]
    assert [to for to, state, _ in rows if state == "planned"] == \
        ["5511981112201", "5521992223304", "5541994445508"]
    assert ("5511981112202", "skipped", "label: labelled Inativo (exclude_labels)") in rows
    assert ("5531983334406", "skipped", "label: not labelled VIP") in rows  # removed
    assert (plan.stats.valid, plan.stats.not_labelled, plan.stats.label_excluded) == (3, 4, 1)
    assert audience is not None and audience.unresolved == {"vip": 1}
    state = sandbox.http.get(f"/sandbox/sessions/{SESSION}/labels").json()
    assert {"id": "3", "name": None, "color": None, "deleted": True} in state["labels"]
