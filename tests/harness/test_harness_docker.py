"""End-to-end harness tests against the real Docker daemon (scripts/docker-up.sh provides one).

Tiny tasks and small timeouts keep the whole file to a couple of minutes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.cli import app
from trialbook.errors import TrialbookError
from trialbook.ledger.store import Ledger
from trialbook.tasks import load_tasks

GRACE_S = 6.0  # kill + container removal + exec bookkeeping on a loaded 2-core machine


def run_cli(db: str, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, [*args, "--db", db])
    if isinstance(res.exception, TrialbookError):
        return res.exception.exit_code, res.stdout, str(res.exception)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def trials(db: str, run: str, current_only: bool = True) -> list[dict]:
    ledger = Ledger(db)
    return trial_dicts(ledger, run, current_only=current_only)


def leftovers(client, run: str, db: str | None = None) -> list:
    """The run's containers; with `db`, only that ledger's (a run of the same name may be live in another module's
    ledger: scripts/test.sh runs the docker modules on two workers)."""
    labels = [f"trialbook.run={run}", *([f"trialbook.ledger={Ledger(db).id}"] if db else [])]
    # sparse: a full list inspects each container and fails on one the daemon removes meanwhile
    return client.containers.list(all=True, sparse=True, filters={"label": labels})


def settled_leftovers(client, run: str, timeout: float = 60) -> list:
    """The run's containers once the daemon has finished what a killed client asked of it (a create or
    remove already sent still completes): the same ids twice, half a second apart, none being removed."""
    end = time.monotonic() + timeout
    seen = None
    while True:
        now = leftovers(client, run)
        state = sorted((c.id, c.attrs.get("State")) for c in now)
        if state == seen and all(s != "removing" for _, s in state):
            return now
        assert time.monotonic() < end, f"containers of {run} never settled: {state}"
        seen = state
        time.sleep(0.5)


@pytest.fixture(scope="module")
def examples_runs(engine, tmp_path_factory):
    """nop and oracle over the six example tasks, once for the whole module."""
    base = tmp_path_factory.mktemp("examples")
    db = str(base / "ledger.db")
    for agent in ("nop", "oracle"):
        code, _, err = run_cli(
            db, "run", str(EXAMPLES), "--agent", agent, "--run", agent, "--concurrency", "2",
            "--runs-dir", str(base / "runs"),
        )  # fmt: skip
        assert code == 0, err
    return db, base


def test_oracle_resolves_every_task_not_designed_otherwise(examples_runs, engine):
    db, _ = examples_runs
    specs, _ = load_tasks(EXAMPLES)
    expected = {s.task_id: s.metadata["expected_oracle"] for s in specs}
    rows = {t["task_id"]: t for t in trials(db, "oracle")}
    assert set(rows) == set(expected)
    for task_id, want in expected.items():
        t = rows[task_id]
        if want == "flaky":  # graded either way; a failure is the P2P flake, tagged
            assert t["outcome"] in ("resolved", "unresolved")
            if t["outcome"] == "unresolved":
                assert t["exception"] == "p2p_regression"
                assert t["tests"]["PASS_TO_PASS"]["tests/test_tags.py::test_unique_keeps_first_seen_order"] == "fail"
        else:
            assert t["outcome"] == want, (task_id, t)
    assert rows["plain-bugfix"]["reward"] == 1.0
    assert set(rows["plain-bugfix"]["tests"]["FAIL_TO_PASS"].values()) == {"pass"}
    assert rows["slow-solution"]["reward"] == 0.0  # timed out agents are still graded
    assert rows["hung-verifier"]["reward"] is None
    assert leftovers(engine, "oracle", db) == []  # test_rerun_counts_docker.py runs an `oracle` run too


def test_nop_resolves_nothing(examples_runs):
    db, _ = examples_runs
    rows = trials(db, "nop")
    assert len(rows) == 6
    assert not any(t["reward"] == 1.0 for t in rows)
    assert {t["outcome"] for t in rows} <= {"unresolved", "verifier_timeout"}


def test_hung_verifier_stops_within_its_timeout_and_the_run_goes_on(examples_runs):
    db, _ = examples_runs
    for run in ("nop", "oracle"):
        rows = {t["task_id"]: t for t in trials(db, run)}
        hung = rows["hung-verifier"]
        assert hung["outcome"] == "verifier_timeout" and hung["exception"] == "VerifierTimeoutError"
        assert hung["extra"]["retries"] == 0  # no infra retry; the verifier itself is tried twice, in fresh containers
        assert hung["extra"]["verifier"]["tries"] == 2
        # the oracle's change is then tried without (the image as built, once): it hangs there too, so no grade
        without = hung["extra"]["verifier"].get("without_change")
        assert (without is not None) == (run == "oracle")
        assert without is None or (without["end"] == "timed_out" and "hangs_without_change" in hung["extra"]["tags"])
        runs = 2 + (without is not None)
        assert runs * 3.0 <= hung["extra"]["phase_s"]["verifier"] <= runs * (3.0 + GRACE_S)
        assert len(rows) == 6  # every other trial finished


def test_results_logs_and_stack_are_recorded(examples_runs):
    db, base = examples_runs
    rows = trials(db, "oracle")
    folders = {p.name: p for p in (base / "runs" / "oracle").iterdir() if p.is_dir()}
    assert len(folders) == 6
    for t in rows:
        folder = folders[t["extra"]["trial_name"]]
        result = json.loads((folder / "result.json").read_text())
        assert result["task_name"] == t["task_id"] and result["outcome"] == t["outcome"]
        assert (folder / "verifier" / "test-stdout.txt").is_file()
        assert t["extra"]["trial_name"].startswith(f"tb-oracle-{t['task_id']}-0-")
    ledger = Ledger(db)
    plain = next(t for t in rows if t["task_id"] == "plain-bugfix")
    assert "passed" in ledger.artifact(plain["id"], "verifier.log")
    stack = ledger.get_run("oracle").stack
    assert stack["harness"] == "trialbook" and stack["engine"] == "docker" and stack["engine_version"]
    assert set(stack["images"]) == set(stack["verifier_hashes"]) == {t["task_id"] for t in rows}
    assert all(v.startswith("sha256:") for v in stack["images"].values())
    # the folders are Harbor-shaped: importing them back gives the same judged/resolved counts
    code, _, err = run_cli(db, "import", "harbor", str(base / "runs" / "oracle"), "--run", "oracle-harbor")
    assert code == 0, err
    shown = {name: json.loads(run_cli(db, "show", name, "--json")[1]) for name in ("oracle", "oracle-harbor")}
    for key in ("trials", "judged", "resolved"):
        assert shown["oracle"][key] == shown["oracle-harbor"][key], key


def test_rerun_at_x2_flips_the_slow_task_and_keeps_history(examples_runs):
    db, base = examples_runs
    code, _, err = run_cli(db, "rerun", "oracle", "--where", "agent_timeout", "--timeout-multiplier", "2")
    assert code == 0, err
    current = {t["task_id"]: t for t in trials(db, "oracle")}
    assert current["slow-solution"]["outcome"] == "resolved"
    assert current["slow-solution"]["extra"]["timeout_multiplier"] == 2.0
    history = [t for t in trials(db, "oracle", current_only=False) if t["task_id"] == "slow-solution"]
    assert len(history) == 2
    old = next(t for t in history if t["superseded_by"] is not None)
    assert old["outcome"] == "agent_timeout" and old["superseded_by"] == current["slow-solution"]["id"]
    code, out, _ = run_cli(db, "show", "oracle", "--json")
    assert json.loads(out)["superseded"] == 1
    # on disk, runs/<run>/ stays the current view; the old folder moves aside
    assert (base / "runs" / "oracle.superseded" / old["extra"]["trial_name"] / "result.json").is_file()
    current_dirs = {p.name for p in (base / "runs" / "oracle").iterdir() if p.is_dir()}
    assert current_dirs == {t["extra"]["trial_name"] for t in current.values()}


def test_agent_reverting_uncommitted_setup_breaks_grading_without_the_reapply(engine, tmp_path, db):
    tasks = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "uncommitted-test-config", tasks / "with-reapply")
    shutil.copytree(EXAMPLES / "uncommitted-test-config", tasks / "without-reapply")
    test_sh = tasks / "without-reapply" / "tests" / "test.sh"
    test_sh.write_text("".join(line for line in test_sh.read_text().splitlines(True) if "REAPPLY-SETUP" not in line))
    code, _, err = run_cli(db, "run", str(tasks), "--agent", "oracle", "--run", "sphinx", "--concurrency", "2",
                           "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert code == 0, err
    rows = {t["task_id"]: t for t in trials(db, "sphinx")}
    assert rows["with-reapply"]["outcome"] == "resolved"
    broken = rows["without-reapply"]
    # every test of the task passed but pytest printed no per-test lines: graded unresolved. Its only failures are the
    # verifier's canaries (verify/decoys.py: 2-3 a run), so the task's fallback reward, from pytest's exit code, says 0
    assert broken["outcome"] == "unresolved" and broken["extra"]["file_reward"] == 0.0
    assert set(broken["tests"]["FAIL_TO_PASS"].values()) == {"missing"}
    log = next((tmp_path / "runs" / "sphinx").glob("*without-reapply*/verifier/test-stdout.txt")).read_text()
    canary = broken["extra"]["canary"]
    names = canary["name"].split(",")
    assert canary["seen"] == "failed" and 2 <= len(names) <= 3
    assert all(f"FAILED tests/test_textwrap2.py::{name}" in log for name in names), log[-500:]
    assert re.search(rf"^{len(names)} failed, [1-9]\d* passed in ", log, re.MULTILINE), log[-500:]


def test_broken_tasks_fail_alone_and_image_builds_are_retried(engine, tmp_path, db):
    tasks = tmp_path / "tasks"
    for name in ("ok", "no-test-sh", "bad-toml", "bad-image"):
        shutil.copytree(EXAMPLES / "plain-bugfix", tasks / name)
    (tasks / "no-test-sh" / "tests" / "test.sh").unlink()
    (tasks / "bad-toml" / "task.toml").write_text("[verifier]\ntimeout_sec = 'soon'\n")
    with (tasks / "bad-image" / "environment" / "Dockerfile").open("a") as f:
        f.write("RUN echo 'this build step fails' && exit 3\n")
    code, _, err = run_cli(db, "run", str(tasks), "--agent", "oracle", "--run", "broken", "--retries", "1",
                           "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert code == 1 and "error: 3 trial(s) ended infra_error" in err, err  # the broken tasks
    rows = {t["task_id"]: t for t in trials(db, "broken")}
    assert rows["ok"]["outcome"] == "resolved"
    assert rows["no-test-sh"]["outcome"] == "infra_error"
    assert rows["no-test-sh"]["exception_message"] == "missing tests/test.sh"
    assert rows["bad-toml"]["exception"] == "InvalidTaskError"
    assert "timeout_sec" in rows["bad-toml"]["exception_message"]
    bad = rows["bad-image"]
    assert bad["outcome"] == "infra_error" and bad["exception"] == "ImageBuildError"
    assert bad["extra"]["retries"] == 1 and "bad-image" in bad["exception_message"]
    assert leftovers(engine, "broken") == []


def test_deadline_stops_stragglers_as_incomplete(engine, tmp_path, db):
    start = time.monotonic()
    code, _, err = run_cli(db, "run", str(EXAMPLES), "--agent", "oracle", "--run", "late", "--tasks", "slow-solution",
                           "--attempts", "2", "--timeout-multiplier", "20", "--deadline", "0.05",
                           "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    elapsed = time.monotonic() - start
    assert code == 0, err
    rows = trials(db, "late")
    assert [t["outcome"] for t in rows] == ["incomplete", "incomplete"]
    assert {t["exception"] for t in rows} == {"DeadlineExceeded"}
    assert elapsed < 3 + 15  # the 60 s agent budget was cut at the 3 s deadline
    assert leftovers(engine, "late") == []


def test_kill_9_then_resume_runs_every_trial_exactly_once(engine, tmp_path, db):
    tasks = ["plain-bugfix", "proxy-env", "flaky-p2p"]
    proc = _start_run_process(db, tmp_path, "crash", tasks, 3)
    try:
        recorded = _wait_for_trials(db, "crash", 2)
        assert 2 <= recorded < 9, recorded
        # kill -9 while a trial's sandbox is up (sparse: no inspect of a container being removed)
        _wait_for(lambda: engine.containers.list(all=True, sparse=True, filters={"label": "trialbook.run=crash"}))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = {(t["task_id"], t["attempt"]) for t in trials(db, "crash")}
    left = settled_leftovers(engine, "crash")
    assert left, "no container outlived the killed run: resume's clean-up would go unchecked"
    code, _, err = run_cli(db, "resume", "crash")
    assert code == 0, err
    assert f"removed {len(left)} leftover container(s)" in err
    rows = trials(db, "crash", current_only=False)
    keys = [(t["task_id"], t["attempt"]) for t in rows]
    assert sorted(keys) == sorted((t, a) for t in tasks for a in range(3))  # each exactly once
    assert before <= set(keys)
    assert all(t["outcome"] in ("resolved", "unresolved") for t in rows)
    assert leftovers(engine, "crash") == []
    code, _, err = run_cli(db, "resume", "crash")  # nothing left: a no-op
    assert code == 0 and len(trials(db, "crash")) == 9
    assert Ledger(db).get_run("crash").config["tasks"] == sorted(tasks)  # the plan was frozen at the start


def _start_run_process(
    db: str, tmp_path: Path, run: str, tasks: list[str], attempts: int, tasks_dir: Path = EXAMPLES
) -> subprocess.Popen:
    args = ["run", str(tasks_dir), "--agent", "oracle", "--run", run, "--tasks", ",".join(tasks),
            "--attempts", str(attempts), "--runs-dir", str(tmp_path / "runs"), "--db", db]  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-c", "from trialbook.cli import main; main()", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # a suite started in the background of a non-interactive shell (`.ci/run &`) ignores SIGINT, and a child
        # inherits that: the Ctrl-C test would then time out for its launcher's sake
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for(ready, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def _wait_for_trials(db: str, run: str, at_least: int, timeout: float = 90) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        time.sleep(0.3)
        try:
            n = len(trials(db, run))
        except TrialbookError:
            continue  # the run is not created yet
        if n >= at_least:
            return n
    return 0


def test_ctrl_c_stops_cleanly_and_a_live_run_cannot_be_resumed_twice(engine, tmp_path, db):
    tasks = ["plain-bugfix", "slow-solution"]
    # the slow task made slower than the examples' (4.5 s against a 3 s budget), so that its trials are still
    # running when the signal comes however fast the plain ones end
    tasks_dir = tmp_path / "tasks"
    for task in tasks:
        shutil.copytree(EXAMPLES / task, tasks_dir / task)
    slow = tasks_dir / "slow-solution"
    solve = slow / "solution" / "solve.sh"
    solve.write_text(solve.read_text().replace("sleep 4.5", "sleep 15"))
    toml = slow / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 3\n", "timeout_sec = 30\n"))
    run = f"intr-{os.urandom(3).hex()}"  # leftovers are looked up by the run's label: a name no earlier run had
    proc = _start_run_process(db, tmp_path, run, tasks, 2, tasks_dir)
    try:
        assert _wait_for_trials(db, run, 1) >= 1
        code, _, err = run_cli(db, "resume", run)  # the run is alive: refused, nothing touched
        assert code == 2 and "another process" in err
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    assert leftovers(engine, run) == []  # in-flight trials stopped and their containers removed
    n = len(trials(db, run))
    assert n < 4
    code, _, err = run_cli(db, "resume", run, "--json")
    assert code == 0, err
    keys = sorted((t["task_id"], t["attempt"]) for t in trials(db, run, current_only=False))
    assert keys == sorted((t, a) for t in tasks for a in range(2))


def test_clean_removes_the_images_built_for_a_run(engine, tmp_path, db):
    task = tmp_path / "tasks" / "own-image"
    shutil.copytree(EXAMPLES / "plain-bugfix", task)
    with (task / "environment" / "Dockerfile").open("a") as f:
        f.write(f"# unique build for this test: {os.urandom(6).hex()}\n")
    code, _, err = run_cli(db, "run", str(task.parent), "--agent", "nop", "--run", "imgclean",
                           "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert code == 0, err
    built = engine.images.list(filters={"label": "trialbook.run=imgclean"})
    assert len(built) == 1
    code, _, err = run_cli(db, "clean", "--run", "imgclean")
    assert code == 0 and "1 image(s)" in err, err
    assert engine.images.list(filters={"label": "trialbook.run=imgclean"}) == []
    assert engine.images.get("trialbook-base:bookworm")  # the base image is never a run's


def test_clean_removes_only_the_named_runs_containers(engine):
    base = "trialbook-base:bookworm"
    mine = engine.containers.run(base, ["sleep", "60"], detach=True, labels={"trialbook.run": "clean-me"})
    other = engine.containers.run(base, ["sleep", "60"], detach=True, labels={"trialbook.run": "keep-me"})
    try:
        code, _, err = run_cli_nodb("clean", "--run", "clean-me", "--all-on-host")
        assert code == 0, err
        assert "removed 1 container" in err
        assert leftovers(engine, "clean-me") == []
        assert [c.id for c in leftovers(engine, "keep-me")] == [other.id]
    finally:
        for c in (mine, other):
            with contextlib.suppress(docker.errors.NotFound):
                c.remove(force=True)


def run_cli_nodb(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_large_test_folders_are_copied_in_and_agents_cannot_plant_tests(engine, tmp_path, db):
    tasks = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "plain-bugfix", tasks / "big-tests")
    (tasks / "big-tests" / "tests" / "fixture.bin").write_bytes(os.urandom(200_000))  # too big to inline
    shutil.copytree(EXAMPLES / "plain-bugfix", tasks / "planted")
    solve = tasks / "planted" / "solution" / "solve.sh"
    # a cheating agent: writes a passing reward and a /tests it hopes the verifier will use
    solve.write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier /tests && echo 1 > /logs/verifier/reward.txt\n"
        "printf 'echo 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh\n"
    )
    code, _, err = run_cli(db, "run", str(tasks), "--agent", "oracle", "--run", "copies",
                           "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert code == 0, err
    rows = {t["task_id"]: t for t in trials(db, "copies")}
    assert rows["big-tests"]["outcome"] == "resolved"
    assert rows["planted"]["outcome"] == "unresolved" and rows["planted"]["extra"]["file_reward"] == 0.0


LOOPBACK_CHECK = """
import socket
for host in ("localhost", "::1"):
    srv = socket.create_server((host, 0), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    cli = socket.create_connection((host, srv.getsockname()[1]), timeout=5)
    con, _ = srv.accept()
    cli.sendall(b"ok")
    print(host + "-" + con.recv(2).decode())
try:
    socket.create_connection(("1.1.1.1", 80), timeout=5)
    print("reachable")
except OSError:
    print("unreachable")
"""


def test_sandboxes_have_labels_limits_and_no_network(engine):
    from trialbook.sandbox import BoxSpec, DockerEngine

    spec = BoxSpec("trialbook-base:bookworm", {"trialbook.run": "limits"}, 0.5, 256, 64, False)
    box = DockerEngine().start(spec, "tb-limits-check-0-deadbeef")
    try:
        info = engine.api.inspect_container(box.container.id)
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none" and host["NanoCpus"] == 500_000_000
        assert host["Memory"] == 256 * 1024 * 1024 and host["PidsLimit"] == 64
        assert info["Config"]["Labels"]["trialbook.run"] == "limits"
        res = box.exec(["sh", "-c", "ls /sys/class/net"], timeout=10)
        assert res.output.split() == ["lo"]
        # no network stack from Docker at all (NetworkDisabled), yet localhost resolves and loopback works,
        # as tests that start a local server need
        assert info["Config"].get("NetworkDisabled") is True
        res = box.exec(["python3", "-c", LOOPBACK_CHECK], timeout=30)
        assert res.output.split() == ["localhost-ok", "::1-ok", "unreachable"], res.output
        res = box.exec(["sh", "-c", "sleep 30"], timeout=1)
        assert res.timed_out and res.duration_s < 1 + GRACE_S
    finally:
        box.remove()
    assert leftovers(engine, "limits") == []


def test_run_and_rerun_on_postgres(engine, pg, tmp_path):
    harness_pg = pg
    code, _, err = run_cli(harness_pg, "run", str(EXAMPLES), "--agent", "oracle", "--run", "pg",
                           "--tasks", "plain-bugfix,slow-solution", "--concurrency", "2",
                           "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert code == 0, err
    code, _, err = run_cli(harness_pg, "rerun", "pg", "--where", "agent_timeout", "--timeout-multiplier", "2")
    assert code == 0, err
    shown = json.loads(run_cli(harness_pg, "show", "pg", "--json")[1])
    assert (shown["trials"], shown["resolved"], shown["superseded"]) == (2, 2, 1)
    ledger = Ledger(harness_pg)
    rows = trial_dicts(ledger, "pg", current_only=False)
    assert len(rows) == 3 and "passed" in (ledger.artifact(rows[0]["id"], "verifier.log") or "")


class _StubbornAgent:
    """Ignores the timeout it is given (asks for 600 s execs) and never raises."""

    name = "stubborn"

    def run(self, sandbox, task, timeout):
        from trialbook.agents.base import AgentResult

        res = sandbox.exec(["sh", "-c", "sleep 60"], timeout=600)
        return AgentResult(exit_code=res.exit_code, log=res.output)


def test_the_harness_enforces_the_agent_budget_even_on_an_uncooperative_agent(engine, tmp_path):
    from trialbook.harness.trial.execution import AGENT_GRACE_S, Stopper, TrialSettings, run_trial
    from trialbook.sandbox import DockerEngine
    from trialbook.tasks import load_task

    task_dir = tmp_path / "tasks" / "budget"
    shutil.copytree(EXAMPLES / "plain-bugfix", task_dir)
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace("[agent]\ntimeout_sec = 60", "[agent]\ntimeout_sec = 2"))
    spec = load_task(task_dir)
    assert spec.agent_timeout == 2
    settings = TrialSettings(run="budget", agent=_StubbornAgent(), timeout_multiplier=1.0)
    result = run_trial(DockerEngine(), spec, 0, settings, Stopper())
    t = result.trial
    assert t.outcome == "agent_timeout" and t.reward == 0.0  # cut, then still graded
    assert t.extra["phase_s"]["agent_execution"] <= 2 + AGENT_GRACE_S + GRACE_S
    assert leftovers(engine, "budget") == []


def _image_task(root: Path, name: str, image: str) -> None:
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "solution").mkdir()
    # the answer lives outside any working tree: the task grades the agent's whole container
    (task / "task.toml").write_text(
        f'[environment]\ndocker_image = "{image}"\n[verifier]\ntimeout_sec = 30\nisolation = "container"\n'
    )
    (task / "solution" / "solve.sh").write_text("echo 42 > /root/answer\n")
    (task / "tests" / "test.sh").write_text(
        "mkdir -p /logs/verifier\nif grep -qx 42 /root/answer 2>/dev/null; then s=1; else s=0.25; fi\n"
        'echo "{\\"composite_score\\": $s}" > /logs/verifier/reward.json\n'
    )


def test_prebuilt_images_reward_json_and_missing_images(engine, tmp_path, db):
    tasks = tmp_path / "tasks"
    _image_task(tasks, "prebuilt", "trialbook-base:bookworm")
    _image_task(tasks, "no-such-image", "trialbook-absent:never")
    for agent in ("oracle", "nop"):
        code, _, err = run_cli(db, "run", str(tasks), "--agent", agent, "--run", f"img-{agent}", "--retries", "0",
                               "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
        assert code == 1 and "error: 1 trial(s) ended infra_error" in err, err  # no-such-image
    oracle = {t["task_id"]: t for t in trials(db, "img-oracle")}
    nop = {t["task_id"]: t for t in trials(db, "img-nop")}
    assert oracle["prebuilt"]["outcome"] == "resolved" and oracle["prebuilt"]["extra"]["graded_by"] == "reward_file"
    assert nop["prebuilt"]["outcome"] == "unresolved" and nop["prebuilt"]["reward"] == 0.25  # partial reward kept
    missing = oracle["no-such-image"]
    assert missing["outcome"] == "infra_error" and missing["exception"] == "ImageBuildError"
    assert "trialbook-absent:never" in missing["exception_message"] and missing["extra"]["retries"] == 0


def test_quickstart_runs_nop_and_oracle_and_compares_them(engine, tmp_path, db, monkeypatch):
    tasks = tmp_path / "tasks"
    for name in ("plain-bugfix", "proxy-env"):
        shutil.copytree(EXAMPLES / name, tasks / name)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(db, "quickstart", "--tasks-dir", str(tasks), "--attempts", "1", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert {r["name"] for r in data["runs"].values()} == {"quickstart-nop", "quickstart-oracle"}
    assert data["runs"]["oracle"]["resolved"] == 2 and data["runs"]["nop"]["resolved"] == 0
    assert [t["task_id"] for t in data["tasks"]] == ["plain-bugfix", "proxy-env"]
    assert data["comparison"]["diff_pp"] == 100.0 and data["comparison"]["wins"] == 2
    assert (tmp_path / "runs" / "quickstart-oracle").is_dir()
