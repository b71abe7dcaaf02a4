"""`trialbook grade` (a predictions file, graded by the tasks' verifiers) and `trialbook reverify` (a run's
stored patches graded again under today's verifier), on copies of the example tasks in real Docker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from paths import EXAMPLES, REPO

GOLD = {json.loads(line)["instance_id"]: json.loads(line)["model_patch"]
        for line in (REPO / "examples" / "predictions" / "gold.jsonl").read_text().splitlines()}  # fmt: skip
FIX_MEDIAN = (
    "cd /testbed && sed -i 's|    return ordered\\[len(ordered) // 2\\]|    mid = len(ordered) // 2\\n"
    "    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2|' stats.py"
)
FIX_FETCH = "sed -i 's|    return get_bytes(url, timeout)|    return json.loads(get_bytes(url, timeout))|' fetch.py"
FIX = f"({FIX_MEDIAN}; {FIX_FETCH}) 2>/dev/null; true"  # one agent command for both tasks


def _trials(cli, run: str) -> dict[tuple[str, int], dict]:
    res = cli("trials", run, "--json")
    assert res.exit_code == 0, res.stderr
    return {(t["task_id"], t["attempt"]): t for t in json.loads(res.stdout)["trials"]}


def test_grade_gold_resolves_empty_does_not(engine, cli, db, tmp_path: Path):
    predictions = tmp_path / "preds.json"  # a JSON list, as run_evaluation also takes
    predictions.write_text(json.dumps([
        {"instance_id": "plain-bugfix", "model_name_or_path": "m", "model_patch": GOLD["plain-bugfix"]},
        {"instance_id": "proxy-env", "model_name_or_path": "m", "model_patch": ""},
        {"instance_id": "slow-solution", "model_name_or_path": "m", "model_patch": "--- a/nope.py\n+++ b/nope.py\n"},
    ]))  # fmt: skip
    res = cli("grade", str(predictions), "--tasks-dir", str(EXAMPLES), "--run", "graded", "--concurrency", "3",
              "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    trials = _trials(cli, "graded")
    assert {k[0]: t["outcome"] for k, t in trials.items()} == {
        "plain-bugfix": "resolved", "proxy-env": "unresolved", "slow-solution": "unresolved",
    }  # fmt: skip
    from trialbook.ledger.store import Ledger

    ledger = Ledger(db)
    assert ledger.run_names() == ["graded"]  # one run
    info = {t.task_id: t.extra["agent_info"]["patch"] for t in ledger.trial_rows(ledger.get_run("graded").id)}
    assert info == {"plain-bugfix": "applied", "proxy-env": "empty", "slow-solution": "did not apply"}
    # the patch the verifier graded is the prediction's
    patch = cli("log", str(trials[("plain-bugfix", 0)]["id"]), "--patch").stdout
    assert [ln for ln in patch.splitlines() if ln[:1] in "+-"] == [
        ln for ln in GOLD["plain-bugfix"].splitlines() if ln[:1] in "+-"
    ]
    res = cli("grade", str(predictions), "--tasks-dir", str(tmp_path), "--run", "x")
    assert res.exit_code == 2 and "have no task folder" in res.stderr


def test_reverify_after_a_verifier_fix(engine, cli, db, tmp_path: Path):
    """The seed team's sphinx story in small: a verifier that fails the right fix is fixed halfway; the runs
    graded before and after it differ by verifier hash; `reverify` grades the old run's patches again."""
    tasks = tmp_path / "tasks"
    for name in ("plain-bugfix", "proxy-env"):
        shutil.copytree(EXAMPLES / name, tasks / name)
    test_file = tasks / "plain-bugfix" / "tests" / "test_stats.py"
    good = test_file.read_text()
    test_file.write_text(good.replace("median([4, 1, 3, 2]) == 2.5", "median([4, 1, 3, 2]) == 3"))  # broken
    common = ["--agent-cmd", FIX, "--concurrency", "4", "--runs-dir", str(tmp_path / "runs")]
    res = cli("run", str(tasks), "--run", "before", "--attempts", "2", *common)
    assert res.exit_code == 0, res.stderr
    outcomes = {k: t["outcome"] for k, t in _trials(cli, "before").items()}
    assert outcomes == {("plain-bugfix", 0): "unresolved", ("plain-bugfix", 1): "unresolved",
                        ("proxy-env", 0): "resolved", ("proxy-env", 1): "resolved"}  # fmt: skip
    test_file.write_text(good)  # the verifier fixed
    assert cli("run", str(tasks), "--run", "after", *common).exit_code == 0
    assert {t["outcome"] for t in _trials(cli, "after").values()} == {"resolved"}

    res = cli("compare", "before", "after")
    assert res.exit_code == 0, res.stderr
    assert "graded by different verifiers" in res.stdout.replace("\n", " ")
    assert "trialbook reverify before --run before-reverified" in " ".join(res.stdout.split())

    res = cli("reverify", "before", "--run", "before-reverified", "--concurrency", "4",
              "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    again = _trials(cli, "before-reverified")
    assert set(again) == set(outcomes)  # the same tasks and attempts
    assert {t["outcome"] for t in again.values()} == {"resolved"}
    assert {k: t["outcome"] for k, t in _trials(cli, "before").items()} == outcomes  # the old run as it was
    from trialbook.ledger.store import Ledger

    ledger = Ledger(db)
    hashes = {run: {t.extra["verifier_hash"] for t in ledger.trial_rows(ledger.get_run(run).id)}
              for run in ("before", "after", "before-reverified")}  # fmt: skip
    assert hashes["before-reverified"] == hashes["after"] != hashes["before"]
    res = cli("compare", "before-reverified", "after")
    assert res.exit_code == 0 and "different verifiers" not in res.stdout.replace("\n", " ")
    assert cli("reverify", "before", "--run", "before").exit_code == 2


def test_grade_on_a_built_swebench_instance_gold_resolves_empty_does_not(engine, cli, db, tmp_path: Path):
    """SWE-bench's own mode on a real instance: psf/requests 2.27 built from source (`tasks from-swebench
    --build`; found by its content hash when tests/tasks/test_swebench_build_docker.py built it first), its
    gold patch and an empty one graded by the instance's real test suite."""
    from paths import DATA, INSTANCES

    instance = "psf__requests-6028"
    tasks = tmp_path / "tasks"
    res = cli("tasks", "from-swebench", str(INSTANCES), "--out", str(tasks), "--build",
              "--repos", str(DATA / "swebench-repos"), "--task", instance, "--no-scan-leaks", use_db=False)  # fmt: skip
    assert res.exit_code == 0, res.stderr
    gold = next(json.loads(line) for line in INSTANCES.read_text().splitlines() if instance in line)["patch"]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps(p) + "\n" for p in (
        {"instance_id": instance, "model_name_or_path": "gold", "model_patch": gold},
    )))  # fmt: skip
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"instance_id": instance, "model_name_or_path": "empty", "model_patch": ""}) + "\n")
    for name, file in (("gold", predictions), ("empty", empty)):
        res = cli("grade", str(file), "--tasks-dir", str(tasks), "--run", name, "--runs-dir", str(tmp_path / "runs"))
        assert res.exit_code == 0, res.stderr
    for name, expected in (("gold", "resolved"), ("empty", "unresolved")):
        (trial,) = _trials(cli, name).values()
        if trial["outcome"] != expected:  # say which tests failed (once seen under load: gold unresolved)
            summary = [ln for ln in cli("log", str(trial["id"]), "--verifier").stdout.splitlines()
                       if ln.startswith(("FAILED", "ERROR", "grade", "=")) or "Timeout" in ln]  # fmt: skip
            raise AssertionError(f"{name}: {trial['outcome']} (expected {expected}):\n" + "\n".join(summary[-40:]))
