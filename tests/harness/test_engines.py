"""One run over two Docker daemons (harness/placement/fleet.py, `trialbook run --engine URL[=N]`): a second dockerd
started
here (its own socket, data root, exec root, pidfile and containerd namespace; no bridge), trials on both, then that
daemon stopped mid-run: nothing lost or doubled, its trials retried on the other."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import docker
import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.errors import UserError
from trialbook.harness.placement.fleet import parse_engine
from trialbook.ledger.store import Ledger

MAIN = "unix:///var/run/docker.sock"


def test_an_engine_is_a_url_with_an_optional_capacity():
    assert parse_engine("unix:///run/d.sock") == ("unix:///run/d.sock", None)
    assert parse_engine("tcp://10.0.0.2:2375=8") == ("tcp://10.0.0.2:2375", 8)
    for bad in ("/run/d.sock", "unix:///d.sock=0", "unix:///d.sock=x"):
        with pytest.raises(UserError) as err:
            parse_engine(bad)
        assert "--engine" in str(err.value) and "\n" not in str(err.value)


def test_an_engine_that_does_not_answer_is_one_line(cli, tmp_path):
    res = cli("run", str(EXAMPLES), "--agent", "nop", "--run", "x", "--engine", f"unix://{tmp_path}/none.sock",
              "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert res.exit_code == 2 and f"--engine unix://{tmp_path}/none.sock" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.fixture(scope="module")
def second_daemon(engine):
    """A dockerd of this test's own, with the base image loaded from the main daemon; stopped (only it) at the end.

    Its bridge is its own: a dockerd started with `--bridge none` deletes the host's docker0 at start-up (libnetwork's
    removeDefaultBridgeInterface), which breaks every container with network on the main daemon."""
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        pytest.fail("a second dockerd needs dockerd and root")
    token = secrets.token_hex(3)
    root = Path(f"/tmp/tb-d2-{token}")  # short: containerd's socket path must fit in 108 bytes
    for sub in ("data", "exec"):
        (root / sub).mkdir(parents=True)
    (root / "daemon.json").write_text("{}\n")  # not the main daemon's /etc/docker/daemon.json
    bridge = f"tbd2-{token}"  # at most 15 characters
    subprocess.run(["ip", "link", "add", bridge, "type", "bridge"], check=True)
    subprocess.run(["ip", "addr", "add", f"10.213.{int(token[:2], 16)}.1/24", "dev", bridge], check=True)
    subprocess.run(["ip", "link", "set", bridge, "up"], check=True)
    sock, pid = root / "docker.sock", root / "docker.pid"
    ns = f"tbtest{token}"
    cmd = [
        "dockerd", "--config-file", str(root / "daemon.json"), "--host", f"unix://{sock}",
        "--data-root", str(root / "data"), "--exec-root", str(root / "exec"), "--pidfile", str(pid),
        "--bridge", bridge, "--iptables=false", "--ip-masq=false",
        "--containerd-namespace", ns, "--containerd-plugins-namespace", f"{ns}p",
    ]  # fmt: skip
    if Path("/run/trialbook/crun").exists():  # as scripts/docker-up.sh registers it on the main daemon
        cmd += ["--add-runtime", "crun=/run/trialbook/crun"]
    log = open(root / "dockerd.log", "wb")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"unix://{sock}"
    try:
        end = time.monotonic() + 60
        while True:
            try:
                docker.DockerClient(base_url=url, timeout=120).ping()
                break
            except Exception:
                assert proc.poll() is None and time.monotonic() < end, (root / "dockerd.log").read_text()[-2000:]
                time.sleep(0.5)
        save = subprocess.Popen(["docker", "save", "trialbook-base:bookworm"], stdout=subprocess.PIPE)
        subprocess.run(["docker", "-H", url, "load", "-q"], stdin=save.stdout, check=True, capture_output=True)
        save.wait()
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        log.close()
        subprocess.run(["ip", "link", "del", bridge], check=False)
        shutil.rmtree(root, ignore_errors=True)


def _slow_copies(tmp_path: Path, n: int) -> Path:
    """Copies of plain-bugfix whose solution waits a few seconds first (time for the daemon to go mid-trial)."""
    tasks = tmp_path / "tasks"
    for i in range(n):
        task = tasks / f"slow-{i}"
        shutil.copytree(EXAMPLES / "plain-bugfix", task)
        solve = task / "solution" / "solve.sh"
        solve.write_text(solve.read_text().replace("#!/bin/bash\n", "#!/bin/bash\nsleep 8\n", 1))
    return tasks


def test_a_run_over_two_daemons_survives_losing_one(second_daemon, engine, cli, db, tmp_path):
    url, proc = second_daemon
    d2 = docker.DockerClient(base_url=url)
    tasks = _slow_copies(tmp_path, 4)
    run = f"engines-{secrets.token_hex(3)}"
    stopped = threading.Event()

    def stop_it_mid_trial() -> None:
        end = time.monotonic() + 300
        while time.monotonic() < end:  # a trial of the run running there: then its daemon goes
            if d2.containers.list(sparse=True, filters={"label": f"trialbook.run={run}"}):
                time.sleep(2)
                proc.send_signal(signal.SIGTERM)  # only the daemon this test started
                proc.wait(60)
                stopped.set()
                return
            time.sleep(0.3)

    killer = threading.Thread(target=stop_it_mid_trial, daemon=True)
    killer.start()
    res = cli("run", str(tasks), "--agent", "oracle", "--run", run, "--attempts", "2", "--concurrency", "4",
              "--engine", f"{MAIN}=2", "--engine", f"{url}=2", "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    killer.join(5)
    assert res.exit_code == 0, res.stderr
    assert stopped.is_set(), "the second daemon never ran a trial of the run"
    rows = trial_dicts(Ledger(db), run, current_only=False)
    assert sorted((t["task_id"], t["attempt"]) for t in rows) == sorted(
        (f"slow-{i}", a) for i in range(4) for a in range(2)
    )  # each (task, attempt) once: nothing lost, nothing doubled
    why = {
        (t["task_id"], t["attempt"]): (t["outcome"], t["exception"], t["extra"].get("engine"),
                                       t["extra"].get("lost_engines"), t["extra"].get("agent_exit_code"),
                                       t["extra"].get("tags"), t["extra"].get("phase_s"))
        for t in rows if t["outcome"] != "resolved"
    }  # fmt: skip
    assert why == {}
    moved = [t for t in rows if t["extra"].get("lost_engines")]
    assert moved, "no trial was on the stopped daemon when it went"
    assert all(t["extra"]["lost_engines"] == [url] and t["extra"]["engine"] == MAIN for t in moved)
    assert {t["extra"]["engine"] for t in rows} == {MAIN}  # every recorded trial ended on the daemon still there
    assert engine.containers.list(all=True, sparse=True, filters={"label": f"trialbook.run={run}"}) == []
