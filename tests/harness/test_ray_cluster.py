"""`--executor ray` on a real multi-node Ray cluster started on this machine (ray.cluster_utils.Cluster: a head
and worker nodes, each a raylet of its own with its own `docker` resource), against the real Docker daemon.

Every run is a `trialbook` process of its own (the driver), as a user would start it, so it can be killed -9.
The nodes share this machine's Docker daemon, which the other tests use too: only the containers labelled
with these tests' run names are ever looked at or removed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import docker
import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.agents.llama import free_port
from trialbook.harness.placement.choice import Where
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


MADE: list[str] = []  # the runs the current test started


def unique(prefix: str) -> str:
    MADE.append(f"{prefix}-{uuid.uuid4().hex[:6]}")
    return MADE[-1]


@pytest.fixture(autouse=True)
def sweep():
    """After each test, passed or failed, its runs' containers go: the Docker daemon is shared. (Each test has
    asserted that none was left before this runs: a failed one may leave some.)"""
    yield
    if MADE:
        api = docker.from_env().api
        for run in MADE:
            for cid in leftovers_api(api, run):
                with contextlib.suppress(docker.errors.NotFound):
                    api.remove_container(cid, force=True)
            for image in api.images(filters={"label": f"trialbook.run={run}"}):
                with contextlib.suppress(docker.errors.APIError):
                    api.remove_image(image["Id"], force=True)
        MADE.clear()


def cli(cluster, db: str, *args: str, background: bool = False):
    env = {**os.environ, "RAY_ADDRESS": cluster.address}
    argv = [sys.executable, "-c", "from trialbook.cli import main; main()", *args, "--db", db]
    if background:
        return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def run_args(
    run: str, tmp_path: Path, tasks: list[str], attempts: int, concurrency: int, executor: str, where: Path = EXAMPLES
) -> list[str]:
    return ["run", str(where), "--agent", "oracle", "--run", run, "--tasks", ",".join(tasks),
            "--attempts", str(attempts), "--concurrency", str(concurrency), "--executor", executor,
            "--runs-dir", str(tmp_path / "runs")]  # fmt: skip


def trials(db: str, run: str) -> list[dict]:
    ledger = Ledger(db)
    return trial_dicts(ledger, run, current_only=False)


def leftovers(engine: docker.DockerClient, run: str, *labels: str) -> list[str]:
    return leftovers_api(engine.api, run, *labels)


def leftovers_api(api: docker.APIClient, run: str, *labels: str) -> list[str]:
    """Ids of the run's containers (the low-level list: no inspect that a container removed meanwhile fails)."""
    return [c["Id"] for c in api.containers(all=True, filters={"label": [f"trialbook.run={run}", *labels]})]


def stable(look, quiet: float = 3.0, timeout: float = 60):
    """What `look()` returns once it has not changed for `quiet` seconds."""
    seen, since, end = look(), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < end and time.monotonic() - since < quiet:
        time.sleep(0.3)
        now = look()
        if now != seen:
            seen, since = now, time.monotonic()
    return seen


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


GATE = "for _ in $(seq 1800); do [ -e /tmp/go ] && break; sleep 0.1; done  # the test's go (Gate)\n"


def gated_tasks(tmp_path: Path, n: int = 3) -> tuple[Path, list[str]]:
    """Copies of plain-bugfix whose solution waits for the test's go: each trial holds its node until then."""
    root, ids = tmp_path / "gated", [f"gated-{k}" for k in range(n)]
    for task in ids:
        shutil.copytree(EXAMPLES / "plain-bugfix", root / task)
        solve = root / task / "solution" / "solve.sh"
        shebang, rest = solve.read_text().split("\n", 1)
        solve.write_text(f"{shebang}\n{GATE}{rest}")
        toml = root / task / "task.toml"
        toml.write_text(toml.read_text().replace("[agent]\ntimeout_sec = 60", "[agent]\ntimeout_sec = 300"))
    return root, ids


class Gate:
    """Lets the gated trials of `run` go (`docker exec <agent container> touch /tmp/go`), `allow` of them
    (math.inf: every one, now and later), never the `spared` containers. With every trial held until the
    test says so, where the trials are when the test acts is known, however slow this shared machine is."""

    def __init__(self, engine: docker.DockerClient, run: str) -> None:
        self.api, self.run = engine.api, run
        self.allow: float = 0
        self.released: set[str] = set()
        self.spared: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Gate:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def held(self) -> list[str]:
        """The run's agent containers (named after their trial; verifier ones have a suffix) not let go."""
        boxes = self.api.containers(filters={"label": f"trialbook.run={self.run}", "status": "running"})
        agents = [c for c in sorted(boxes, key=lambda c: c["Created"])
                  if c["Names"][0].lstrip("/") == c["Labels"].get("trialbook.trial")]  # fmt: skip
        return [c["Id"] for c in agents if c["Id"] not in self.released | self.spared]

    def _loop(self) -> None:
        while not self._stop.wait(0.3):
            try:
                for cid in self.held():
                    if len(self.released) >= self.allow:
                        break
                    self.api.exec_start(self.api.exec_create(cid, ["touch", "/tmp/go"]))
                    self.released.add(cid)
            except docker.errors.APIError:  # a container removed meanwhile: the next round sees the rest
                pass


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
    tasks_dir, tasks = gated_tasks(tmp_path)
    doomed = cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    args = run_args(run, tmp_path, tasks, 3, 6, "ray", tasks_dir)
    with Gate(engine, run) as gate:
        proc = cli(cluster, db, *args, background=True)
        try:
            # 3 nodes x 2 `docker` slots and 6 held in their solutions: 2 of them surely on the doomed node
            assert wait_until(lambda: len(gate.held()) >= 6, timeout=240), "six trials were never held at once"
            cluster.remove_node(doomed, allow_graceful=False)
            gate.allow = math.inf
            assert proc.wait(300) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    rows = trials(db, run)
    keys = sorted((t["task_id"], t["attempt"]) for t in rows)
    assert keys == sorted((task, a) for task in tasks for a in range(3))  # each exactly once
    assert doomed.node_id not in {t["extra"].get("node_id") for t in rows}  # its trials finished elsewhere
    lost = [t for t in rows if t["extra"].get("lost_nodes")]
    assert len(lost) >= 2, "the doomed node's two trials did not see it die"
    assert all(t["extra"]["retries"] >= 1 for t in lost)
    assert all(t["outcome"] == "resolved" for t in rows)  # the policy retried them (NodeLostError: infra, retry)
    assert leftovers(engine, run) == []


def test_driver_killed_then_resume_removes_its_containers_and_loses_and_repeats_nothing(cluster, engine, tmp_path):
    db, run = str(tmp_path / "ledger.db"), unique("ray-driverkill")
    tasks_dir, tasks = gated_tasks(tmp_path)
    args = run_args(run, tmp_path, tasks, 3, 4, "ray", tasks_dir)
    with Gate(engine, run) as gate:
        proc = cli(cluster, db, *args, background=True)
        try:
            gate.allow = 2  # two trials end; the next ones are held in their containers when the driver dies
            assert wait_until(lambda: len(trials(db, run)) >= 2 and len(gate.held()) >= 2, timeout=240)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        before = {(t["task_id"], t["attempt"]) for t in trials(db, run)}
        assert 2 <= len(before) < 9
        # Ray stops a dead driver's tasks, and a worker let finish removes its containers; one killed before
        # it could (a loaded node) leaves them. Some may be left here, and one such is planted for sure.
        left = stable(lambda: set(leftovers(engine, run)))
        labels = {"trialbook.run": run, "trialbook.ledger": Ledger(db).id, "trialbook.trial": f"tb-{run}-planted"}
        left.add(engine.containers.create("trialbook-base:bookworm", ["sleep", "300"], labels=labels).id)
        gate.spared |= left  # held for ever: only `resume` may remove them
        gate.allow = math.inf
        res = cli(cluster, db, "resume", run, "--executor", "ray")
    assert res.returncode == 0, res.stderr
    assert f"removed {len(left)} leftover container(s)" in res.stderr, res.stderr
    keys = [(t["task_id"], t["attempt"]) for t in trials(db, run)]
    assert sorted(keys) == sorted((task, a) for task in tasks for a in range(3))  # each exactly once
    assert before <= set(keys)
    assert all(t["outcome"] == "resolved" for t in trials(db, run))
    assert leftovers(engine, run) == []


def test_rerun_runs_on_the_cluster_and_supersedes(cluster, engine, tmp_path):
    """slow-solution: agent_timeout at x1, resolved given more time (as tests/harness/test_rerun_counts_docker.py)."""
    db, run = str(tmp_path / "ledger.db"), unique("ray-rerun")
    res = cli(cluster, db, *run_args(run, tmp_path, ["slow-solution"], 2, 2, "ray"))
    assert res.returncode == 0, res.stderr
    assert [t["outcome"] for t in trials(db, run)] == ["agent_timeout"] * 2
    res = cli(cluster, db, "rerun", run, "--where", "agent_timeout", "--timeout-multiplier", "4", "--executor", "ray")
    assert res.returncode == 0, res.stderr
    ledger = Ledger(db)
    current = trial_dicts(ledger, run)
    assert sorted((t["attempt"], t["outcome"]) for t in current) == [(0, "resolved"), (1, "resolved")]
    assert len(trials(db, run)) == 4  # the timed-out ones are kept, superseded
    assert {t["extra"]["executor"] for t in trials(db, run)} == {"ray"}
    assert leftovers(engine, run) == []


def test_validate_runs_on_the_cluster_with_the_expected_verdicts(cluster, engine, tmp_path):
    db, run = str(tmp_path / "ledger.db"), unique("ray-validate")
    res = cli(cluster, db, "validate", str(EXAMPLES), "--tasks", "plain-bugfix,slow-solution", "--repeats", "1",
              "--run", run, "--runs-dir", str(tmp_path / "runs"), "--executor", "ray", "--json")  # fmt: skip
    assert res.returncode == 1, res.stderr
    verdicts = {row["task_id"]: row["verdict"] for row in json.loads(res.stdout)["tasks"]}
    assert verdicts == {"plain-bugfix": "ok", "slow-solution": "oracle_fails"}
    rows = trials(db, run)
    assert sorted((t["task_id"], t["extra"]["agent"]) for t in rows) == [
        ("plain-bugfix", "nop"), ("plain-bugfix", "oracle"), ("slow-solution", "nop"), ("slow-solution", "oracle"),
    ]  # fmt: skip
    assert all(t["extra"]["executor"] == "ray" and t["extra"]["node_id"] for t in rows)
    assert leftovers(engine, run) == []


def test_quickstart_runs_on_the_cluster(cluster, engine, tmp_path):
    db = str(tmp_path / "ledger.db")
    ledger_id = Ledger(db).id
    examples = tmp_path / "examples"  # quickstart runs every task of its folder: two (a comparison's least)
    for task in ("plain-bugfix", "proxy-env"):
        shutil.copytree(EXAMPLES / task, examples / task)
    res = cli(cluster, db, "quickstart", "--tasks-dir", str(examples), "--attempts", "1", "--executor", "ray", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert {a: (r["trials"], r["resolved"]) for a, r in data["runs"].items()} == {"nop": (2, 0), "oracle": (2, 2)}
    assert data["comparison"]["tasks_paired"] == 2
    for run in ("quickstart-nop", "quickstart-oracle"):
        assert [t["extra"]["executor"] for t in trials(db, run)] == ["ray", "ray"]
        assert leftovers(engine, run, f"trialbook.ledger={ledger_id}") == []  # other ledgers' quickstarts may run


def test_rollouts_run_on_the_cluster_and_are_recorded_by_the_caller(cluster, engine, tmp_path):
    import asyncio

    import ray

    from trialbook.rl.rollout import Rollouts

    db, run = str(tmp_path / "ledger.db"), unique("ray-rollouts")
    try:
        rollouts = Rollouts(db, run, EXAMPLES, where=Where("ray", ray_address=cluster.address), runs_dir=tmp_path / "r")
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


def test_clean_removes_a_runs_leftovers_with_one_task_on_every_node(cluster, engine, tmp_path):
    import ray

    from trialbook.harness.placement.raycluster import RayExecutor

    db, run = str(tmp_path / "ledger.db"), unique("ray-clean")
    ledger_id = Ledger(db).id

    def leave(n: int) -> None:  # what a killed driver leaves: containers labelled with its run and ledger
        for _ in range(n):
            labels = {"trialbook.run": run, "trialbook.ledger": ledger_id}
            engine.containers.create("trialbook-base:bookworm", ["sleep", "300"], labels=labels)

    leave(2)
    res = cli(cluster, db, "clean", "--run", run, "--executor", "ray")
    assert res.returncode == 0, res.stderr
    assert f"removed 2 container(s) and 0 image(s) of this ledger's run '{run}'" in res.stdout + res.stderr
    assert leftovers(engine, run) == []

    leave(3)
    try:
        by_node = RayExecutor(cluster.address).clean_nodes(run, images=False, ledger=ledger_id)
    finally:
        ray.shutdown()
    # every node that runs trials answered from itself (the head runs none); here they share one daemon,
    # so together they removed the three once
    assert set(by_node) == {n.node_id for n in cluster.worker_nodes}
    assert sum(c for c, _ in by_node.values()) == 3
    assert leftovers(engine, run) == []


def test_an_unreachable_cluster_is_one_line_and_exit_2(tmp_path):
    db = str(tmp_path / "ledger.db")
    Ledger(db)  # resume reads a ledger that exists (a missing one is its own error, tested elsewhere)
    with socket.create_server(("127.0.0.1", 0)) as other:  # a port where something that is not Ray listens
        cases = (
            ("127.0.0.1:1", "cannot reach the Ray cluster at 127.0.0.1:1"),
            (f"127.0.0.1:{other.getsockname()[1]}", "something listens there but no Ray head answers"),
            ("nonsense", "HOST:PORT"),
        )
        for address, says in cases:
            res = subprocess.run(
                [sys.executable, "-c", "from trialbook.cli import main; main()", "resume", "x", "--executor", "ray",
                 "--ray-address", address, "--db", db],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert res.returncode == 2, res.stderr
            assert res.stderr.count("\n") == 1 and says in res.stderr, res.stderr


def test_concurrency_caps_the_trials_in_flight_across_the_cluster(cluster, engine, tmp_path):
    db, run = str(tmp_path / "ledger.db"), unique("ray-cap")
    tasks_dir, tasks = gated_tasks(tmp_path, 2)
    api, most = engine.api, [0]
    done = threading.Event()

    def in_flight() -> int:  # a trial's containers (agent, verifier) all carry its name
        boxes = api.containers(all=True, filters={"label": f"trialbook.run={run}"})
        return len({c["Labels"].get("trialbook.trial") for c in boxes})

    def watch() -> None:
        while not done.wait(0.2):
            with contextlib.suppress(docker.errors.APIError):
                most[0] = max(most[0], in_flight())

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    with Gate(engine, run) as gate:  # 2 workers x 2 `docker` slots: room for 4, the cap says 3
        proc = cli(cluster, db, *run_args(run, tmp_path, tasks, 2, 3, "ray", tasks_dir), background=True)
        try:
            assert wait_until(lambda: len(gate.held()) >= 3, timeout=240), "three trials were never held at once"
            assert stable(lambda: len(gate.held()), quiet=5.0) == 3  # the fourth waits in the driver, not on a node
            gate.allow = math.inf
            assert proc.wait(300) == 0
        finally:
            done.set()
            if proc.poll() is None:
                proc.kill()
    watcher.join()
    assert most[0] == 3
    assert sorted((t["task_id"], t["attempt"]) for t in trials(db, run)) == [(t, a) for t in tasks for a in range(2)]
    assert leftovers(engine, run) == []


@contextlib.contextmanager
def registry(tmp_path: Path):
    """A real Docker registry (distribution's, Debian's docker-registry) on a free port of 127.0.0.1, which the
    daemon pulls from over plain HTTP (loopback registries are insecure-allowed by default)."""
    binary = shutil.which("docker-registry") or shutil.which("registry")
    assert binary, "a Docker registry binary is needed (scripts/test.sh installs Debian's docker-registry)"
    port = free_port()
    config = tmp_path / "registry.yml"
    config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {tmp_path / 'registry'}\n"
                      f"http:\n  addr: 127.0.0.1:{port}\n")  # fmt: skip
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/v2/"
        assert wait_until(lambda: urllib.request.urlopen(url, timeout=2).status == 200, timeout=30), "no registry"
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def image_task(root: Path, name: str, image: str) -> None:
    """A task on a named image (no Dockerfile): the oracle writes the answer the verifier looks for."""
    (root / name / "tests").mkdir(parents=True)
    (root / name / "solution").mkdir()
    (root / name / "task.toml").write_text(
        f'[environment]\ndocker_image = "{image}"\n[verifier]\nisolation = "container"\n'
    )
    (root / name / "solution" / "solve.sh").write_text("echo 42 > /root/answer\n")
    (root / name / "tests" / "test.sh").write_text(
        "mkdir -p /logs/verifier\nif grep -qx 42 /root/answer; then s=1; else s=0; fi\n"
        "echo $s > /logs/verifier/reward.txt\n"
    )


def test_a_node_builds_a_task_image_on_first_use_and_pulls_an_image_the_task_names(cluster, engine, tmp_path):
    db, run, nonce = str(tmp_path / "ledger.db"), unique("ray-images"), uuid.uuid4().hex[:8]
    root = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "plain-bugfix", root / "built")
    dockerfile = root / "built" / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"LABEL trialbook.test.nonce={nonce}\n")  # a hash no daemon has
    with registry(tmp_path) as host:
        pulled, absent = f"{host}/trialbook-pulled:{nonce}", f"{host}/trialbook-absent:{nonce}"
        engine.images.get("trialbook-base:bookworm").tag(pulled)
        try:
            pushed = engine.images.push(pulled)
            assert '"error"' not in pushed, pushed
            engine.images.remove(pulled)  # only the registry has it now: the node must pull it
            image_task(root, "pulled", pulled)
            image_task(root, "unpullable", absent)
            args = run_args(run, tmp_path, ["built", "pulled", "unpullable"], 1, 3, "ray", root)
            res = cli(cluster, db, *args, "--retries", "0")
            assert res.returncode == 1 and "error: 1 trial(s) ended infra_error" in res.stderr, res.stderr  # unpullable
            rows = {t["task_id"]: t for t in trials(db, run)}
            assert engine.images.get(pulled).id == engine.images.get("trialbook-base:bookworm").id
        finally:
            with contextlib.suppress(docker.errors.ImageNotFound):
                engine.images.remove(pulled)
    assert rows["pulled"]["outcome"] == "resolved" and rows["pulled"]["extra"]["image"] == pulled
    assert rows["built"]["outcome"] == "resolved"
    built = engine.images.get(rows["built"]["extra"]["image"])  # built by the node, labelled with this run
    assert built.labels["trialbook.run"] == run and built.labels["trialbook.test.nonce"] == nonce
    missing = rows["unpullable"]
    assert (missing["outcome"], missing["exception"]) == ("infra_error", "ImageBuildError")
    assert f"image {absent} is not on the daemon and could not be pulled" in missing["exception_message"]
    assert all(t["extra"]["node_id"] for t in rows.values())
    res = cli(cluster, db, "clean", "--run", run, "--executor", "ray")  # the run's built image goes from its node
    assert res.returncode == 0, res.stderr
    assert f"removed 0 container(s) and 1 image(s) of this ledger's run '{run}'" in res.stdout + res.stderr
    assert engine.api.images(filters={"label": f"trialbook.run={run}"}) == []
