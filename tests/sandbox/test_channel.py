"""The command channel (sandbox/channel.py) on the real daemon: commands run through a container's PID 1
instead of `docker exec`, the verifier's run is a fresh container's last process (PID 1 itself) or an exec,
and what a hostile agent does to the
container's own tools (tar, base64) can only cost it the fast path, never let anything past the
re-packing of its working tree (verify/isolation.py)."""

from __future__ import annotations

import io
import secrets
import socket
import tarfile
import tempfile
import time
from pathlib import PurePosixPath

import pytest

from trialbook.sandbox import BoxSpec, DaemonError, DockerEngine
from trialbook.sandbox.docker import LABEL_RUN
from trialbook.verify.isolation import capture

pytestmark = pytest.mark.docker

IMAGE = "trialbook-base:bookworm"


@pytest.fixture()
def tb(engine):
    run = f"channel-{secrets.token_hex(3)}"
    eng = DockerEngine()
    eng.test_run = run  # type: ignore[attr-defined]
    yield eng
    eng.clean(run, images=True)
    assert engine.containers.list(all=True, sparse=True, filters={"label": f"{LABEL_RUN}={run}"}) == []


def start(tb: DockerEngine, image: str = IMAGE, **kw):
    name = f"tb-{tb.test_run}-{secrets.token_hex(3)}"  # type: ignore[attr-defined]
    spec = BoxSpec(image, {LABEL_RUN: tb.test_run}, 1.0, 256, 128, False, **kw)  # type: ignore[attr-defined]
    return tb.start(spec, name)


class ExecCounter:
    """Counts the daemon's exec creations (wraps the client's low-level call)."""

    def __init__(self, tb: DockerEngine) -> None:
        self.n = 0
        api = tb.client.api
        real = api.exec_create

        def counted(*a, **k):
            self.n += 1
            return real(*a, **k)

        api.exec_create = counted


def test_commands_run_through_pid_1_and_keep_env_workdir_and_exit_code(tb):
    box = start(tb, workdir="/tmp", shell_setup="export FROM_SETUP=yes")
    execs = ExecCounter(tb)
    assert box.channel is not None and box.channel.root
    res = box.exec(["bash", "-c", 'echo "$PPID $(pwd) $X $FROM_SETUP"; echo err >&2; exit 7'], timeout=30,
                   env={"X": "it's"}, workdir="/etc")  # fmt: skip
    # the parent is the container's PID 1 (an exec's parent is outside the container: PPID 0)
    assert (res.exit_code, res.output, res.timed_out) == (7, "1 /etc it's yes\nerr\n", False)
    assert box.exec(["printf", "no newline"], timeout=30).output == "no newline"
    assert box.exec(["cat"], timeout=30).output == ""  # stdin is /dev/null, not the channel
    big = box.exec(["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x"], timeout=60)
    assert len(big.output) == 3_000_000 and set(big.output) == {"x"}
    assert execs.n == 0
    # a trusted run (the verifier's, where the container is not fresh) is an exec: its end is the daemon's word
    res = box.exec(["sh", "-c", 'echo "$PPID"'], timeout=30, trusted=True)
    assert (res.output.strip(), execs.n) == ("0", 1)
    box.remove()


def test_a_timed_out_command_is_killed_and_the_channel_still_answers(tb):
    box = start(tb)
    res = box.exec(["sh", "-c", "echo started; sleep 60 & sleep 60"], timeout=1)
    assert res.timed_out and res.exit_code is None and res.output == "started\n" and res.duration_s < 10
    res = box.exec(["sh", "-c", "cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$' || true"], timeout=30)
    assert res.output.strip() == "0"  # both sleeps were killed with the command
    assert box.exec(["echo", "again"], timeout=30).output == "again\n"
    # what a process left running prints between two commands is nobody's output
    box.exec(["sh", "-c", "(sleep 0.3; echo stray) &"], timeout=30)
    box.exec(["sleep", "1"], timeout=30)
    assert box.exec(["echo", "next"], timeout=30).output == "next\n"
    box.remove()


def test_a_killed_container_fails_its_command_as_infrastructure(tb):
    box = start(tb)
    tb.client.api.kill(box.id)  # from outside, as a daemon or host failure would
    with pytest.raises(DaemonError):
        box.exec(["echo", "hi"], timeout=10)
    box.remove()


def tree_of(change) -> dict[str, str]:
    change.tree.seek(0)
    with tarfile.open(fileobj=change.tree) as tar:
        out = {}
        for m in tar.getmembers():
            name = m.name.split("/tree", 1)[1].lstrip("/") if "/tree" in m.name else m.name
            if m.isfile():
                out[name] = tar.extractfile(m).read().decode()
            elif m.issym():
                out[name] = f"-> {m.linkname}"
        return out


def test_the_snapshot_kills_the_agents_processes_and_carries_the_tree(tb):
    box = start(tb, workdir="/work")
    setup = "mkdir -p /work/sub /work/.git && echo a > /work/sub/a.txt && echo g > /work/.git/HEAD"
    ticker = "(while true; do date +%s%N > /work/ticker; sleep 0.05; done) >/dev/null 2>&1 &"
    box.exec(["sh", "-c", f"{setup}; {ticker}"], timeout=30)
    execs = ExecCounter(tb)
    change = capture(box, "/work")
    assert execs.n == 0  # no kill, no copy through the daemon: the channel did it
    files = tree_of(change)
    assert files["sub/a.txt"] == "a\n" and "ticker" in files and ".git/HEAD" not in files
    assert box.running()  # PID 1 still runs; every other process is gone
    tick = 'echo "[$(cat /work/ticker)]"'
    # live processes, by the shell's builtins (a killed child PID 1 has not reaped yet is a zombie, not counted)
    live = ('n=0; for p in /proc/[0-9]*; do s=; read -r s < "$p/stat" 2>/dev/null; '
            'case "$s" in ""|*") Z "*) ;; *) n=$((n + 1)) ;; esac; done; echo $n')  # fmt: skip
    res = box.exec(["sh", "-c", f"{tick}; sleep 0.5; {tick}; {live}"], timeout=30, trusted=True)
    first, second, count = res.output.split()
    assert first == second and int(count) <= 2, res.output  # PID 1 and the exec's shell
    # the container's own tar leaves out the top .git (a real repository's is most of its tree), a nested one not
    box.exec(["sh", "-c", "mkdir -p /work/sub/.git && echo n > /work/sub/.git/HEAD"], timeout=30)
    raw = io.BytesIO()
    assert box.snapshot("/work", raw)
    raw.seek(0)
    with tarfile.open(fileobj=raw) as tar:
        names = {PurePosixPath(m.name).as_posix() for m in tar}
    assert "work/sub/a.txt" in names and "work/sub/.git/HEAD" in names
    assert not any(n == "work/.git" or n.startswith("work/.git/") for n in names), names
    change.tree.close()
    box.remove()


HOSTILE_TAR = r"""
import io, sys, tarfile
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    def add(name, data=b"", kind=tarfile.REGTYPE, link=""):
        i = tarfile.TarInfo(name); i.type = kind; i.linkname = link; i.size = len(data)
        t.addfile(i, io.BytesIO(data) if data else None)
    add("work", kind=tarfile.DIRTYPE)
    add("work/ok.txt", b"ok\n")
    add("work/../../etc/escape", b"x")
    add("work/out", kind=tarfile.SYMTYPE, link="/etc")
    add("work/out/passwd", b"through the link")
    add("work/dev", kind=tarfile.CHRTYPE)
sys.stdout.buffer.write(buf.getvalue())
"""


def test_a_forged_archive_from_the_agents_own_tar_is_repacked_safely(tb):
    box = start(tb, workdir="/work")
    box.exec(["sh", "-c", "mkdir -p /work && echo real > /work/real.txt && cat > /usr/local/bin/forge.py"
              f" <<'PY'\n{HOSTILE_TAR}\nPY\nprintf '#!/bin/sh\\nexec python3 /usr/local/bin/forge.py\\n'"
              " > /bin/tar && chmod +x /bin/tar"], timeout=30)  # fmt: skip
    files = tree_of(capture(box, "/work"))
    # the forged archive is the agent's tree (its to shape, as its files are), minus what leaves the tree,
    # goes through a link of its own or is not a file, folder or link
    assert files == {"ok.txt": "ok\n", "out": "-> /etc"}
    box.remove()


def test_a_broken_tar_in_the_agents_container_falls_back_to_the_daemons_copy(tb):
    box = start(tb, workdir="/work")
    box.exec(["sh", "-c", "mkdir -p /work && echo real > /work/real.txt"
              " && printf '#!/bin/sh\\necho garbage\\n' > /bin/tar && chmod +x /bin/tar"], timeout=30)  # fmt: skip
    files = tree_of(capture(box, "/work"))
    assert files == {"real.txt": "real\n"}  # killed and exported through the daemon, as without a channel
    assert not box.running()
    box.remove()


def one_file(name: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = 3
        tar.addfile(info, io.BytesIO(b"hi\n"))
    return buf.getvalue()


def test_an_endless_archive_is_cut_and_the_daemons_copy_decides(tb, monkeypatch):
    import trialbook.sandbox.box as box_module

    monkeypatch.setattr(box_module, "SNAPSHOT_LIMIT", 1_000_000)
    box = start(tb, workdir="/work")
    endless = "printf '#!/bin/sh\\nexec cat /dev/zero\\n' > /bin/tar && chmod +x /bin/tar"
    box.exec(["sh", "-c", f"mkdir -p /work && echo real > /work/real.txt && {endless}"], timeout=30)
    files = tree_of(capture(box, "/work"))
    assert files == {"real.txt": "real\n"} and not box.running()
    box.remove()


def test_small_archives_go_in_through_the_channel_and_others_through_the_daemon(tb):
    box = start(tb)
    execs = ExecCounter(tb)
    box.put_tar("/", one_file("in/hello.txt"))
    with tempfile.TemporaryFile() as big:
        with tarfile.open(fileobj=big, mode="w") as tar:
            data = secrets.token_bytes(200_000)  # incompressible, over INLINE_TAR
            info = tarfile.TarInfo("in/big.bin")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        big.seek(0)
        box.put_tar("/", big)
    res = box.exec(["sh", "-c", "cat /in/hello.txt; wc -c < /in/big.bin"], timeout=30)
    assert res.output.split() == ["hi", "200000"] and execs.n == 0
    # an image without base64: the small archive goes through the daemon too
    box.exec(["sh", "-c", "rm -f $(command -v base64)"], timeout=30)
    box.put_tar("/", one_file("in/again.txt"))
    assert box.exec(["cat", "/in/again.txt"], timeout=30).output == "hi\n"
    box.remove()


def test_the_start_up_request_finds_the_tools_an_inline_archive_needs(tb, tmp_path):
    box = start(tb)
    execs = ExecCounter(tb)
    assert box.channel is not None and box.channel.tools
    unpack = box.inline_unpack(one_file("in/hello.txt"))
    assert unpack is not None
    res = box.run_script(unpack + "cat /in/hello.txt; echo $PPID", timeout=30)
    # the harness's script ran in PID 1's own subshell ($PPID is PID 1's parent, outside the namespace: 0), no exec
    assert (res.exit_code, res.output.split(), execs.n) == (0, ["hi", "0"], 0)
    box.remove()
    # without base64 in the image, plain files are still written by the shell's builtins, but nothing else is
    # unpacked inline in a request that cannot fall back (the verifier's last process): the caller copies it first
    (tmp_path / "Dockerfile").write_text(f"FROM {IMAGE}\nRUN rm -f /usr/bin/base64\n")
    image, _ = tb.ensure_image("nob64", None, tmp_path, secrets.token_hex(6), tb.test_run, False)  # type: ignore[attr-defined]
    box = start(tb, image=image)
    assert box.channel is not None and not box.channel.tools
    res = box.run_script(str(box.inline_unpack(one_file("in/x.txt"))) + "cat /in/x.txt", timeout=30)
    assert (res.exit_code, res.output) == (0, "hi\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("in/link")
        info.type, info.linkname = tarfile.SYMTYPE, "x.txt"
        tar.addfile(info)
    assert box.inline_unpack(buf.getvalue()) is None
    box.put_tar("/", buf.getvalue())
    assert box.run_script("cat /in/link", timeout=30).output == "hi\n"
    box.remove()


def test_an_image_with_a_non_root_user_keeps_root_commands_on_execs(tb, tmp_path):
    (tmp_path / "Dockerfile").write_text(f"FROM {IMAGE}\nUSER nobody\nWORKDIR /tmp\n")
    image, _ = tb.ensure_image("nonroot", None, tmp_path, secrets.token_hex(6), tb.test_run, False)  # type: ignore[attr-defined]
    box = start(tb, image=image, shell_setup="export FROM_SETUP=yes")
    execs = ExecCounter(tb)
    assert box.channel is not None and not box.channel.root
    res = box.exec(["bash", "-c", 'echo "$(id -un) $PPID $FROM_SETUP"; cat /etc/hosts'], timeout=30)
    assert res.output.split()[:3] == ["nobody", "1", "yes"] and "127.0.0.1" in res.output and execs.n == 0
    res = box.exec(["sh", "-c", 'echo "$(id -un) $PPID"'], timeout=30, user="root")
    assert (res.output.split(), execs.n) == (["root", "0"], 1)
    box.remove()


def test_a_request_cut_short_by_the_harnesss_end_is_never_run(tb):
    box = start(tb)
    box.channel.sock.sendall(b"x n0nce\ntouch /tmp/half-sent\n")  # no terminating NONCE line: the harness died
    box.channel.sock.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + 30
    while box.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not box.running()  # the server read the end of its stdin and stopped, its container with it
    assert box.read_file("/tmp/half-sent") is None
    box.remove()


def test_a_container_whose_channel_ends_stops_by_itself(tb):
    box = start(tb)
    assert box.exec(["true"], timeout=30).exit_code == 0
    api = tb.client.api
    tb.forget(box.id)  # what removing it does first: the server reads the end of its stdin and exits
    # PID 1 ended by itself, with success (closing the socket alone left it running: the SDK still holds it)
    assert api.wait(box.id, timeout=30)["StatusCode"] == 0
    tb._remove_container(box.id)  # the warm pool's removal finds it stopped: nothing to kill
    assert api.containers(all=True, filters={"id": box.id}) == []


def test_the_last_process_is_pid_1_unkillable_from_inside_and_its_exit_code_is_the_daemons(tb):
    box = start(tb)
    execs = ExecCounter(tb)
    with tempfile.TemporaryFile() as sink:
        script = "echo pid $$; sh -c 'kill -9 1; kill -TERM 1'; sleep 0.3; echo alive; exit 3"  # a child kills
        res = box.finish(script, timeout=30, sink=sink)
        sink.seek(0)
        assert sink.read().decode() == res.output
    # the script was PID 1, survived every signal sent from inside, and its exit code is the container's
    assert (res.output, res.exit_code, res.timed_out) == ("pid 1\nalive\n", 3, False)
    assert tb.client.api.inspect_container(box.id)["State"]["ExitCode"] == 3
    assert not box.running() and box.channel is None and execs.n == 0
    box.remove()


def test_a_last_process_past_its_timeout_stops_with_its_container(tb):
    box = start(tb)
    t = time.monotonic()
    res = box.finish("echo started; sleep 120", timeout=1)
    assert res.timed_out and res.exit_code is None and res.output == "started\n"
    assert time.monotonic() - t < 20 and not box.running()
    box.remove()


def test_the_limit_counters_a_last_process_reports_are_read_after_its_container_is_gone(tb):
    from trialbook.sandbox.cgroup import report_script

    box = start(tb)  # pids_limit 128: a child's 200 sleeps hit it (its shell gives up at the first failed fork)
    bomb = "sh -c 'i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done' 2>/dev/null"
    script = f"{bomb}; kill -9 -1; wait; " + report_script()
    res = box.finish(script, timeout=60)
    assert res.exit_code == 0 and "pids_limit_hits" in res.output
    box.report_limits(res.output)
    assert not box.running()
    assert box.limit_hits().get("pids_limit_hits", 0) > 0
    box.remove()
