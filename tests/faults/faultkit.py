"""What every fault test does: run `trialbook` as its own process, wait for the moment to cause the fault, and end
with the ledger's integrity check, every planned (task, attempt) recorded once, and no container left."""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trialbook.ledger.integrity import check
from trialbook.ledger.store import Ledger

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]


class Tb:
    """`trialbook ARGS` as its own process; its stderr lines collected as they come (`lines`)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        full = {**os.environ, "TRIALBOOK_PROGRESS_EVERY": "10", **(env or {})}
        self.proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=full)  # fmt: skip
        self.lines: list[str] = []
        self.out: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(pipe, into), daemon=True)
                         for pipe, into in ((self.proc.stderr, self.lines), (self.proc.stdout, self.out))]  # fmt: skip
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(pipe: Any, into: list[str]) -> None:
        for line in pipe:
            into.append(line.rstrip("\n"))

    def saw(self, words: str) -> bool:
        return any(words in line for line in self.lines)

    def wait(self, timeout: float) -> int:
        """The exit status (the process killed past `timeout`, then an AssertionError)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"still running after {timeout:g}s: {self.err}") from None
        for reader in self._readers:
            reader.join(10)
        return self.proc.returncode

    @property
    def err(self) -> str:
        return "\n".join(self.lines)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def tb(*args: str, env: dict[str, str] | None = None) -> Tb:
    return Tb(*args, env=env)


def oracle_run(run: str, db: str, runs: Path, attempts: int, concurrency: int, *extra: str) -> list[str]:
    return ["run", str(EXAMPLES), "--agent", "oracle", "--task", "plain-bugfix", "--attempts", str(attempts),
            "--concurrency", str(concurrency), "--run", run, "--runs-dir", str(runs), "--db", db, *extra]  # fmt: skip


def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def recorded(db: str, run: str) -> int:
    """Trials of `run` in the ledger now (0 before the run exists)."""
    try:
        ledger = Ledger(db, create=False, reads_only=True)
        return sum(1 for _ in ledger.trial_rows(ledger.get_run(run).id))
    except Exception:  # noqa: BLE001 - not there yet, or the database is down (the fault): nothing recorded, for now
        return 0


def assert_whole(
    db: str, run: str, attempts: int, docker_host: str | None = None, tasks: tuple[str, ...] = ("plain-bugfix",)
) -> None:
    """The ledger check passes; every attempt of each task recorded once; no container of the run left."""
    ledger = Ledger(db, create=False, reads_only=True)
    result = check(ledger)
    assert result.ok, result.problems
    rows = list(ledger.trial_rows(ledger.get_run(run).id))
    counts = Counter((t.task_id, t.attempt) for t in rows)
    assert counts == Counter({(task, a): 1 for task in tasks for a in range(attempts)}), counts  # 0 lost, 0 duplicated
    assert not containers(run, docker_host), containers(run, docker_host)


def containers(run: str, docker_host: str | None = None) -> list[str]:
    env = {**os.environ, **({"DOCKER_HOST": docker_host} if docker_host else {})}
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=trialbook.run={run}"],
                         capture_output=True, text=True, env=env, check=True)  # fmt: skip
    return out.stdout.split()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OwnPostgres:
    """A PostgreSQL server of this test's own (initdb in a temporary folder, its own port): restarted at will
    without touching the shared test server other tests use."""

    def __init__(self) -> None:
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        if not found:
            raise AssertionError("no PostgreSQL binaries: run scripts/ci-setup-postgres.sh")
        self.bin = found[-1].parent
        self.dir = Path(tempfile.mkdtemp(prefix="tb-pg-"))
        pw = pwd.getpwnam("postgres")
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres(f"{self.bin}/initdb -D {self.dir}/data -A trust -U postgres -E UTF8 >/dev/null")
        self.start()

    def _as_postgres(self, command: str) -> None:
        subprocess.run(["su", "postgres", "-s", "/bin/sh", "-c", command], check=True, timeout=120)

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        self._as_postgres(f"{self.bin}/pg_ctl -D {self.dir}/data -o '{opts}' -l {self.dir}/log -w start >/dev/null")

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres(f"{self.bin}/pg_ctl -D {self.dir}/data -m {mode} -w stop >/dev/null")

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


class OwnDockerd:
    """A dockerd of this test's own (its socket, data root, exec root, pidfile, containerd namespace, and a bridge of
    its own: a dockerd started with `--bridge none` deletes the host's docker0), with the base image loaded from the
    main daemon; stopped and started again at will, never the main daemon."""

    def __init__(self) -> None:
        if shutil.which("dockerd") is None or os.geteuid() != 0:
            raise AssertionError("a second dockerd needs dockerd and root")
        token = secrets.token_hex(3)
        self.root = Path(f"/tmp/tb-fd-{token}")  # short: containerd's socket path must fit in 108 bytes
        for sub in ("data", "exec"):
            (self.root / sub).mkdir(parents=True)
        (self.root / "daemon.json").write_text("{}\n")  # not the main daemon's /etc/docker/daemon.json
        self.bridge = f"tbfd-{token}"  # at most 15 characters
        self.subnet = f"10.214.{int(token[:2], 16)}.1/24"
        self.add_bridge()
        self.url = f"unix://{self.root / 'docker.sock'}"
        ns = f"tbfault{token}"
        self.cmd = [
            "dockerd", "--config-file", str(self.root / "daemon.json"), "--host", self.url,
            "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
            "--pidfile", str(self.root / "docker.pid"), "--bridge", self.bridge, "--iptables=false",
            "--ip-masq=false", "--containerd-namespace", ns, "--containerd-plugins-namespace", f"{ns}p",
        ]  # fmt: skip
        if Path("/run/trialbook/crun").exists():  # as scripts/docker-up.sh registers it on the main daemon
            self.cmd += ["--add-runtime", "crun=/run/trialbook/crun"]
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()
        save = subprocess.Popen(["docker", "save", "trialbook-base:bookworm"], stdout=subprocess.PIPE)
        subprocess.run(["docker", "-H", self.url, "load", "-q"], stdin=save.stdout, check=True, capture_output=True)
        save.wait()

    def add_bridge(self) -> None:
        """The daemon's own bridge device (made before it starts; made again after a test deleted it)."""
        subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True)
        subprocess.run(["ip", "addr", "add", self.subnet, "dev", self.bridge], check=True)
        subprocess.run(["ip", "link", "set", self.bridge, "up"], check=True)

    def start(self) -> None:
        with (self.root / "dockerd.log").open("ab") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        end = time.monotonic() + 60
        while subprocess.run(["docker", "-H", self.url, "version"], capture_output=True).returncode != 0:
            assert self.proc.poll() is None and time.monotonic() < end, self.log()
            time.sleep(0.3)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # only the daemon this test started
            self.proc.wait(60)

    def log(self) -> str:
        return (self.root / "dockerd.log").read_text(errors="replace")[-2000:]

    def close(self) -> None:
        self.stop()
        subprocess.run(["ip", "link", "del", self.bridge], check=False)
        shutil.rmtree(self.root, ignore_errors=True)
