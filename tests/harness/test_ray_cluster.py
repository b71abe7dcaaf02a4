"""`--executor ray` on a real multi-node Ray cluster started on this machine (ray.cluster_utils.Cluster: a head
and worker nodes, each a raylet of its own with its own `docker` resource), against the real Docker daemon.

Every run is a `trialbook` process of its own (the driver), as a user would start it, so it can be killed -9.
The nodes share this machine's Docker daemon, which the other tests use too: only the containers labelled
with these tests' run names are ever looked at or removed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import docker
import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.ledger.store import Ledger
from trialbook.tasks import load_tasks

pytestmark = pytest.mark.ray  # and docker: every test that uses `engine` (tests/conftest.py)

MB = 1024 * 1024
NODE = {"num_cpus": 2, "resources": {"docker": 2}, "object_store_memory": 80 * MB}  # 2 trials at once per node
QUICK = ["plain-bugfix", "proxy-env", "uncommitted-test-config"]  # oracle resolves each in a few seconds


@pytest.fixture(scope="module")
def cluster(engine):
    """A head (no `docker`: it runs no trials) and two worker nodes with 2 `docker` slots each."""
    from ray.cluster_utils import Cluster

    c = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": 80 * MB, "include_dashboard": False},
    )
    for _ in range(2):
        c.add_node(**NODE)
    c.wait_for_nodes()
    yield c
    c.shutdown()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def cli(cluster, db: str, *args: str, background: bool = False):
    env = {**os.environ, "RAY_ADDRESS": cluster.address}
    argv = [sys.executable, "-c", "from trialbook.cli import main; main()", *args, "--db", db]
    if background:
        return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def run_args(run: str, tmp_path: Path, tasks: list[str], attempts: int, concurrency: int, executor: str) -> list[str]:
    return ["run", str(EXAMPLES), "--agent", "oracle", "--run", run, "--tasks", ",".join(tasks),
            "--attempts", str(attempts), "--concurrency", str(concurrency), "--executor", executor,
            "--runs-dir", str(tmp_path / "runs")]  # fmt: skip


def trials(db: str, run: str) -> list[dict]:
    ledger = Ledger(db)
    return trial_dicts(ledger, run, current_only=False)


def leftovers(engine: docker.DockerClient, run: str) -> list:
    return engine.containers.list(all=True, filters={"label": f"trialbook.run={run}"})


def wait_until(check, timeout: float = 120) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if check():
                return True
        except Exception:  # the run is not in the ledger yet
            pass
        time.sleep(0.3)
    return False


def test_example_tasks_run_on_two_nodes_with_the_local_outcomes(cluster, engine, tmp_path):
    db = str(tmp_path / "ledger.db")
    specs, _ = load_tasks(EXAMPLES)
    tasks = [s.task_id for s in specs]
    runs = {ex: unique(f"ray-examples-{ex}") for ex in ("ray", "local")}
    for executor, run in runs.items():
        res = cli(cluster, db, *run_args(run, tmp_path, tasks, 1, 4, executor))
        assert res.returncode == 0, res.stderr
        assert leftovers(engine, run) == []
    rows = {ex: {t["task_id"]: t for t in trials(db, run)} for ex, run in runs.items()}
    assert sorted(rows["ray"]) == sorted(rows["local"]) == sorted(tasks)
    flaky = {s.task_id for s in specs if s.metadata.get("expected_oracle") == "flaky"}

    # An infra_error (a container that did not start in time on this shared, loaded machine) is retried
    # infrastructure, not an outcome of the task: those pairs are left out, and they must stay rare.
    def why(t: dict) -> tuple:
        return t["outcome"], t["reward"], t["exception"], t["exception_message"]

    compared = [t for t in sorted(set(tasks) - flaky) if "infra_error" not in {rows[ex][t]["outcome"] for ex in rows}]
    assert len(compared) >= len(set(tasks) - flaky) - 1, {t: [why(rows[ex][t]) for ex in rows] for t in tasks}
    for task in compared:
        assert why(rows["ray"][task])[:2] == why(rows["local"][task])[:2], (
            why(rows["ray"][task]),
            why(rows["local"][task]),
        )
    extras = [t["extra"] for t in rows["ray"].values()]
    assert {e["executor"] for e in extras} == {"ray"}
    assert len({e["node_id"] for e in extras}) >= 2  # 4 in flight, 2 slots per node: both workers ran trials
    assert all(e["hostname"] for e in extras)
    head = cluster.head_node.node_id
    assert head not in {e["node_id"] for e in extras}  # the head offers no `docker`
    assert all("node_id" not in t["extra"] for t in rows["local"].values())


def test_a_worker_node_killed_mid_run_costs_a_retry_elsewhere_never_a_lost_or_doubled_trial(cluster, engine, tmp_path):
    db, run = str(tmp_path / "ledger.db"), unique("ray-nodekill")
    doomed = cluster.add_node(**NODE)  # 3 nodes x 2 slots and 6 in flight: the doomed node surely runs 2 trials
    cluster.wait_for_nodes()
    proc = cli(cluster, db, *run_args(run, tmp_path, QUICK, 3, 6, "ray"), background=True)
    try:
        assert wait_until(lambda: len(leftovers(engine, run)) >= 6), "six trials never ran at once"
        cluster.remove_node(doomed, allow_graceful=False)
        assert proc.wait(240) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    rows = trials(db, run)
    keys = sorted((t["task_id"], t["attempt"]) for t in rows)
    assert keys == sorted((task, a) for task in QUICK for a in range(3))  # each exactly once
    assert doomed.node_id not in {t["extra"].get("node_id") for t in rows}  # its trials finished elsewhere
    lost = [t for t in rows if t["extra"].get("lost_nodes")]
    assert lost, "no trial saw its node die"
    assert all(t["extra"]["retries"] >= 1 for t in lost)
    assert all(t["outcome"] == "resolved" for t in rows)  # the policy retried them (NodeLostError: infra, retry)
    assert leftovers(engine, run) == []


def test_driver_killed_then_resume_loses_and_repeats_nothing(cluster, engine, tmp_path):
    db, run = str(tmp_path / "ledger.db"), unique("ray-driverkill")
    proc = cli(cluster, db, *run_args(run, tmp_path, QUICK, 3, 4, "ray"), background=True)
    try:
        assert wait_until(lambda: len(trials(db, run)) >= 2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = {(t["task_id"], t["attempt"]) for t in trials(db, run)}
    assert 2 <= len(before) < 9
    res = cli(cluster, db, "resume", run, "--executor", "ray")
    assert res.returncode == 0, res.stderr
    keys = [(t["task_id"], t["attempt"]) for t in trials(db, run)]
    assert sorted(keys) == sorted((task, a) for task in QUICK for a in range(3))  # each exactly once
    assert before <= set(keys)
    assert all(t["outcome"] == "resolved" for t in trials(db, run))
    assert leftovers(engine, run) == []


def test_rollouts_run_on_the_cluster_and_are_recorded_by_the_caller(cluster, engine, tmp_path):
    import asyncio

    import ray

    from trialbook.rl.rollout import Rollouts

    db, run = str(tmp_path / "ledger.db"), unique("ray-rollouts")
    try:
        rollouts = Rollouts(db, run, EXAMPLES, executor="ray", ray_address=cluster.address, runs_dir=tmp_path / "r")
        fix = "```bash\n" + (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text() + "```"

        async def both() -> list:
            return list(await asyncio.gather(
                rollouts.score("plain-bugfix", "no bash block here", step=0, wv=0),
                rollouts.score("plain-bugfix", fix, step=0, wv=0, attempt=1),
            ))  # fmt: skip

        results = asyncio.run(both())
        rollouts.close()
    finally:
        ray.shutdown()
    assert [(r.outcome, r.verifier_reward) for r in results] == [("format_error", 0.0), ("resolved", 1.0)]
    rows = trials(db, run)
    assert sorted(t["attempt"] for t in rows) == [0, 1]
    assert {t["extra"]["executor"] for t in rows} == {"ray"}
    assert leftovers(engine, run) == []


def test_an_unreachable_cluster_is_one_line_and_exit_2(tmp_path):
    db = str(tmp_path / "ledger.db")
    for address, says in (("127.0.0.1:1", "cannot reach the Ray cluster at 127.0.0.1:1"), ("nonsense", "HOST:PORT")):
        res = subprocess.run(
            [sys.executable, "-c", "from trialbook.cli import main; main()", "resume", "x", "--executor", "ray",
             "--ray-address", address, "--db", db],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert res.returncode == 2, res.stderr
        assert res.stderr.count("\n") == 1 and says in res.stderr, res.stderr
