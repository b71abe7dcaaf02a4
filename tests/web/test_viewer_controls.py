"""The viewer answers what the CLI answers: the web compare's metric, exclude-repo and split controls, `report --html
--metric reward`, the trial page's pass/fail colours, failures first and the canary in words, the training plots
(no fall to 0 at a bucket with nothing graded, no negative waits, whole-number ticks), few-task labels on by-repo
intervals, and the legend of terms on every page that uses them."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest
from starlette.testclient import TestClient

from trialbook.ledger.views import open_readonly
from trialbook.training.sim_rollouts import RolloutConfig, generate
from trialbook.web import plots
from trialbook.web.app import create_app

TERMS = ("judged", "claim", "in / out", "CBF")


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


@pytest.fixture
def ledger(cli, db: str, tmp_path: Path) -> str:
    """base / cand over 20 django + 3 sympy tasks: every reward partial (0.5 vs 0.75), so `resolved` sees no
    difference and `reward` sees +25 pp; `half`: the first 10 django tasks (a split); a trial with a canary."""
    tasks = [f"django__django-{i}" for i in range(20)] + [f"sympy__sympy-{i}" for i in range(3)]
    for name, reward in (("base", 0.5), ("cand", 0.75)):
        rows = [{"task_id": t, "outcome": "unresolved", "reward": reward} for t in tasks]
        assert cli("import", "jsonl", str(_jsonl(tmp_path / f"{name}.jsonl", rows)), "--run", name).exit_code == 0
    half = [{"task_id": t, "resolved": True} for t in tasks[:10]]
    assert cli("import", "jsonl", str(_jsonl(tmp_path / "half.jsonl", half)), "--run", "half").exit_code == 0
    tests = {"FAIL_TO_PASS": {"tests/a.py::test_fix": "pass"},
             "PASS_TO_PASS": {"tests/a.py::test_old": "pass", "tests/a.py::test_broke": "fail"}}  # fmt: skip
    canary = {"task_id": "django__django-1", "outcome": "unresolved", "reward": 0.0, "tests": tests,
              "canary": {"name": "test_trialbook_canary_ab12", "seen": "failed"}}  # fmt: skip
    assert cli("import", "jsonl", str(_jsonl(tmp_path / "c.jsonl", [canary])), "--run", "canary").exit_code == 0
    return db


def _cells(html: str, table_id: str) -> list[list[str]]:
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in body.split("<tr")[2:]]


def test_compare_honours_metric_exclude_repo_and_split(ledger: str) -> None:
    client = TestClient(create_app(open_readonly(ledger)))
    page = client.get("/compare?base=base&cand=cand").text
    assert _cells(page, "comparisons")[0][1] == "1"  # the look column (stats/looks.py), as `compare` prints it
    assert _cells(page, "comparisons")[0][6] == "+0.00"  # resolved: nothing reaches reward 1.0
    assert 'name="metric"' in page and 'name="exclude_repo"' in page
    page = client.get("/compare?base=base&cand=cand&metric=reward").text
    row = _cells(page, "comparisons")[0]
    assert row[3] == "23" and row[6] == "+25.00" and "mean reward" in page
    page = client.get("/compare?base=base&cand=cand&metric=reward&exclude_repo=sympy/sympy").text
    assert _cells(page, "comparisons")[0][3] == "20" and 'id="excluded"' in page and "sympy/sympy (3 tasks)" in page
    page = client.get("/compare?base=base&cand=cand&metric=reward&split=half").text
    subsets = [r[2] for r in _cells(page, "comparisons")]
    assert subsets == ["all", "in", "out"]
    bad = client.get("/compare?base=base&cand=cand&metric=stars").text
    assert "--metric must be one of" in bad and "compare-form" in bad  # one line above the form
    page = client.get("/compare?base=base&cand=cand&metric=reward&by_repo=1").text
    assert "few tasks" in page.split("by repo: cand", 1)[1]  # sympy's 3 tasks
    assert all(t in page for t in TERMS) and 'id="legend"' in page


def test_report_html_compares_partial_rewards(cli, ledger: str, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert cli("report", "--html", str(out), "--compare", "base,cand", "--metric", "reward").exit_code == 0
    html = out.read_text()
    assert _cells(html, "comparisons")[0][6] == "+25.00" and 'id="legend"' in html
    assert cli("report", "--html", str(out), "--compare", "base,cand", "--metric", "stars").exit_code == 2


def test_trial_page_colours_failures_first_and_explains_the_canary(ledger: str) -> None:
    client = TestClient(create_app(open_readonly(ledger)))
    run = client.get("/runs/canary").text
    (trial,) = set(re.findall(r'href="/trials/(\d+)"', run))
    page = client.get(f"/trials/{trial}").text
    rows = re.findall(r'<tr class="test-(\w+)"><td>\w+</td><td>([^<]+)</td>', page)
    assert rows[0] == ("fail", "tests/a.py::test_broke") and {r[0] for r in rows[1:]} == {"pass"}
    assert '<dd id="outcome" class="bad">unresolved</dd>' in page
    assert "1 of 3 did not pass" in page
    note = page.split('id="canary"', 1)[1].split("</div>", 1)[0]
    assert "test_trialbook_canary_ab12" in note and "must fail" in note and "does not count against" in note


def test_training_plots_skip_ungraded_buckets_and_bad_timestamps(cli, db: str, tmp_path: Path) -> None:
    roll, steps = tmp_path / "roll.jsonl", tmp_path / "steps.jsonl"
    generate(RolloutConfig(pool=32, epochs=2, incomplete=16, cross_epoch=True), roll, steps)
    lines = [orjson.loads(x) for x in steps.read_bytes().splitlines()]
    t3 = datetime.fromisoformat(lines[2]["finished_at"])
    lines[3]["finished_at"] = (t3 - timedelta(seconds=50)).isoformat()  # step 4 "finished" before step 3
    lines[3]["started_at"] = (t3 - timedelta(seconds=90)).isoformat()
    _jsonl(steps, lines)
    assert cli("import", "jsonl", str(roll), "--run", "t", "--kind", "train").exit_code == 0
    assert cli("import", "steps", str(steps), "--run", "t").exit_code == 0
    from trialbook.ledger.store import Ledger
    from trialbook.training.analysis import train_report

    report = train_report(Ledger(db), "t", bucket=1)
    assert report.buckets[-1].judged == 0  # the cut-off trajectories: a bucket with nothing graded
    svg = plots.outcome_shares(report, {"agent_timeout": "CBF"})
    assert "nothing graded left out" in svg
    svg = plots.step_timing({1: 600.0, 2: 610.0, 3: 590.0, 4: -50.0, 5: 605.0}, [], 600.0)
    assert "1 step with bad timestamps left out" in svg
    assert _x_ticks(svg, "optimizer step") == ["1", "2", "3", "4", "5"]
    # buckets of 2 versions are drawn at their midpoints (0.5, 2.5, ...): the ticks stay whole numbers
    ticks = _x_ticks(plots.pass_rate(train_report(Ledger(db), "t", bucket=2)), "weight version")
    assert ticks and all(re.fullmatch(r"−?\d+", t) for t in ticks), ticks


def _x_ticks(svg: str, xlabel: str) -> list[str]:
    """matplotlib writes an axes' x tick labels, then its x label: the texts before the label."""
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    return texts[: next(i for i, t in enumerate(texts) if t.startswith(xlabel))]


def test_legend_on_every_page_that_uses_the_terms(ledger: str) -> None:
    client = TestClient(create_app(open_readonly(ledger)))
    for url in ("/runs/base", "/compare?base=base&cand=cand"):
        page = client.get(url).text
        assert 'id="legend"' in page, url
        assert 'id="legend"' not in client.get("/").text  # the runs list uses none of them
