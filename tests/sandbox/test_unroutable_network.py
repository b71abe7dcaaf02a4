"""The unroutable network (task.toml `unroutable_network`, sandbox/docker.py UNROUTABLE_NETWORK): a connect to any
address past the sandbox waits for its timeout, as to an address the internet drops, where with no network it fails
at once; and nothing is reachable through it: not the host (a real server listening on all of its addresses), not
another sandbox on the same network, not over IPv6. Then a task that needs it: graded by its verifier on it."""

from __future__ import annotations

import http.server
import secrets
import shutil
import socket
import threading
from pathlib import Path

import docker
import pytest

from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger
from trialbook.sandbox import BoxSpec, DockerEngine
from trialbook.sandbox import docker as sandbox_docker
from trialbook.sandbox.backend import UNROUTABLE, Unsupported
from trialbook.sandbox.box import ContainerStartError
from trialbook.sandbox.docker import LABEL_RUN

pytestmark = pytest.mark.docker

IMAGE = "trialbook-base:bookworm"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"
# how a connect to ADDR:PORT ends within 1 s: "timeout", or the error's name ("ConnectionRefusedError", ...)
PROBE = """import socket, sys
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET)
s.settimeout(1.0)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print("connected")
except socket.timeout:
    print("timeout")
except OSError as exc:
    print(type(exc).__name__, exc.errno)
"""


@pytest.fixture(scope="module")
def tb(engine):
    eng = DockerEngine()
    run = f"unroutable-{secrets.token_hex(3)}"
    yield eng, run
    eng.clean(run, images=False)


def _probe(box, addr: str, port: int) -> str:
    return box.exec(["python3", "-c", PROBE, addr, str(port)], timeout=30).output.strip()


def _start(tb, network):
    eng, run = tb
    return eng.start(BoxSpec(IMAGE, {LABEL_RUN: run}, 0.5, 256, 64, network), f"tb-{run}-{secrets.token_hex(3)}")


def _host_addresses() -> list[str]:
    """Every IPv4 address of this host's interfaces (the docker0 bridge's among them)."""
    import fcntl
    import struct

    found = []
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:  # SIOCGIFADDR
                raw = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            found.append(socket.inet_ntoa(raw[20:24]))
    return [a for a in found if not a.startswith("127.")]


def test_a_connect_past_the_sandbox_times_out_where_no_network_refuses_it_at_once(tb):
    unroutable, closed = _start(tb, UNROUTABLE), _start(tb, False)
    try:
        assert _probe(unroutable, "10.255.255.1", 80) == "timeout"
        assert _probe(unroutable, "8.8.8.8", 53) == "timeout"
        assert _probe(closed, "10.255.255.1", 80).startswith("OSError 101")  # ENETUNREACH: the reason for the mode
        # the loopback works as in any sandbox; a name lookup fails (no resolver answers), it does not hang forever
        assert _probe(unroutable, "127.0.0.1", 9).startswith("ConnectionRefusedError")
        lookup = unroutable.exec(["getent", "hosts", "example.com"], timeout=60)
        assert lookup.exit_code != 0 and lookup.output.strip() == ""
    finally:
        unroutable.remove()
        closed.remove()


def test_nothing_is_reachable_through_it_not_the_host_another_sandbox_or_ipv6(tb):
    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    a, b = _start(tb, UNROUTABLE), _start(tb, UNROUTABLE)
    try:
        hosts = _host_addresses()
        assert hosts, "no IPv4 address of the host found"
        for addr in hosts:  # the server answers on each of them from here
            with socket.create_connection((addr, port), timeout=5):
                pass
            assert _probe(a, addr, port) == "timeout", addr
        # b listens; a, on the same network, cannot reach it (enable_icc=false)
        b.exec(["sh", "-c", "nohup python3 -m http.server 8000 >/dev/null 2>&1 &"], timeout=30)
        b_addr = docker.from_env().api.inspect_container(b.id)["NetworkSettings"]["Networks"]
        b_ip = b_addr[sandbox_docker.UNROUTABLE_NETWORK]["IPAddress"]
        assert _probe(b, "127.0.0.1", 8000) in ("connected", "ConnectionRefusedError 111")
        assert _probe(a, b_ip, 8000) == "timeout"
        # no IPv6 address, so no link-local path to the host's bridge
        assert a.exec(["cat", "/proc/net/if_inet6"], timeout=30).output.strip() == ""
    finally:
        server.shutdown()
        a.remove()
        b.remove()


def test_a_network_of_that_name_made_otherwise_is_refused_and_a_backend_without_it_says_so(tb, monkeypatch):
    eng, run = tb
    name = f"tb-not-unroutable-{secrets.token_hex(3)}"
    client = docker.from_env()
    made = client.networks.create(name, driver="bridge")  # not internal: containers on it reach the host
    try:
        monkeypatch.setattr(sandbox_docker, "UNROUTABLE_NETWORK", name)
        fresh = DockerEngine()
        with pytest.raises(ContainerStartError, match=f"network {name} is not internal"):
            fresh.start(BoxSpec(IMAGE, {LABEL_RUN: run}, 0.5, 256, 64, UNROUTABLE), f"tb-{run}-{secrets.token_hex(3)}")
    finally:
        made.remove()
    monkeypatch.setattr(fresh, "capabilities", sandbox_docker.Capabilities())
    with pytest.raises(Unsupported, match="cannot start a sandbox on an unroutable network"):
        fresh.start(BoxSpec(IMAGE, {LABEL_RUN: run}, 0.5, 256, 64, UNROUTABLE), f"tb-{run}-{secrets.token_hex(3)}")


# test.sh's last step: reward 1 only when the tests pass and a connect to 10.255.255.1 timed out (requests' TARPIT)
TARPIT_CHECK = """
probe=$(python3 -c 'import socket
s = socket.socket(); s.settimeout(0.5)
try:
    s.connect(("10.255.255.1", 80)); print("connected")
except socket.timeout:
    print("timeout")
except OSError as exc:
    print(exc)')
echo "tarpit: $probe"
echo 0 > /logs/verifier/reward.txt
[ "$rc" -eq 0 ] && [ "$probe" = timeout ] && echo 1 > /logs/verifier/reward.txt
"""


def test_a_task_declaring_it_is_graded_on_it_and_the_same_task_without_it_is_not(engine, tmp_path, cli, db):
    tasks = tmp_path / "tasks"
    for name, flag in (("tarpit", "unroutable_network = true\n"), ("tarpit-none", "")):
        shutil.copytree(EXAMPLE, tasks / name)
        (tasks / name / "tests" / "config.json").unlink()  # graded by its reward file, which TARPIT_CHECK writes
        test_sh = tasks / name / "tests" / "test.sh"
        test_sh.write_text(test_sh.read_text() + TARPIT_CHECK)
        toml = tasks / name / "task.toml"
        toml.write_text(toml.read_text() + flag)
    res = cli("run", str(tasks), "--agent", "oracle", "--run", "tarpit", "--runs-dir", str(tmp_path / "runs"))
    assert res.exit_code == 0, res.stderr
    got = {t["task_id"]: t for t in trial_dicts(Ledger(db), "tarpit")}
    assert (got["tarpit"]["outcome"], got["tarpit"]["reward"]) == ("resolved", 1.0)
    assert (got["tarpit-none"]["outcome"], got["tarpit-none"]["reward"]) == ("unresolved", 0.0)
    (log,) = (tmp_path / "runs").rglob("*tarpit-none-*/verifier/test-stdout.txt")
    assert "tarpit: [Errno 101] Network is unreachable" in log.read_text()
