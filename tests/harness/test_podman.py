"""The Podman backend (sandbox/podman.py) end to end: `trialbook run --backend podman` on the example tasks (the
oracle resolves what it should, nop nothing) and the cheating-agent suite (the honest copies resolved, every cheat
graded unresolved), the stack naming podman, no container left in Podman's store."""

from __future__ import annotations

import secrets
import shutil
import subprocess

import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.ledger.store import Ledger
from trialbook.tasks import load_tasks

pytestmark = pytest.mark.podman


@pytest.fixture(scope="module")
def podman():
    """Podman with its API service (started by the backend when none answers); the base image comes from Docker."""
    from trialbook.sandbox.podman import PodmanEngine

    if shutil.which("podman") is None:  # a real failure, not a skip: these tests need it
        pytest.fail("podman is required (apt-get install podman)")
    return PodmanEngine()


def _leftovers(run: str) -> list[str]:
    out = subprocess.run(
        ["podman", "ps", "-aq", "--filter", f"label=trialbook.run={run}"], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


@pytest.fixture(scope="module")
def examples_on_podman(podman, tmp_path_factory):
    from typer.testing import CliRunner

    from trialbook.cli import app

    base = tmp_path_factory.mktemp("podman")
    db = str(base / "ledger.db")
    token = secrets.token_hex(3)  # the runs' names, unique on Podman's store: its leftover check sees only them
    for agent in ("nop", "oracle"):
        res = CliRunner().invoke(app, [
            "run", str(EXAMPLES), "--agent", agent, "--run", f"pod-{agent}-{token}", "--concurrency", "2", "--backend",
            "podman", "--runs-dir", str(base / "runs"), "--db", db,
        ])  # fmt: skip
        assert res.exit_code == 0, (res.stdout, res.exception)
    return db, token


def test_the_example_tasks_grade_on_podman_as_on_docker(examples_on_podman):
    db, token = examples_on_podman
    ledger = Ledger(db)
    specs, _ = load_tasks(EXAMPLES)
    expected = {s.task_id: s.metadata["expected_oracle"] for s in specs}
    oracle = {t["task_id"]: t for t in trial_dicts(ledger, f"pod-oracle-{token}")}
    assert set(oracle) == set(expected)
    for task_id, want in expected.items():
        got = oracle[task_id]["outcome"]
        assert got in ("resolved", "unresolved") if want == "flaky" else got == want, (task_id, oracle[task_id])
    nop = trial_dicts(ledger, f"pod-nop-{token}")
    assert len(nop) == 6 and not any(t["reward"] == 1.0 for t in nop)
    for run in (f"pod-nop-{token}", f"pod-oracle-{token}"):
        stack = ledger.get_run(run).stack
        assert stack["engine"] == "podman" and stack["engine_version"].startswith("podman ")
        assert ledger.get_run(run).config["backend"] == "podman"
        left = _leftovers(run)
        detail = {
            t["task_id"]: (t["extra"].get("retries"), t["extra"].get("cleanup_error")) for t in trial_dicts(ledger, run)
        }
        assert left == [], (
            left,
            subprocess.run(
                ["podman", "ps", "-a", "--filter", f"label=trialbook.run={run}"], capture_output=True, text=True
            ).stdout,
            detail,
        )


def test_every_cheat_is_graded_unresolved_on_podman(podman, tmp_path):
    """The cheat suite's task copies (tests/harness/test_cheaters.py builds them) run on Podman."""
    from test_cheaters import build_tasks
    from typer.testing import CliRunner

    from trialbook.cli import app

    tasks = build_tasks(tmp_path)
    db = str(tmp_path / "ledger.db")
    run = f"pod-cheats-{secrets.token_hex(3)}"
    res = CliRunner().invoke(app, [
        "run", str(tasks), "--agent", "oracle", "--run", run, "--concurrency", "2", "--backend", "podman",
        "--runs-dir", str(tmp_path / "runs"), "--db", db,
    ])  # fmt: skip
    assert res.exit_code == 0, (res.stdout, res.exception)
    got = {t["task_id"]: t for t in trial_dicts(Ledger(db), run)}
    honest = {task for task in got if task.startswith("honest")}
    assert len(honest) == 7 and len(got) > 60
    assert {task: got[task]["outcome"] for task in honest} == dict.fromkeys(honest, "resolved")
    cheats = {task: t for task, t in got.items() if task not in honest}
    assert {task: (t["outcome"], t["exception"]) for task, t in cheats.items() if t["outcome"] != "unresolved"} == {}
    assert _leftovers(run) == []


def test_validate_grade_and_reverify_take_the_backend_as_run_does(examples_on_podman, tmp_path):
    """`validate`, `grade` and `reverify` take the same where-trials-run options as `run` (harness/placement/choice.py's
    Where,
    cli/run_flags.py WHERE): on `--backend podman` their trials run on Podman and their runs record it."""
    import json

    from typer.testing import CliRunner

    from trialbook.cli import app
    from trialbook.harness.workflows.patches import stored_patches

    db, token = examples_on_podman
    where = ["--backend", "podman", "--concurrency", "2", "--runs-dir", str(tmp_path / "runs"), "--db", db]
    two = ("plain-bugfix", "proxy-env")  # the oracle resolves both, nop neither: verdict ok
    res = CliRunner().invoke(app, [
        "validate", str(EXAMPLES), "--attempts", "1", "--task", ",".join(two), "--run", f"pod-val-{token}", "--json",
        *where,
    ])  # fmt: skip
    assert res.exit_code == 0, (res.stdout, res.exception)
    assert {t["task_id"]: t["verdict"] for t in json.loads(res.stdout)["tasks"]} == dict.fromkeys(two, "ok")
    # grade: the oracle run's own patches as SWE-bench predictions; reverify: that graded run, again
    patches, _, _ = stored_patches(Ledger(db), f"pod-oracle-{token}")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(
        json.dumps({"instance_id": t, "model_patch": patches[t]["0"], "model_name_or_path": "oracle"}) + "\n"
        for t in two
    ))  # fmt: skip
    graded, again = f"pod-grade-{token}", f"pod-rev-{token}"
    res = CliRunner().invoke(app, ["grade", str(predictions), "--tasks-dir", str(EXAMPLES), "--run", graded, *where])
    assert res.exit_code == 0, (res.stdout, res.exception)
    res = CliRunner().invoke(app, ["reverify", graded, "--run", again, *where])
    assert res.exit_code == 0, (res.stdout, res.exception)
    ledger = Ledger(db)
    for run in (f"pod-val-{token}", graded, again):
        assert ledger.get_run(run).stack["engine"] == "podman", run
        assert ledger.get_run(run).config["backend"] == "podman", run
        assert _leftovers(run) == [], run
    for run in (graded, again):
        assert {t["task_id"]: t["outcome"] for t in trial_dicts(ledger, run)} == dict.fromkeys(two, "resolved"), run
