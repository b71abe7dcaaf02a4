"""`validate` records the gold statuses the strict verdict is anchored to (verify/gold.py): by hand, then for real on
a copy of plain-bugfix whose suite expects one P2P test to XFAIL with the reference solution. Without GOLD_STATUSES
the strict verdict refuses the oracle (an XFAIL is not a pass) and validate prints the entry that records it; with
the entry in tests/config.json the same task validates `ok`."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from paths import EXAMPLES
from trialbook.cli import app
from trialbook.verify.gold import config_line, gold_statuses

XF = "tests/test_stats.py::test_median_odd"


def test_a_status_kept_in_every_graded_oracle_run_is_gold() -> None:
    graded = {"official_reward": 1.0, "not_gold": {XF: "XFAIL", "t::flaky": "SKIPPED", "t::bad": "FAILED"}}
    other = {"official_reward": 1.0, "not_gold": {XF: "XFAIL", "t::bad": "FAILED"}}
    assert gold_statuses([graded, other, None, {"canary": {}}]) == {XF: "XFAIL"}  # flaky: not in every run
    assert gold_statuses([{"not_gold": {XF: "XFAIL"}}]) == {}  # not graded strictly: nothing to anchor
    assert gold_statuses([graded, {"official_reward": 1.0, "not_gold": {XF: "XPASS"}}]) == {}  # moved between runs
    assert json.loads("{" + config_line({XF: "XFAIL"}) + "}") == {"GOLD_STATUSES": {XF: "XFAIL"}}


def _validate(db: str, tasks: str, run: str, runs: str) -> dict:
    res = CliRunner().invoke(app, ["validate", tasks, "--repeats", "1", "--run", run, "--runs-dir", runs, "--json",
                                   "--db", db])  # fmt: skip
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return {t["task_id"]: t for t in json.loads(res.stdout)["tasks"]}


@pytest.mark.docker
def test_validate_prints_the_gold_statuses_and_the_task_validates_with_them(engine, tmp_path) -> None:
    task = tmp_path / "tasks" / "xfail-gold"
    shutil.copytree(EXAMPLES / "plain-bugfix", task)
    tests = task / "tests" / "test_stats.py"
    xfailing = "@pytest.mark.xfail(reason='a known gap')\ndef test_median_odd():\n    assert median([3, 1, 2]) == 3"
    text = tests.read_text().replace("def test_median_odd():\n    assert median([3, 1, 2]) == 2", xfailing)
    tests.write_text("import pytest\n" + text)
    db, runs = str(tmp_path / "l.db"), str(tmp_path / "runs")
    first = _validate(db, str(tmp_path / "tasks"), "g1", runs)["xfail-gold"]
    assert first["verdict"] == "oracle_fails", first
    assert first["details"]["gold_statuses"] == {XF: "XFAIL"}
    config = json.loads((task / "tests" / "config.json").read_text())
    (task / "tests" / "config.json").write_text(
        json.dumps({**config, **json.loads("{" + first["details"]["config_json"] + "}")})
    )
    second = _validate(db, str(tmp_path / "tasks"), "g2", runs)["xfail-gold"]
    assert second["verdict"] == "ok", second
