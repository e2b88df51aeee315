"""``/metrics`` over real servers after a real sandbox run: prometheus-client's own parser
reads it, its counts equal ``campaign status --json``'s, no label holds a phone number or
a campaign's text, and the rule of the address holds (loopback, or a bearer token)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from collections import Counter
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from scheduler.core.errors import ConfigError, SchedulerError
from scheduler.core.timeutil import utcnow
from scheduler.ledger import access
from scheduler.ledger.queries import leases
from scheduler.ledger.runs import Ledger
from scheduler.metrics import serving
from scheduler.settings.load import Settings
from scheduler.tracking.intake_counts import BUCKETS, IntakeStats
from tests.app.support import clean_env
from tests.dashboard.auth_support import user_settings
from tests.dashboard.web_support import project_settings, served
from tests.factories import make_run, open_test_ledger, write_project
from tests.incli import in_process

TOKEN = "a-scrapers-token-of-enough-length-0123456789"
TOKEN_CONFIG = f'[metrics]\ntoken_sha256 = "{hashlib.sha256(TOKEN.encode()).hexdigest()}"\n'


def _samples(text: str) -> list[Sample]:
    """Every sample of a scrape, read by prometheus-client's parser."""
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def _values(samples: list[Sample], name: str, **labels: str) -> dict[tuple[str, ...], float]:
    """``{label values (sorted by label name): value}`` of ``name``'s samples that have
    ``labels``."""
    return {tuple(v for _k, v in sorted(s.labels.items())): s.value for s in samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())}


def _status(env: dict[str, str], cwd: Path, run: int) -> dict:
    out = in_process(env, "status", str(run), "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _phones(project: Path) -> set[str]:
    """The digits of every number in the project's recipient files."""
    found = set()
    for csv in (project / "data").glob("*.csv"):
        found |= {re.sub(r"\D", "", m) for m in re.findall(r"[+\d][\d ()-]{7,}\d",
                                                            csv.read_text(encoding="utf-8"))}
    return found


@pytest.mark.slow
def test_metrics_after_a_sandbox_run_equal_the_ledger(make_sandbox, ledger_url: str,
                                                      tmp_path: Path) -> None:
    service = make_sandbox()
    service.create_session("s1")
    project = tmp_path / "shop"
    campaign = write_project(project, 8, name="lote")
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_STATE_DIR=str(tmp_path / "state"),
                    CAMPAIGN_DATABASE_URL=ledger_url, CAMPAIGN_RECEIVER_PORT="0",
                    CAMPAIGN_VERIFY_GRACE_S="1", CAMPAIGN_WEBHOOK_RETRY_HORIZON_S="3")
    done = in_process(env, "run", str(campaign), cwd=project)  # its receiver: this process
    assert done.returncode == 0, done.stderr
    settings = project_settings(project, ledger_url)
    with open_test_ledger(ledger_url) as ledger:
        waiting = make_run(ledger, 5, name="waiting")  # unfinished: its own series
        ledger.request(waiting, "pause")
        finished, open_run = _status(env, project, 1), _status(env, project, waiting)
        with served(ledger, settings) as web:
            scrape = web.get("/metrics")
    assert scrape.status_code == 200, scrape.text
    assert scrape.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "set-cookie" not in scrape.headers  # no session made for a scraper
    samples = _samples(scrape.text)

    # every run's rows by state: the two runs' status --json counts, added
    expected = Counter(finished["counts"]) + Counter(open_run["counts"])
    by_state: Counter[str] = Counter()
    for (_channel, state), n in _values(samples, "campaign_deliveries").items():
        by_state[state] += int(n)
    assert by_state == expected and sum(expected.values()) == 13
    # the unfinished run's own series equal its status; the finished run has none
    assert {state: int(n) for (_c, _r, state), n in
            _values(samples, "campaign_run_deliveries", run=str(waiting)).items()} == \
        open_run["counts"]
    assert not _values(samples, "campaign_run_deliveries", run="1")
    assert _values(samples, "campaign_run_due_rows", run=str(waiting)) == {
        ("whatsapp", str(waiting)): open_run["counts"]["planned"]}
    runs = _values(samples, "campaign_runs")
    assert runs[(finished["status"],)] == 1 and runs[("paused",)] == 1
    # per sender: status --json's rows of s1 (only the finished run went through it)
    s1 = next(s for s in finished["senders"] if s["sender"] == "s1")
    groups = {group: int(n) for (_c, group, _s), n in
              _values(samples, "campaign_sender_deliveries", sender="s1").items()}
    assert (groups["sent"], groups["failed"], groups["unknown"], groups["replied"]) == (
        s1["sent"], s1["failed"], s1["unknown"], s1["replies"])
    assert s1["sent"] == 8
    assert _values(samples, "campaign_sender_state", sender="s1", state="healthy") or \
        _values(samples, "campaign_sender_state", sender="s1", state="warming")
    # the finished run's duration is counted once
    assert _values(samples, "campaign_run_duration_seconds_count")[
        ("whatsapp", finished["status"])] == 1
    # the run's receiver (in this process) stored the sandbox's webhooks
    stored = _values(samples, "campaign_webhook_requests_total", route="session",
                     outcome="stored")
    assert stored and next(iter(stored.values())) > 0
    assert _values(samples, "campaign_webhook_request_seconds_count", route="session")

    # no label holds a phone number, a campaign's name or any long number
    phones = _phones(project)
    assert phones
    labels = {v for s in samples for v in s.labels.values()}
    assert not [v for v in labels if re.search(r"\d{7,}", v)
                or any(p[-8:] in re.sub(r"\D", "", v) for p in phones if len(p) >= 8)]
    assert not labels & {"lote", "waiting", finished["campaign"]}


def test_metrics_answer_loopback_or_a_token_never_a_login(ledger: Ledger, ledger_url: str,
                                                           tmp_path: Path) -> None:
    make_run(ledger, 2)
    logins = project_settings(tmp_path, ledger_url, TOKEN_CONFIG)
    logins = logins.model_copy(update={"dashboard": user_settings()})
    with served(ledger, logins) as web:
        assert web.get("/").status_code in (302, 303, 307)  # the pages need a login
        local = web.get("/metrics")
        assert local.status_code == 200 and _samples(local.text)
        assert "set-cookie" not in local.headers
        elsewhere = {"host": "metrics.example.com"}  # as a request from elsewhere looks
        assert web.get("/metrics", headers=elsewhere).status_code == 401
        wrong = web.get("/metrics", headers={**elsewhere, "authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "campaign_" not in wrong.text
        right = web.get("/metrics", headers={**elsewhere, "authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 200 and _samples(right.text)
        assert web.post("/metrics").status_code == 405
    open_access = project_settings(tmp_path, ledger_url)  # no token: loopback only
    with served(ledger, open_access) as web:
        refused = web.get("/metrics", headers={"host": "metrics.example.com"})
        assert refused.status_code == 403 and "token_sha256" in refused.text


def _serve_settings(tmp_path: Path, ledger_url: str, config: str) -> Settings:
    return project_settings(tmp_path, ledger_url, config)


def test_serves_own_metrics_port(ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    run = make_run(ledger, 3)
    settings = _serve_settings(tmp_path, ledger_url, "[metrics]\nserve = true\nport = 0\n")
    with serving.serve_alongside(settings, ledger) as address:
        assert address is not None and address.endswith("/metrics")
        scrape = httpx.get(address, timeout=20)
        other = httpx.get(address.removesuffix("metrics") + "runs", timeout=20)
    assert scrape.status_code == 200 and other.status_code == 404
    samples = _samples(scrape.text)
    assert _values(samples, "campaign_run_deliveries", run=str(run), state="planned") == {
        ("whatsapp", str(run), "planned"): 3}
    with serving.serve_alongside(_serve_settings(tmp_path, ledger_url, "receiver_port = 0\n"),
                                 ledger) as off:
        assert off is None  # [metrics] serve = false: no port


def test_serves_metrics_port_refuses_open_or_shared_addresses(ledger: Ledger, ledger_url: str,
                                                               tmp_path: Path) -> None:
    public = _serve_settings(tmp_path, ledger_url,
                             '[metrics]\nserve = true\nhost = "0.0.0.0"\nport = 0\n')
    with pytest.raises(SchedulerError, match="token_sha256"), \
            serving.serve_alongside(public, ledger):
        pass
    shared = _serve_settings(tmp_path, ledger_url,
                             "receiver_port = 8788\n[metrics]\nserve = true\nport = 8788\n")
    with pytest.raises(ConfigError, match="webhook receiver"), \
            serving.serve_alongside(shared, ledger):
        pass
    with pytest.raises(ConfigError, match="token_sha256"):
        _serve_settings(tmp_path, ledger_url, '[metrics]\ntoken_sha256 = "secret"\n')


def test_workers_and_their_leases_on_postgresql(ledger: Ledger, ledger_url: str,
                                                 tmp_path: Path) -> None:
    if ledger.engine.dialect.name == "sqlite":
        pytest.skip("workers lease senders on PostgreSQL only")
    now = utcnow()
    with access.transaction(ledger.engine, "register a worker") as conn:
        leases.register_worker(conn, "w-metrics", socket.gethostname(), os.getpid(), now)
        for sender in ("s1", "s2", "@trigger"):
            leases.acquire(conn, sender, "w-metrics", now, now + timedelta(minutes=5))
    with served(ledger, project_settings(tmp_path, ledger_url)) as web:
        samples = _samples(web.get("/metrics").text)
    assert _values(samples, "campaign_worker_leases") == {("w-metrics",): 2}  # not @trigger
    assert _values(samples, "campaign_workers_live") == {(): 1}


def test_the_intake_counters_bucket_and_judge_each_request() -> None:
    stats = IntakeStats()
    stats.observe("session", 200, BUCKETS[0])  # on a bound: counted in that bucket
    stats.observe("session", 401, 0.2)
    stats.observe("account", 503, 99.0)  # beyond the last bound: +Inf only
    stats.observe("elsewhere", 200, 0.1)  # not a webhook route: not counted
    seen = stats.snapshot()
    assert seen.requests[("session", "stored")] == 1
    assert seen.requests[("session", "refused")] == 1
    assert seen.requests[("account", "failed")] == 1
    assert sum(seen.requests.values()) == 3
    assert seen.buckets["session"][0] == 1 and seen.buckets["account"][-1] == 1
    assert sum(seen.buckets["session"]) == 2 and seen.seconds["session"] == BUCKETS[0] + 0.2


def test_a_ledger_that_cannot_be_read_fails_the_scrape_saying_why(
        ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    make_run(ledger, 2)
    with served(ledger, project_settings(tmp_path, ledger_url)) as web:
        assert web.get("/metrics").status_code == 200
        with access.transaction(ledger.engine, "drop a table") as conn:
            conn.exec_driver_sql("DROP TABLE run_sender_tallies")
        failed = web.get("/metrics")
    assert failed.status_code == 503 and "could not read the metrics" in failed.text
    assert "campaign_runs" not in failed.text  # no partial scrape
