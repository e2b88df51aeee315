"""``campaign demo`` as a user runs it: against the embedded sandbox, or the configured
service (said so first); after the WhatsApp tour, a short SMS run and a short voice run,
each saying its requests and every recipient's outcome as the service decided it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import openpyxl
import pytest

from scheduler.sandbox.testing import SandboxHandle
from scheduler.service.account_models import cause_text
from tests.app.support import clean_env, cli, text_sends
from tests.incli import in_process

ROOT = Path(__file__).resolve().parents[2]
SMS_NUMBERS = {"5511987654301", "5521998765402", "5531976543203", "5541988881204",
               "5551991234505", "5561982345606"}
CALL_NUMBERS = {"5511974561201", "5521985672302", "5531996783403", "5541977894504",
                "5551988905605"}
VOICE_NUMBERS = {"5511973456701", "5521984567802", "5531995678903", "5581986789004",
                 "5571997890105"}


def _demo_project(tmp_path: Path) -> Path:
    root = tmp_path / "demo-project"
    for folder in ("campaigns", "templates", "data"):
        shutil.copytree(ROOT / folder, root / folder)
    return root


def _part(out: str, start: str, end: str) -> str:
    """The text of a part of the demo's output, wrapped lines joined."""
    text = out[out.index(start):out.index(end)]
    return re.sub(r"\n {5}(?=\S)", " ", text)  # a wrapped line goes on 5 columns in


def _sms_said(part: str) -> dict[str, str]:
    """number → what the SMS part said of it (``delivered`` or ``undelivered (CODE)``)."""
    said: dict[str, str] = {}
    for line in part.splitlines():
        match = re.match(r"\s+(delivered|undelivered|no report yet): (.*)$", line)
        if match:
            for item in match.group(2).split(", "):
                number, _, code = item.partition(" ")
                said[number] = f"{match.group(1)} {code}".strip()
    return said


def _voice_said(part: str) -> dict[str, str]:
    """number → the rest of its line in the voice part."""
    said = {}
    for line in part.splitlines():
        match = re.match(r"\s+(55\d{11}) .*? ((?:answered|not answered|no outcome yet).*)$",
                         line)
        if match:
            said[match.group(1)] = match.group(2).strip()
    return said


def _calls_said(part: str) -> dict[str, str]:
    """number → the session that called it, in the WhatsApp calls part."""
    return {m.group(1): m.group(2) for m in re.finditer(r"(55\d{11}) (demo-\d\d): ", part)}


@pytest.mark.slow
def test_the_demo_shows_an_sms_and_a_voice_run_on_the_embedded_sandbox(tmp_path) -> None:
    root = _demo_project(tmp_path)
    out = cli(clean_env(), "demo", "--root", str(root), cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "embedded sandbox" in out.stdout
    end = out.stdout[out.stdout.index("demo finished"):]  # the dashboard, on the demo's ledger
    # the command as it can be typed: `campaign` when that is on PATH, else its own path
    typed = re.search(rf"CAMPAIGN_DATABASE_URL=sqlite:///{re.escape(str(root))}/state/demo\.db"
                      r" (\S*campaign) dashboard", end)
    assert typed is not None and "open http://127.0.0.1:8790/" in end, end
    found = shutil.which("campaign")
    assert typed.group(1) == "campaign" or found is None or \
        Path(found).resolve() != Path(typed.group(1)).resolve()
    sms = _part(out.stdout, "5. SMS campaign", "6. Voice campaign")
    voice = _part(out.stdout, "6. Voice campaign", "7. WhatsApp calls")
    calls = _part(out.stdout, "7. WhatsApp calls", "8. Keeping numbers healthy")
    health = " ".join(_part(out.stdout, "8. Keeping numbers healthy", "demo finished").split())
    # the four who read the same offer share one bulk request; each coupon is a text apart
    assert "6 recipients, 3 requests" in sms
    assert "sms/bulk → 4 numbers" in sms and sms.count("sms/send → ") == 2
    assert set(_sms_said(sms)) == SMS_NUMBERS
    assert all(s.startswith(("delivered", "undelivered")) for s in _sms_said(sms).values())
    assert re.search(r"6 segments · R\$ \d+\.\d\d", sms)
    assert "5 recipients, 1 request" in voice and "voice/bulk → 5 recipients" in voice
    assert "(loja, nome, pedido)" in voice
    said = _voice_said(voice)
    assert set(said) == VOICE_NUMBERS
    assert all(s.startswith(("answered, ", "not answered")) for s in said.values())
    assert "Gabriela, Paulista, 48213" in voice  # each recipient's variables
    # each WhatsApp call with its events: answered ones ended with a length and a recording
    assert "5 calls through calls/stream (recorded) from demo-01, demo-02" in calls
    placed = _calls_said(calls)
    assert set(placed) == CALL_NUMBERS
    assert set(placed.values()) <= {"demo-01", "demo-02"}
    assert re.search(r"ringing → connected → ended \(hangup\), \d+\.\d s, recorded", calls)
    # the sender in trouble: slowed, then held once its session logged out; none after
    assert "demo-03: new → healthy → throttled (score" in health
    assert "logged_out (its session is logged_out (connection.status))" in health
    assert "sends through demo-03 after its logout (the sandbox's record): 0" in health
    sent = dict(re.findall(r"(demo-0\d) (\d+)", health.split("sent: ")[1].split("demo-03:")[0]))
    assert 8 < int(sent["demo-03"]) < 40 and int(sent["demo-04"]) + int(sent["demo-05"]) > 150
    shown = out.stdout[out.stdout.index("5. SMS campaign"):out.stdout.index("demo finished")]
    assert max(len(line) for line in shown.splitlines()) <= 80
    # the report's Summary counts what `campaign plan` planned (scheduler.ledger.funnel)
    plan = cli(clean_env(), "plan", "campaigns/demo.toml", "--json", cwd=root, timeout=120)
    assert plan.returncode == 0, plan.stderr[-2000:]
    planned = sum(step["planned"] for step in json.loads(plan.stdout)["steps"])
    summary = {row[0]: row[1] for row in openpyxl.load_workbook(
        root / "reports" / "demo-run-1.xlsx")["Summary"].iter_rows(values_only=True)}
    assert summary["Planned"] == planned > 0
    # written after the run's last receipts came in: no send still waits for its
    # messages.sent (the receiver stays up for them, then the report)
    assert "the last receipts came" in out.stdout and "accepted" not in summary
    assert summary["delivered"] + summary["read"] + summary["sent"] == planned


@pytest.mark.slow
def test_the_demo_runs_against_the_configured_service_and_says_so(make_sandbox, tmp_path
                                                                  ) -> None:
    service: SandboxHandle = make_sandbox(sms_undelivered_rate=0.3, sms_failed_rate=0.1,
                                          voice_answer_rate=0.6)
    root = _demo_project(tmp_path)
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key)
    out = cli(env, "demo", "--root", str(root), cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    host = service.base_url.removeprefix("http://")
    assert f"the tour runs against the service at {host}" in out.stdout
    assert "embedded sandbox" not in out.stdout
    sends = service.sends()
    paths = {s["path"] for s in sends}
    assert "/api/v1/messages/send/pix" in str(paths) or any("pix" in p for p in paths)
    assert len(text_sends(sends)) > 100  # the demo campaign went there too
    # the SMS and voice parts went there as well, in the requests the demo said
    bulks = [s for s in sends if s["path"] == "/api/v1/sms/bulk"]
    singles = [s for s in sends if s["path"] == "/api/v1/sms/send"]
    calls = [s for s in sends if s["path"] == "/api/v1/voice/bulk"]
    assert [len(s["to"]) for s in bulks] == [4] and len(singles) == 2 and len(calls) == 1
    people = calls[0]["body"]["recipients"]
    assert {p["phone"] for p in people} == VOICE_NUMBERS
    assert all(set(p["variables"]) == {"nome", "loja", "pedido"} for p in people)
    # every recipient's outcome is said as the service decided it
    sms = _sms_said(_part(out.stdout, "5. SMS campaign", "6. Voice campaign"))
    decided = {o["to"]: o for o in service.outcomes("sms")}
    assert set(sms) == set(decided) == SMS_NUMBERS
    for number, outcome in decided.items():
        if outcome["outcome"] == "delivered":
            assert sms[number] == "delivered"
        else:
            code = f" ({outcome['errorCode']})" if outcome["errorCode"] else ""
            assert sms[number] == f"undelivered{code}", (number, outcome)
    voice = _voice_said(_part(out.stdout, "6. Voice campaign", "7. WhatsApp calls"))
    called = {o["to"]: o for o in service.outcomes("voice")}
    assert set(voice) == set(called) == VOICE_NUMBERS
    for number, call in called.items():
        if call["answered"]:
            pressed = f'pressed "{call["digits"]}"' if call["digits"] else "no key pressed"
            assert voice[number] == f"answered, {call['talkSeconds']} s, {pressed}"
        else:
            cause = cause_text(call["cause"], call["causeDescription"])
            assert voice[number] == f"not answered ({cause})"
    # the WhatsApp calls went to the service, each said as the service decided it
    calls = _part(out.stdout, "7. WhatsApp calls", "8. Keeping numbers healthy")
    # a sender's trouble cannot be staged on a real service: the part says so
    assert "campaigns/demo_health.toml needs the sandbox to stage a sender's trouble: " \
        "part skipped" in _part(out.stdout, "8. Keeping numbers healthy", "demo finished")
    outgoing = service.http.get("/sandbox/calls/outgoing").json()["calls"]
    assert {c["to"].split("@")[0] for c in outgoing} == CALL_NUMBERS
    for call in outgoing:
        number = call["to"].split("@")[0]
        line = next(line for line in calls.splitlines() if number in line)
        if call["answered"]:
            said = re.search(r"ringing → connected → ended \(hangup\), (\d+\.\d) s, "
                             r"recorded$", line)
            assert said and abs(float(said.group(1)) - call["talkS"]) <= 0.06, (line, call)
        else:
            assert line.endswith("ringing → not answered (no_answer)"), (line, call)


def test_the_demo_refuses_a_half_configured_service(tmp_path) -> None:
    root = _demo_project(tmp_path)
    out = in_process(clean_env(CAMPAIGN_BASE_URL="http://127.0.0.1:9"), "demo", "--root", str(root),
              cwd=tmp_path)
    assert out.returncode == 1 and "CAMPAIGN_API_KEY" in out.stderr


def test_the_demo_asks_before_sending_through_a_service_off_this_machine(tmp_path) -> None:
    root = _demo_project(tmp_path)
    env = clean_env(CAMPAIGN_BASE_URL="https://api.example.invalid",
                    CAMPAIGN_API_KEY="k" * 24)
    out = in_process(env, "demo", "--root", str(root), cwd=tmp_path)
    assert out.returncode == 1, out.stdout
    message = " ".join(out.stderr.split())
    assert "SMS and calls" in message and "data/demo_voz.csv" in message
    assert "campaign demo --yes" in message
    assert "Session" not in out.stdout  # nothing was started
