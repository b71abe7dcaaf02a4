"""The containers' OCI runtime (DockerEngine.runtime_for, `trialbook run --runtime`) on the real daemon: `auto` is crun
where the daemon has it (scripts/docker-up.sh registers it), `default` the daemon's own (runc here), and under both the
task's limits hold and the harness reads what a container hit from its cgroup. A runtime the daemon lacks is one line,
exit 2, before anything is written."""

from __future__ import annotations

import errno
import json
import os
import secrets
from pathlib import Path

import pytest
from docker.errors import APIError

from trialbook.harness.run.stack import connect
from trialbook.ledger.store import Ledger
from trialbook.sandbox import BoxSpec, DockerEngine
from trialbook.sandbox.box import ContainerStartError
from trialbook.sandbox.docker import AUTO_RUNTIME, LABEL_RUN

IMAGE = "trialbook-base:bookworm"


@pytest.mark.docker
def test_the_set_up_registers_crun_and_auto_picks_it(engine):
    tb = connect()
    assert AUTO_RUNTIME in tb.runtimes()  # scripts/docker-up.sh (CI's set-up too) starts dockerd with it
    assert tb.runtime_for("auto") == AUTO_RUNTIME
    assert tb.runtime_for("default") is None
    assert tb.runtime_for("runc") == "runc"
    with pytest.raises(Exception, match="no runtime 'nosuch'"):
        tb.runtime_for("nosuch")


@pytest.mark.docker
def test_the_set_up_runs_crun_from_a_read_only_mount(engine):
    """scripts/docker-up.sh registers crun from a read-only mount of its binary, so that crun need not copy itself
    into a sealed memfd on every call: then that mount is the guard against a container overwriting the host's
    runtime through /proc/PID/exe (CVE-2019-5736), and it must refuse a write, root's too."""
    path = engine.info()["Runtimes"][AUTO_RUNTIME]["path"]
    assert path == "/run/trialbook/crun"
    assert os.statvfs(path).f_flag & os.ST_RDONLY  # the mount itself is read-only
    with pytest.raises(OSError) as refused:
        open(path, "r+b").close()  # noqa: SIM115 - the open itself is what is tested
    # EROFS; or ETXTBSY while a container starts (crun running), which the kernel checks first
    assert refused.value.errno in (errno.EROFS, errno.ETXTBSY)


@pytest.mark.docker
@pytest.mark.parametrize("runtime", ["auto", "default"])
def test_limits_hold_and_are_read_under_each_runtime(engine, runtime):
    tb = connect()
    run = f"runtime-{runtime}-{secrets.token_hex(3)}"
    spec = BoxSpec(IMAGE, {LABEL_RUN: run}, cpus=0.5, memory_mb=64, pids_limit=32, network=False, runtime=runtime)
    box = tb.start(spec, f"tb-{run}")
    try:
        host = engine.api.inspect_container(box.id)["HostConfig"]
        expected = AUTO_RUNTIME if runtime == "auto" else engine.info()["DefaultRuntime"]
        assert host["Runtime"] == expected and box.runtime == expected  # what the trial records (extra.runtime)
        assert host["Memory"] == 64 * 2**20 and host["PidsLimit"] == 32 and host["NanoCpus"] == 5 * 10**8
        assert box.exec(["ls", "/sys/class/net"], timeout=30).output.split() == ["lo"]  # --network none
        oom = box.exec(["python3", "-c", "b = bytearray(400 * 2**20); print('allocated')"], timeout=60)
        assert "allocated" not in oom.output and oom.exit_code != 0, oom
        forks = box.exec(["bash", "-c", "for i in $(seq 60); do sleep 3 & done 2>&1; wait; echo done"], timeout=60)
        assert "retry" in forks.output or "Resource temporarily unavailable" in forks.output, forks.output[-500:]
        hits = box.limit_hits()
        assert hits.get("oom_kills", 0) >= 1 and hits.get("pids_limit_hits", 0) >= 1, hits
    finally:
        box.remove()
        tb.clean(run)


@pytest.mark.docker
def test_an_unknown_runtime_is_one_line_before_anything_is_written(engine, cli, db):
    tasks = Path(__file__).parents[2] / "examples" / "tasks"
    result = cli("run", str(tasks), "--agent", "oracle", "--run", "r", "--tasks", "plain-bugfix", "--runtime", "nosuch")
    assert result.exit_code == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no runtime 'nosuch'" in lines[0] and "Traceback" not in result.stderr, result
    assert Ledger(db).run_names() == []


class _RefusingApi:
    """Stands in for a daemon whose crun refuses this host's cgroups (hybrid mode with a controller left on the v2
    side: what scripts/docker-up.sh mends on a host it sets up, so the real daemon here never refuses). Records the
    runtime each container was asked for; only starts of a crun container fail, with the daemon's own words."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []
        self.created: dict[str, str | None] = {}

    def create_host_config(self, **kwargs):
        return kwargs

    def create_container(self, image, **kwargs):
        cid = secrets.token_hex(32)
        self.created[cid] = kwargs["host_config"].get("runtime")
        self.asked.append(self.created[cid])
        return {"Id": cid}

    def attach_socket(self, *args, **kwargs):
        raise OSError("no channel in this stand-in")

    def start(self, cid):
        if self.created[cid] == "crun":
            raise APIError(
                "500 Server Error",
                explanation="failed to create shim task: OCI runtime create failed: cgroups in hybrid mode not "
                "supported, drop all controllers from cgroupv2: unknown",
            )

    def put_archive(self, cid, path, data):
        return True

    def containers(self, **kwargs):
        return []


def test_auto_falls_back_to_the_default_runtime_once_crun_refuses_the_host(monkeypatch):
    tb = DockerEngine.__new__(DockerEngine)
    api = _RefusingApi()
    tb.client = type("Client", (), {"api": api, "containers": type("C", (), {"get": staticmethod(_gone)})})()
    tb.channels, tb._channels, tb._configs, tb._image_ids = True, {}, {IMAGE: ("/", True)}, {}
    tb._info = {"Runtimes": {"crun": {}, "runc": {}}, "DefaultRuntime": "runc"}
    tb._auto_refused, tb._runtime_of = False, {}
    assert tb.runtime_for("auto") == "crun"
    cid = tb._create(tb._spec(BoxSpec(IMAGE, {}, 1.0, 256, 64, runtime="auto")), "tb-x", {})
    assert api.asked == ["crun", None] and api.created[cid] is None  # refused once, then the default
    assert tb._runtime_of[cid] == "runc"
    assert tb.runtime_for("auto") is None  # and `auto` means the default from then on
    tb._create(tb._spec(BoxSpec(IMAGE, {}, 1.0, 256, 64, runtime="auto")), "tb-y", {})
    assert api.asked == ["crun", None, None]
    tb._auto_refused = False
    with pytest.raises(ContainerStartError, match="OCI runtime"):  # a runtime asked for by name is not replaced
        tb._create(tb._spec(BoxSpec(IMAGE, {}, 1.0, 256, 64, runtime="crun")), "tb-z", {})
    assert json.dumps(api.asked) == '["crun", null, null, "crun"]'


def _gone(name):
    raise APIError("404")


@pytest.mark.docker
def test_a_trial_records_its_runtime(engine, cli, db, tmp_path):
    tasks = Path(__file__).parents[2] / "examples" / "tasks"
    args = ["--agent", "oracle", "--tasks", "plain-bugfix", "--runs-dir", str(tmp_path / "runs")]
    assert cli("run", str(tasks), "--run", "on-runc", "--runtime", "runc", *args).exit_code == 0
    ledger = Ledger(db)
    (trial,) = ledger.trial_rows(ledger.get_run("on-runc").id)
    assert trial.outcome == "resolved" and trial.extra["runtime"] == "runc", trial.extra
    assert ledger.get_run("on-runc").config["runtime"] == "runc"  # `resume` runs its trials on it too
