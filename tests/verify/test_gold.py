"""`validate` records the gold statuses the strict verdict is anchored to (verify/gold.py): by hand, then for real on
a copy of plain-bugfix whose suite expects one P2P test to XFAIL with the reference solution. Without GOLD_STATUSES
the strict verdict refuses the oracle (an XFAIL is not a pass) and validate prints the entry that records it; with
the entry in tests/config.json (written by `validate --write-gold`) the same task validates `ok`."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from paths import EXAMPLES
from trialbook.cli import app
from trialbook.errors import UserError
from trialbook.verify.gold import config_line, gold_statuses, write_gold

XF = "tests/test_stats.py::test_median_odd"


def test_a_status_kept_in_every_graded_oracle_run_is_gold() -> None:
    graded = {"official_reward": 1.0, "not_gold": {XF: "XFAIL", "t::flaky": "SKIPPED", "t::bad": "FAILED"}}
    other = {"official_reward": 1.0, "not_gold": {XF: "XFAIL", "t::bad": "FAILED"}}
    assert gold_statuses([graded, other, None, {"canary": {}}]) == {XF: "XFAIL"}  # flaky: not in every run
    assert gold_statuses([{"not_gold": {XF: "XFAIL"}}]) == {}  # not graded strictly: nothing to anchor
    assert gold_statuses([graded, {"official_reward": 1.0, "not_gold": {XF: "XPASS"}}]) == {}  # moved between runs
    assert json.loads("{" + config_line({XF: "XFAIL"}) + "}") == {"GOLD_STATUSES": {XF: "XFAIL"}}


def test_write_gold_merges_into_config_json_atomically_and_refuses_what_it_cannot_write(tmp_path) -> None:
    (tmp_path / "tests").mkdir()
    config = tmp_path / "tests" / "config.json"
    config.write_text(json.dumps({"FAIL_TO_PASS": ["a"], "GOLD_STATUSES": {"t::old": "SKIPPED", XF: "XPASS"}}))
    assert write_gold(tmp_path, {XF: "XFAIL"}) == config
    assert json.loads(config.read_text()) == {
        "FAIL_TO_PASS": ["a"], "GOLD_STATUSES": {"t::old": "SKIPPED", XF: "XFAIL"},
    }  # fmt: skip
    assert [p.name for p in config.parent.iterdir()] == ["config.json"]  # no temporary file left
    for text in ("[1, 2]", "{not json"):
        config.write_text(text)
        with pytest.raises(UserError, match="config.json: not"):
            write_gold(tmp_path, {XF: "XFAIL"})
        assert config.read_text() == text  # untouched
    config.unlink()
    config.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}")
    with pytest.raises(UserError, match="not a regular file"):
        write_gold(tmp_path, {XF: "XFAIL"})
    assert (tmp_path / "elsewhere.json").read_text() == "{}"


def _validate(db: str, tasks: str, run: str, runs: str, *more: str) -> tuple[dict, str]:
    res = CliRunner().invoke(app, ["validate", tasks, "--repeats", "1", "--run", run, "--runs-dir", runs, "--json",
                                   "--db", db, *more])  # fmt: skip
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return {t["task_id"]: t for t in json.loads(res.stdout)["tasks"]}, res.stderr


@pytest.mark.docker
def test_validate_prints_the_gold_statuses_and_the_task_validates_with_them(engine, tmp_path) -> None:
    task = tmp_path / "tasks" / "xfail-gold"
    shutil.copytree(EXAMPLES / "plain-bugfix", task)
    tests = task / "tests" / "test_stats.py"
    xfailing = "@pytest.mark.xfail(reason='a known gap')\ndef test_median_odd():\n    assert median([3, 1, 2]) == 3"
    text = tests.read_text().replace("def test_median_odd():\n    assert median([3, 1, 2]) == 2", xfailing)
    tests.write_text("import pytest\n" + text)
    db, runs = str(tmp_path / "l.db"), str(tmp_path / "runs")
    config = json.loads((task / "tests" / "config.json").read_text())
    verdicts, err = _validate(db, str(tmp_path / "tasks"), "g1", runs, "--write-gold")
    first = verdicts["xfail-gold"]
    assert first["verdict"] == "oracle_fails", first
    assert first["details"]["gold_statuses"] == {XF: "XFAIL"}
    assert "task xfail-gold: GOLD_STATUSES (1 test(s)) written to" in err, err
    written = json.loads((task / "tests" / "config.json").read_text())
    assert written == {**config, **json.loads("{" + first["details"]["config_json"] + "}")}
    verdicts, err = _validate(db, str(tmp_path / "tasks"), "g2", runs, "--write-gold")
    assert verdicts["xfail-gold"]["verdict"] == "ok", verdicts
    assert "nothing written" in err and json.loads((task / "tests" / "config.json").read_text()) == written
