"""`train watch` on a run being written while it watches: `sim replay` writes a simulated log (the seed's shape:
B=16 tasks x G=8, staleness 3, an epoch-boundary stall of 4500 s against ~600 s steps) step by step in scaled
real time; watch, a separate process, raises the drain alert within one step of the stall's start and POSTs
it to a webhook (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from httpd import LocalServer
from trialbook.importers.replay import replay
from trialbook.ledger.store import Ledger
from trialbook.records import Run
from trialbook.training.sim_rollouts import RolloutConfig, generate

CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]


def test_watch_raises_the_drain_within_one_step_and_posts_it(tmp_path: Path) -> None:
    roll, steps, db = tmp_path / "roll.jsonl", tmp_path / "steps.jsonl", str(tmp_path / "live.db")
    truth = generate(RolloutConfig(pool=64, epochs=2, incomplete=16), roll, steps)
    (stall,) = truth.stall_steps  # 4 steps per pass: step 5 waits for the refill
    posted: list[dict] = []

    def respond(method: str, path: str, body: bytes) -> tuple[int, bytes]:
        posted.append({"method": method, "path": path, **json.loads(body)})
        return 200, b"{}"

    hook = LocalServer(respond)
    ledger = Ledger(db)
    with ledger.transaction() as conn:  # the trainer has started its run: nothing logged yet
        ledger.create_run(conn, Run(name="live", kind="train", config={"staleness": 3}))
    watch = subprocess.Popen([*CLI, "train", "watch", "live", "--until", "epoch_boundary_drain", "--interval", "0.05",
                              "--timeout", "60", "--webhook", hook.url + "/alerts", "--db", db],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline()  # watch is up and has read the empty run
        assert first.startswith("run live: step -"), first
        # 2000x: a 600 s step takes 0.3 s, the 4500 s stall 2.25 s
        writer = threading.Thread(target=replay, args=(ledger, roll, steps, "live", 2000.0), kwargs={"create": False})
        writer.start()
        out, err = watch.communicate(timeout=90)
        writer.join(timeout=60)
        assert watch.returncode == 0, err
        assert f"ALERT epoch_boundary_drain: epoch-boundary drain: step {stall} has waited" in out
        sent = [p for p in posted if p["rule"] == "epoch_boundary_drain"]
        assert len(sent) == 1 and sent[0]["method"] == "POST" and sent[0]["path"] == "/v1/alerts"
        d = sent[0]
        assert d["run"] == "live" and d["details"]["stalled_step"] == stall
        # within one step of the stall's start: raised while the stalled step still waited (the trainer at the
        # step before it), or at the latest on the refresh that saw it arrive
        assert stall - 1 <= d["step"] <= stall
        assert d["details"]["in_progress"] is (d["step"] == stall - 1)
        assert d["details"]["prefetch"]["saved_s_per_boundary"] > 0  # the simulator's estimate rides along
        assert "cross-epoch prefetch would save" in d["message"]
    finally:
        if watch.poll() is None:
            watch.kill()
        hook.close()


def test_watch_once_on_a_finished_run_and_bad_input(cli, tmp_path: Path) -> None:
    roll, steps = tmp_path / "roll.jsonl", tmp_path / "steps.jsonl"
    generate(RolloutConfig(pool=64, epochs=3, incomplete=16), roll, steps)
    assert cli("import", "jsonl", str(roll), "--run", "done", "--kind", "train").exit_code == 0
    assert cli("import", "steps", str(steps), "--run", "done").exit_code == 0
    res = cli("train", "watch", "done", "--once", "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    drains = sorted(a["details"]["stalled_step"] for a in out["alerts"] if a["rule"] == "epoch_boundary_drain")
    assert drains == [5, 9]  # both boundaries; the cut-off trajectories after the last step are no third one
    assert out["state"]["waiting"] is None and out["state"]["current_step"] == 12
    human = cli("train", "watch", "done", "--once").stdout
    assert "SLOW (epoch boundary)" in human and "ALERT epoch_boundary_drain" in human
    assert cli("train", "watch", "nope", "--once").exit_code == 2
    assert cli("train", "watch", "done", "--until", "nothing", "--timeout", "1").exit_code == 2
    assert cli("train", "watch", "done", "--once", "--webhook", "ftp://x").exit_code == 2
    # a webhook nobody listens on: a warning, the watch goes on
    res = cli("train", "watch", "done", "--once", "--webhook", "http://127.0.0.1:9/x")
    assert res.exit_code == 0 and "warning: webhook" in res.stderr
