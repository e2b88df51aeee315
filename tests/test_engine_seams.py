"""The engine's seams, read with ``ast``: what the dispatcher may know of the rest.

- the engine (``scheduler.dispatch``) never imports the tracking layer: events that must
  be applied as sends are recorded reach it as a hook of its stores, given by the wiring;
- the dispatcher's roles (``scheduler/dispatch/dispatcher/``) reach the ledger only through
  the store protocols of :mod:`scheduler.dispatch.store`: no query module, no concrete
  ``Ledger``, no connection;
- reconciliation is channel-neutral: no channel's name or event in ``reconcile.py``.
"""

from __future__ import annotations

import ast
import re
from types import SimpleNamespace

from scheduler.dispatch import store as seams
from scheduler.dispatch.channels import channel_for, known_channel, progress_events
from scheduler.dispatch.channels.calls import CallsChannel
from scheduler.dispatch.channels.sms import SmsChannel
from scheduler.dispatch.channels.voice import VoiceChannel
from scheduler.dispatch.channels.whatsapp import WhatsAppChannel
from scheduler.ledger import (
    experiment_store,
    queue_store,
    recycling_store,
    run_store,
    sender_store,
    worker_store,
)
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S
from tests.test_architecture import ROOT, _imported, _modules, package_imports


def _imports_of(prefix: str) -> dict[str, list[str]]:
    """Every scheduler name imported by the modules under ``prefix`` (any import: module
    level, inside functions, type-only), with the module that imports it."""
    found: dict[str, list[str]] = {}
    for path, module in _modules():
        if not (module == prefix or module.startswith(prefix + ".")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for name in _imported(node, module, path.name == "__init__.py"):
                if name.startswith("scheduler."):
                    found.setdefault(name, []).append(module)
    return found


def test_the_engine_never_imports_tracking() -> None:
    edges = package_imports()
    assert ("wiring", "tracking") in edges  # the wiring does, so the scanner sees such edges
    assert ("dispatch", "tracking") not in edges, edges.get(("dispatch", "tracking"))


def test_the_dispatcher_reaches_the_ledger_only_through_its_store() -> None:
    imports = _imports_of("scheduler.dispatch.dispatcher")
    assert "scheduler.dispatch.store" in imports  # it sees the dispatcher's imports
    # plain data and names
    allowed = {"scheduler.ledger.rows", "scheduler.ledger.states", "scheduler.ledger.changes"}
    reaching = {name: who for name, who in imports.items()
                if name.startswith("scheduler.ledger") and name not in allowed}
    assert not reaching, reaching


def test_reconciliation_names_no_channel() -> None:
    source = (ROOT / "dispatch" / "reconcile.py").read_text(encoding="utf-8")
    code = "\n".join(line for line in source.splitlines()
                     if not line.lstrip().startswith(("#", ":", "``")))
    channels = [WhatsAppChannel(), SmsChannel(), VoiceChannel(), CallsChannel()]
    events = set().union(*(c.proof_events for c in channels))
    for word in {"whatsapp", "sms", "voice", "calls", *events}:
        assert not re.search(rf"[\"']{re.escape(word)}[\"']", code), word


def test_channels_say_what_proves_a_send_and_whether_events_name_the_session() -> None:
    by_name = {name: channel_for(name) for name in ("whatsapp", "sms", "voice", "calls")}
    assert {n: c.events_name_session for n, c in by_name.items()} == {
        "whatsapp": True, "calls": True, "sms": False, "voice": False}
    assert by_name["whatsapp"].proof_events == {"messages.sent"}
    assert "call.ended" in by_name["calls"].proof_events
    assert "sms.delivered" in by_name["sms"].proof_events
    for channel in by_name.values():
        assert not hasattr(channel, "verdict")  # one rule for every channel: retry.classify


def test_channels_say_which_events_move_a_delivery_and_what_they_tell() -> None:
    whatsapp, sms, voice, calls = (known_channel(n) for n in ("whatsapp", "sms", "voice",
                                                               "calls"))
    assert whatsapp and sms and voice and calls and known_channel("email") is None
    assert known_channel(None) is None
    assert whatsapp.progress_of("message.read", None) == (
        S.READ, ("sent_at", "delivered_at", "read_at"))
    assert sms.progress_of("sms.expired", None) == (S.UNDELIVERED, ("sent_at",))
    assert sms.progress_of("message.read", None) is None
    ended = SimpleNamespace(data=SimpleNamespace(answered=True))
    assert voice.progress_of("call.ended", ended) == (S.ANSWERED, ("sent_at", "ended_at"))
    assert voice.progress_of("call.ended", None) == (S.NOT_ANSWERED, ("sent_at", "ended_at"))
    assert calls.progress == {}  # a WhatsApp call moves through tracking.call_events
    assert set(progress_events()) == {*whatsapp.progress, *sms.progress, *voice.progress}
    assert whatsapp.proven_kinds("video") == ("video", "album")
    assert whatsapp.proven_kinds("text") == sms.proven_kinds("text") == ("text",)
    assert [bool(c.detail_keys) for c in (whatsapp, sms, voice, calls)] == [
        False, True, True, False]
    assert [c.reports_keys for c in (whatsapp, sms, voice, calls)] == [
        False, False, True, False]


def test_the_ledgers_stores_have_every_method_of_their_protocols() -> None:
    """Each store protocol of the engine has a ledger class of the same name (the concrete
    ``Ledger`` is the schedules' and the unknown rows' store)."""
    pairs = [(seams.RunControlStore, run_store.RunControlStore),
             (seams.QueueStore, queue_store.QueueStore),
             (seams.SenderStore, sender_store.SenderStore),
             (seams.ExperimentStore, experiment_store.ExperimentStore),
             (seams.RecyclingStore, recycling_store.RecyclingStore),
             (seams.WorkerStore, worker_store.WorkerStore),
             (seams.ScheduleStore, Ledger), (seams.UnknownsStore, Ledger)]
    for protocol, implementation in pairs:
        wanted = {name for name, value in vars(protocol).items()
                  if not name.startswith("_") and callable(value)}
        missing = {name for name in wanted
                   if not callable(getattr(implementation, name, None))}
        assert wanted and not missing, (protocol.__name__, missing)
