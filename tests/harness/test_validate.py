"""`trialbook validate` on the real Docker daemon: one test per verdict on the example pitfall tasks
(plus tiny tasks built here), the sphinx-like re-application, and image variants.

Three validate calls for the whole file (a mixed folder x2 repeats, flaky-p2p x6, two image
variants x1) keep it to a couple of minutes on a loaded machine.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ledgerdicts import run_dict, trial_dicts
from paths import EXAMPLES
from trialbook.cli import app
from trialbook.errors import TrialbookError
from trialbook.harness.workflows.validate import RULES, AgentView, TaskView, Variant, parse_variants, verdict
from trialbook.ledger.rows import TrialRow
from trialbook.ledger.store import Ledger

STATS_FIXED = (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text()


def run_cli(db: str, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, [*args, "--db", db], env={"COLUMNS": "200"})  # human tables unwrapped
    if isinstance(res.exception, TrialbookError):
        return res.exception.exit_code, res.stdout, str(res.exception)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def copy_task(src: str, dest: Path) -> Path:
    shutil.copytree(EXAMPLES / src, dest)
    return dest


def nop_passes_task(dest: Path) -> None:
    """plain-bugfix whose FAIL_TO_PASS test already passes on the unfixed code."""
    copy_task("plain-bugfix", dest)
    (dest / "tests" / "test_stats.py").write_text(
        "from stats import mean, median\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
        "def test_median_odd():\n    assert median([3, 1, 2]) == 2\n"
    )
    config = {
        "FAIL_TO_PASS": ["tests/test_stats.py::test_median_odd"],
        "PASS_TO_PASS": ["tests/test_stats.py::test_mean"],
    }
    (dest / "tests" / "config.json").write_text(json.dumps(config))


def oracle_fails_task(dest: Path) -> None:
    """plain-bugfix whose reference solution is wrong (median of an even list takes the upper middle)."""
    copy_task("plain-bugfix", dest)
    solve = dest / "solution" / "solve.sh"
    wrong = STATS_FIXED.replace("return (ordered[mid - 1] + ordered[mid]) / 2", "return ordered[mid]")
    assert wrong != STATS_FIXED
    solve.write_text(wrong)


def strip_reapply(dest: Path) -> None:
    test_sh = dest / "tests" / "test.sh"
    lines = test_sh.read_text().splitlines(keepends=True)
    kept = [line for line in lines if "REAPPLY-SETUP" not in line]
    assert len(lines) - len(kept) == 3
    test_sh.write_text("".join(kept))


@pytest.fixture(scope="module")
def mixed(engine, tmp_path_factory):
    """One validate over a folder holding a task for every non-flaky verdict, 2 repeats each."""
    base = tmp_path_factory.mktemp("validate")
    tasks = base / "tasks"
    for name in ("plain-bugfix", "hung-verifier", "slow-solution", "uncommitted-test-config"):
        copy_task(name, tasks / name)
    nop_passes_task(tasks / "nop-passes")
    oracle_fails_task(tasks / "wrong-solution")
    strip_reapply(copy_task("uncommitted-test-config", tasks / "uncommitted-no-reapply"))
    (copy_task("plain-bugfix", tasks / "broken-toml") / "task.toml").write_text("[agent\n")
    db = str(base / "ledger.db")
    code, out, err = run_cli(
        db, "validate", str(tasks), "--repeats", "2", "--run", "val", "--runs-dir", str(base / "runs"), "--json"
    )
    assert code == 1, err  # some task is not ok: the report, then exit 1 (a CI job gates on it)
    report = json.loads(out)  # --json: only JSON on stdout
    return db, {row["task_id"]: row for row in report["tasks"]}, report


def test_ok_plain_bugfix(mixed):
    _, rows, _ = mixed
    row = rows["plain-bugfix"]
    assert row["verdict"] == "ok", row
    assert row["details"]["oracle"] == {"repeats": 2, "resolved": 2, "outcomes": {"resolved": 2}}
    assert row["details"]["nop"]["resolved"] == 0


def test_a_broken_task_folder_is_infra_error_never_ok(mixed):
    """Its trials never ran (InvalidTaskError): they are still each agent's, so the task gets no verdict."""
    _, rows, _ = mixed
    row = rows["broken-toml"]
    assert row["verdict"] == "infra_error", row
    assert row["details"]["errors"][0].startswith("InvalidTaskError: invalid task.toml"), row
    assert row["details"]["oracle"]["outcomes"] == {"infra_error": 2}
    assert row["details"]["nop"]["outcomes"] == {"infra_error": 2}


def test_verifier_timeout_hung_verifier(mixed):
    _, rows, _ = mixed
    row = rows["hung-verifier"]
    assert row["verdict"] == "verifier_timeout", row
    assert row["details"]["timeouts"] == {"oracle": 2, "nop": 2}
    assert "3 s timeout" in row["details"]["summary"]


def test_nop_passes_when_tests_pass_without_the_fix(mixed):
    _, rows, _ = mixed
    row = rows["nop-passes"]
    assert row["verdict"] == "nop_passes", row
    assert row["details"]["nop"]["resolved"] == 2
    assert row["details"]["f2p_passing_without_fix"] == ["tests/test_stats.py::test_median_odd"]


def test_oracle_fails_lists_the_failing_tests(mixed):
    _, rows, _ = mixed
    row = rows["wrong-solution"]
    assert row["verdict"] == "oracle_fails", row
    assert row["details"]["failing_tests"] == ["tests/test_stats.py::test_median_even (fail)"]
    assert row["details"]["oracle"]["outcomes"] == {"unresolved": 2}


def test_sphinx_like_task_is_ok_only_with_the_reapplication(mixed):
    _, rows, _ = mixed
    assert rows["uncommitted-test-config"]["verdict"] == "ok", rows["uncommitted-test-config"]
    stripped = rows["uncommitted-no-reapply"]
    assert stripped["verdict"] == "oracle_fails", stripped
    # the reverted pytest.ini drops -rA: no per-test lines, so the grader sees every test as missing
    assert stripped["details"]["failing_tests"] == [
        "tests/test_textwrap2.py::test_count_words (missing)",
        "tests/test_textwrap2.py::test_short_text_unchanged (missing)",
        "tests/test_textwrap2.py::test_shorten_keeps_n_words (missing)",
    ]
    assert "no per-test result lines" in stripped["details"]["summary"]


def test_slow_solution_at_x1_is_oracle_fails_by_agent_timeout(mixed):
    _, rows, _ = mixed
    row = rows["slow-solution"]
    assert row["verdict"] == "oracle_fails", row
    assert row["details"]["agent_timeout"] == 2
    assert row["details"]["oracle"]["outcomes"] == {"agent_timeout": 2}
    assert "3 s, x1" in row["details"]["summary"] and "--timeout-multiplier" in row["details"]["summary"]


def test_trials_recorded_as_one_validate_run(mixed):
    db, rows, report = mixed
    ledger = Ledger(db)
    run = run_dict(ledger, "val")
    assert run["kind"] == "validate" and run["stack"]["agent"] == "oracle+nop"
    assert report["runs"] == {"default": "val"}
    trials = trial_dicts(ledger, run["name"])
    assert len(trials) == len(rows) * 4
    for t in trials:  # oracle = attempts 0..1, nop = 2..3
        assert t["extra"]["agent"] == ("oracle" if t["attempt"] < 2 else "nop")
    # a validate run is not a `trialbook run`: resume refuses it instead of re-running one agent
    code, _, err = run_cli(db, "resume", "val")
    assert code == 2 and "not made by `trialbook run`" in err


def test_flaky_p2p(engine, tmp_path):
    """The hash-seed dependent P2P test flips between repeats (all 6 alike per agent: p = 1/1024)."""
    tasks = tmp_path / "tasks"
    copy_task("flaky-p2p", tasks / "flaky-p2p")
    code, out, err = run_cli(
        str(tmp_path / "l.db"), "validate", str(tasks), "--repeats", "6", "--runs-dir", str(tmp_path / "runs"), "--json"
    )
    assert code == 1, err
    (row,) = json.loads(out)["tasks"]
    assert row["verdict"] == "flaky", row
    assert row["details"]["flaky_tests"] == ["tests/test_tags.py::test_unique_keeps_first_seen_order"]
    assert row["details"]["oracle"]["outcomes"].keys() <= {"resolved", "unresolved"}


@pytest.fixture
def proxy_images(engine, tmp_path):
    """The seed's official vs rebuilt image: the same repo, the rebuilt one kept a corporate proxy."""
    tags = {"official": "tb-validate-test:official", "rebuilt": "tb-validate-test:rebuilt"}
    context = tmp_path / "ctx"
    shutil.copytree(EXAMPLES / "proxy-env" / "environment", context)
    dockerfile = (context / "Dockerfile").read_text()
    engine.images.build(path=str(context), tag=tags["rebuilt"], network_mode="none", rm=True)
    official = "\n".join(line for line in dockerfile.splitlines() if "proxy" not in line.lower())
    assert "ENV" not in official
    (context / "Dockerfile").write_text(official)
    engine.images.build(path=str(context), tag=tags["official"], network_mode="none", rm=True)
    yield tags
    for tag in tags.values():
        engine.images.remove(tag, force=True)


def test_image_variants_list_per_test_differences(proxy_images, tmp_path):
    task = copy_task("proxy-env", tmp_path / "tasks" / "proxy-env")
    test_sh = task / "tests" / "test.sh"  # a verifier that does not unset the proxies itself
    test_sh.write_text(
        test_sh.read_text().replace("env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY ", "")
    )
    db = str(tmp_path / "l.db")
    args = [
        "--image-variant",
        f"official={proxy_images['official']}",
        "--image-variant",
        f"rebuilt={proxy_images['rebuilt']}",
    ]
    code, out, err = run_cli(
        db, "validate", str(tmp_path / "tasks"), "--repeats", "1", "--run", "px", *args,
        "--runs-dir", str(tmp_path / "runs"), "--json",
    )  # fmt: skip
    assert code == 1, err
    report = json.loads(out)
    verdicts = {row["variant"]: row["verdict"] for row in report["tasks"]}
    assert verdicts == {"official": "ok", "rebuilt": "oracle_fails"}, report["tasks"]
    assert report["runs"] == {"official": "px-official", "rebuilt": "px-rebuilt"}
    diffs = {(d["agent"], d["test"]): d["statuses"] for d in report["variant_differences"]}
    assert diffs[("oracle", "tests/test_fetch.py::test_get_json")] == {"official": "pass", "rebuilt": "fail"}
    assert diffs[("oracle", "tests/test_fetch.py::test_get_bytes")] == {"official": "pass", "rebuilt": "fail"}
    assert diffs[("nop", "tests/test_fetch.py::test_get_bytes")] == {"official": "pass", "rebuilt": "fail"}
    assert ("nop", "tests/test_fetch.py::test_get_json") not in diffs  # fails under both: no difference
    ledger = Ledger(db)
    for label, image in (("official", proxy_images["official"]), ("rebuilt", proxy_images["rebuilt"])):
        trials = trial_dicts(ledger, f"px-{label}")
        assert {t["extra"]["image"] for t in trials} == {image}
    code, human, _ = run_cli(db, "validate", str(tmp_path / "tasks"), "--repeats", "1", "--run", "px", "--replace",
                             *args, "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert code == 1 and "per-test status differences" in human and "test_get_bytes" in human


def test_bad_image_variant_is_a_usage_error(tmp_path):
    for bad in ("noequals", "=img", "bad label=img"):
        code, _, err = run_cli(str(tmp_path / "l.db"), "validate", str(EXAMPLES), "--image-variant", bad)
        assert code == 2 and "LABEL=IMAGE" in err, (bad, err)
    with pytest.raises(TrialbookError, match="given twice"):
        parse_variants(["a=x", "a=y"])


def _trial(outcome: str, reward: float | None, tests: dict | None, agent: str, **kw: Any) -> TrialRow:
    return TrialRow(id=0, run_id=0, task_id="x", attempt=0, repo=None, outcome=outcome, reward=reward, step=None,
                    wv=None, epoch=None, exception=kw.get("exception"), exception_message=kw.get("exception_message"),
                    duration_s=None, tokens=None, turns=None, tests=tests, started_at=None, finished_at=None,
                    extra={"agent": agent}, superseded_by=None)  # fmt: skip


def test_rules_are_checked_in_priority_order():
    """A task that is both flaky and oracle-failing is flaky; the verdict names come from RULES."""
    assert [r.verdict for r in RULES] == [
        "infra_error",
        "leaky",
        "verifier_timeout",
        "flaky",
        "oracle_fails",
        "nop_passes",
        "ok",
    ]
    f2p = "FAIL_TO_PASS"
    oracle = AgentView([_trial("unresolved", 0.0, {f2p: {"t": "fail"}}, "oracle"),
                        _trial("unresolved", 0.0, {f2p: {"t": "error"}}, "oracle")])  # fmt: skip
    nop = AgentView([_trial("resolved", 1.0, {f2p: {"t": "pass"}}, "nop")] * 2)
    name, details = verdict(TaskView("x", {"oracle": oracle, "nop": nop}))
    assert name == "flaky" and details["flaky_tests"] == ["t"]
    oracle.trials[1].tests = {f2p: {"t": "fail"}}
    name, details = verdict(TaskView("x", {"oracle": oracle, "nop": nop}))
    assert name == "oracle_fails" and details["failing_tests"] == ["t (fail)"]


def test_slow_solution_is_ok_at_x2(engine, tmp_path):
    code, out, err = run_cli(
        str(tmp_path / "l.db"), "validate", str(EXAMPLES), "--tasks", "slow-solution", "--repeats", "1",
        "--timeout-multiplier", "2", "--runs-dir", str(tmp_path / "runs"), "--json",
    )  # fmt: skip
    assert code == 0, err
    (row,) = json.loads(out)["tasks"]
    assert row["verdict"] == "ok", row
    assert json.loads(out)["timeout_multiplier"] == 2.0


def test_a_task_without_trials_of_an_agent_gets_no_verdict():
    view = TaskView("x", {"oracle": AgentView([_trial("resolved", 1.0, None, "oracle")]), "nop": AgentView()})
    name, details = verdict(view)
    assert name == "infra_error" and details["summary"] == "no trial of nop was recorded"


def test_empty_image_means_the_tasks_own_environment_and_infra_errors_get_no_verdict():
    assert parse_variants(["own=", "b=img:1"]) == [Variant("own", None), Variant("b", "img:1")]
    broken = _trial("infra_error", None, None, "oracle", exception="ImageBuildError", exception_message="gone")
    view = TaskView("x", {"oracle": AgentView([broken]), "nop": AgentView([_trial("unresolved", 0.0, None, "nop")])})
    name, details = verdict(view)
    assert name == "infra_error" and details["errors"] == ["ImageBuildError: gone"]
