"""`trialbook serve` pages over a real ledger, in process (Starlette's test client), and the server itself."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

import pytest
import webledger
from starlette.testclient import TestClient
from webledger import EVAL_RUNS, HOSTILE_RUN, HOSTILE_TASK, LOGGED, TRAIN_RUN

from trialbook.ledger.views import open_readonly
from trialbook.web.app import create_app


@pytest.fixture(scope="module")
def web_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return webledger.build(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def client(web_db: Path) -> TestClient:
    return TestClient(create_app(open_readonly(str(web_db))))


def _trial_ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'href="/trials/(\d+)"', html)]


def test_runs_page_lists_every_run_and_filters(client: TestClient) -> None:
    page = client.get("/").text
    for name in (*EVAL_RUNS, HOSTILE_RUN, TRAIN_RUN):
        assert f">{name}</a>" in page
    assert "33.6%" in page  # 168/500 resolved for the logged SWE-agent run
    train_only = client.get("/?kind=train").text
    assert f">{TRAIN_RUN}</a>" in train_only and LOGGED not in train_only
    assert f">{LOGGED}</a>" in client.get("/?name=claude3.5").text
    assert "no runs match" in client.get("/?name=nothing-like-this").text


def test_runs_keyset_pages_cover_every_run_once(client: TestClient, web_db: Path) -> None:
    from trialbook.ledger import views

    ledger = open_readonly(str(web_db))
    seen, after, more = [], 0, True
    while more:
        rows, more = views.list_runs(ledger, after=after, limit=3)
        seen += [r.name for r in rows]
        after = rows[-1].id if rows else after
    assert seen == [r.name for r in views.list_runs(ledger, limit=1000)[0]] and len(set(seen)) == len(seen) >= 9
    second = client.get(f"/?after={views.list_runs(ledger, limit=3)[0][-1].id}").text
    assert f">{seen[2]}</a>" not in second and f">{seen[3]}</a>" in second


def test_run_page_and_keyset_pagination(client: TestClient) -> None:
    page = client.get(f"/runs/{LOGGED}").text
    assert "resolved 168/500 judged = 33.6%" in page
    assert "django/django" in page  # by-repo table
    assert "<h2>Exceptions / tags</h2>" in page and "<td>no_generation</td>" in page
    assert "<h2>Stack</h2>" in page and "<dt>harness</dt><dd>swebench</dd>" in page
    first = _trial_ids(page)
    assert len(first) == 50
    nxt = re.search(r'id="next" href="([^"]+)"', page)
    assert nxt is not None
    second = _trial_ids(client.get(nxt.group(1).replace("&amp;", "&")).text)
    assert len(second) == 50 and min(second) > max(first)
    resolved = client.get(f"/runs/{LOGGED}?outcome=resolved").text
    assert "<td>unresolved</td>" not in resolved and "<td>resolved</td>" in resolved


def test_trial_page_shows_tests_log_and_neighbours(client: TestClient, web_db: Path) -> None:
    run_page = client.get(f"/runs/{LOGGED}?outcome=resolved").text
    tid = _trial_ids(run_page)[0]
    page = client.get(f"/trials/{tid}").text
    assert 'id="verifier-log"' in page
    assert 'id="tests"' in page and "F2P" in page and "P2P" in page
    assert "report.json" in page  # artifacts
    from trialbook.ledger import views

    cut = views.artifact_tails(open_readonly(str(web_db)), tid, limit_chars=100)
    assert "report.json" in cut and all(len(a.text) <= 100 and a.cut == (a.size > 100) for a in cut.values())
    assert any(a.cut for a in cut.values()) and "characters, the last" not in page  # whole files shown here
    train = client.get(f"/runs/{TRAIN_RUN}").text
    tid = _trial_ids(train)[0]
    neighbours = client.get(f"/trials/{tid}").text
    assert 'id="next"' in neighbours  # the same task's later attempt in the training run


def test_hostile_log_renders_as_text(client: TestClient) -> None:
    tid = _trial_ids(client.get(f"/runs/{HOSTILE_RUN}").text)[0]
    res = client.get(f"/trials/{tid}")
    page = res.text
    assert HOSTILE_TASK in page
    assert "<script>document.title" not in page and "<img src=x" not in page and "<b>not bold</b>" not in page
    assert "&lt;script&gt;document.title=&#39;pwned&#39;" in page
    assert "&lt;b&gt;not bold&lt;/b&gt; &amp;amp; raw" in page
    assert "\x1b" not in page and "[31m" not in page
    assert "FAILED tests/test_x.py::test_y - AssertionError" in page
    assert "script-src" not in res.headers["content-security-policy"]  # and no script may run at all
    assert "<script" not in page


def test_compare_page_forest_plot_and_per_task_links(client: TestClient) -> None:
    base, cands = EVAL_RUNS[1], EVAL_RUNS[2:]
    page = client.get("/compare", params={"base": base, "cand": list(cands)}).text
    assert 'id="forest-plot"><svg' in page and "claim line +4 pp" in page
    assert page.count("<tr><td>20") >= len(cands)  # one row per candidate
    assert "YES" in page  # gemini-2.5-pro 53.6% vs gpt4 22.4% clears the claim rule
    link = re.search(r'class="cand-trial" href="([^"]+)"', page)
    assert link is not None
    redirect = client.get(link.group(1).replace("&amp;", "&"), follow_redirects=False)
    assert redirect.status_code == 303 and redirect.headers["location"].startswith("/trials/")
    split = client.get("/compare", params={"base": base, "cand": list(cands), "split": HOSTILE_RUN}).text
    assert "<td>out</td>" in split and "subset &#39;in&#39; has 1 paired tasks" in split  # in = that run's 1 task
    by_repo = client.get("/compare", params={"base": base, "cand": list(cands), "by_repo": "1"}).text
    assert all(f"<h3>by repo: {c}</h3>" in by_repo for c in cands) and "<td>django/django</td>" in by_repo
    base_link = re.search(r'class="base-trial" href="([^"]+)"', page)
    assert base_link is not None
    to_base = client.get(base_link.group(1).replace("&amp;", "&"), follow_redirects=True)
    assert to_base.status_code == 200 and f">{base}</a>" in to_base.text  # the baseline's trial of that task
    bad = client.get("/compare", params={"base": base, "cand": base}).text
    assert "is the baseline itself" in bad


def test_training_and_audit_pages_have_plots(client: TestClient) -> None:
    page = client.get(f"/training?run={TRAIN_RUN}").text
    for plot in ("pass-plot", "share-plot", "enc-plot", "step-plot"):
        assert f'id="{plot}"><svg' in page
    assert "stall at epoch boundary" in page
    audit = client.get(f"/audit?run={LOGGED}").text
    assert 'id="sig-plot"><svg' in audit and "P2P penalties explained by known artifacts" in audit


def test_bad_input_is_one_line_4xx(client: TestClient) -> None:
    for url, code in (("/runs/no-such-run", 404), ("/trials/999999", 404), ("/training?run=nope", 404),
                      ("/?after=abc", 400), ("/nowhere", 404), (f"/training?run={LOGGED}", 400)):  # fmt: skip
        res = client.get(url)
        assert res.status_code == code, url
        assert 'id="error"' in res.text and "Traceback" not in res.text


def test_serve_binds_localhost_and_never_writes(web_db: Path) -> None:
    before = hashlib.sha256(web_db.read_bytes()).hexdigest()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from trialbook.cli import main; main()", "serve", "--db", str(web_db), "--port", "0"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert m, line
        url = f"http://127.0.0.1:{m.group(1)}"
        for path in ("/", f"/runs/{LOGGED}", f"/training?run={TRAIN_RUN}"):
            with urlopen(url + path, timeout=60) as res:
                assert res.status == 200
        out = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
        assert f"127.0.0.1:{m.group(1)}" in out and f"0.0.0.0:{m.group(1)}" not in out
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    time.sleep(0.1)
    assert hashlib.sha256(web_db.read_bytes()).hexdigest() == before


def test_readonly_ledger_refuses_writes(web_db: Path) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    ledger = open_readonly(str(web_db))
    with pytest.raises(OperationalError, match="readonly"), ledger.engine.begin() as conn:
        conn.execute(text("DELETE FROM trials"))


def test_serve_bad_ledger_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from trialbook.cli import main; main()", "serve", "--db", str(tmp_path / "none.db")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.startswith("error: no ledger at") and "Traceback" not in proc.stderr


def test_html_report_is_self_contained(web_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    webledger.tb("report", "--html", str(out), "--compare", ",".join(EVAL_RUNS[1:]), "--train", TRAIN_RUN,
                 "--audit", LOGGED, "--db", str(web_db))  # fmt: skip
    text = out.read_text()
    assert text.count("<svg") >= 6  # forest, 4 training plots (encounters included), signatures
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing fetched at view time
    assert "<script" not in text and 'href="/' not in text
    assert f"Training: {TRAIN_RUN}" in text and "claim line" in text


def test_odd_run_names_round_trip_through_links(cli, db: str, tmp_path: Path) -> None:
    """Run names keep to names.py's character set ('+', '=' and '@' need care in URLs); task ids may hold markup."""
    name = "team+exp=1@b"
    src = tmp_path / "t.jsonl"
    src.write_text('{"task_id": "a<b>&y-1", "outcome": "resolved", "reward": 1.0}\n')
    assert cli("import", "jsonl", str(src), "--run", name).exit_code == 0
    client = TestClient(create_app(open_readonly(db)))
    page = client.get("/").text
    href = re.search(r'href="(/runs/[^"]+)"', page)
    assert href is not None and name in page
    run = client.get(href.group(1).replace("&amp;", "&"))
    assert run.status_code == 200 and "resolved 1/1 judged = 100.0%" in run.text
    trial = client.get(f"/trials/{_trial_ids(run.text)[0]}")
    assert trial.status_code == 200 and name in trial.text
    assert "a&lt;b&gt;&amp;y-1" in trial.text and "a<b>" not in trial.text
