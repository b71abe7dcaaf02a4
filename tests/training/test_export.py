"""`train export` and `compare --export`: a simulated train run and a comparison sent to W&B (offline mode) and
to a real MLflow tracking server on 127.0.0.1, then read back with each library's own formats and client: W&B's
transaction log decoded with its protobuf `Record` (wandb_internal_pb2) and its Table files, MLflow through
MlflowClient (metric history, artifacts)."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from trialbook.training.sim_rollouts import RolloutConfig, generate


def wandb_records(path: Path) -> Iterator[object]:
    """The records of a .wandb transaction log: a 7-byte header (':W&B', magic, version), then LevelDB-log
    framing (32 KiB blocks of records with a 7-byte header: crc32c, length, type) around protobuf Records."""
    from wandb.proto import wandb_internal_pb2 as pb

    raw = path.read_bytes()
    assert raw[:4] == b":W&B"
    pos, block, pending = 7, 32768, b""
    while pos + 7 <= len(raw):
        left = block - pos % block
        if left < 7:  # the rest of a block too short for a header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", raw[pos : pos + 7])
        data = raw[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 0 and length == 0:
            break
        pending = data if kind in (1, 2) else pending + data
        if kind in (1, 4):  # FULL or LAST
            record = pb.Record()
            record.ParseFromString(pending)
            yield record


def _history(path: Path) -> dict[int, dict[str, object]]:
    out = {}
    for r in wandb_records(path):
        if r.WhichOneof("record_type") == "history":  # type: ignore[attr-defined]
            items = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item}  # type: ignore[attr-defined]
            if "_step" in items:
                out[int(items["_step"])] = items
    return out


@pytest.fixture
def train_db(cli, tmp_path: Path) -> tuple[Path, list[int]]:
    roll, steps = tmp_path / "roll.jsonl", tmp_path / "steps.jsonl"
    truth = generate(RolloutConfig(pool=64, epochs=2, incomplete=16), roll, steps)
    assert cli("import", "jsonl", str(roll), "--run", "train-a", "--kind", "train").exit_code == 0
    assert cli("import", "steps", str(steps), "--run", "train-a").exit_code == 0
    return steps, truth.stall_steps


def _eval_runs(cli, tmp: Path) -> None:
    for name, solved in (("base", range(0, 30)), ("cand", range(5, 40))):
        lines = [{"task_id": f"django__django-{i}", "resolved": i in solved} for i in range(50)]
        f = tmp / f"{name}.jsonl"
        f.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
        assert cli("import", "jsonl", str(f), "--run", name).exit_code == 0


def test_wandb_offline_holds_the_train_run_and_the_paired_table(cli, train_db, tmp_path: Path, monkeypatch) -> None:
    steps_file, (stall,) = train_db
    out = tmp_path / "wb"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # W&B writes where asked: nothing in the working directory
    monkeypatch.delenv("WANDB_DIR", raising=False)
    res = cli("train", "export", "train-a", "--to", "wandb", "--json")
    assert res.exit_code == 2
    assert res.stderr == "error: exporting to wandb writes an offline run: give --out DIR (or set WANDB_DIR)\n"
    res = cli("train", "export", "train-a", "--to", "wandb", "--dir", str(out), "--json")
    assert res.exit_code == 0, res.stderr
    exported = json.loads(res.stdout)
    (log,) = Path(exported["where"]).glob("*.wandb")
    history = _history(log)
    logged = [json.loads(x) for x in steps_file.read_text().splitlines()]
    assert sorted(history) == [s["step"] for s in logged]
    for s in logged:
        assert history[s["step"]]["raw_reward"] == s["raw_reward"] and history[s["step"]]["kl"] == s["kl"]
    assert history[stall]["step_wait_s"] == 4500.0 and history[stall]["step_slow"] == 1.0
    assert history[stall - 1]["step_slow"] == 0.0
    assert history[2]["staleness_max"] <= 3 and history[2]["trajectories"] == 128.0
    (alerts_file,) = (Path(exported["where"]) / "files" / "media" / "table").glob("alerts_*.table.json")
    table = json.loads(alerts_file.read_text())
    assert table["columns"] == ["rule", "step", "message"]
    assert any(row[0] == "epoch_boundary_drain" and f"step {stall}" in row[2] for row in table["data"])

    _eval_runs(cli, tmp_path)
    res = cli("compare", "base", "cand", "--export", "wandb")
    assert res.exit_code == 2 and "give --out DIR" in res.stderr and res.stdout == ""  # refused before the comparison
    for how, where in (("--out", tmp_path / "wb-compare"), ("WANDB_DIR", tmp_path / "wb-env")):
        if how == "WANDB_DIR":
            monkeypatch.setenv("WANDB_DIR", str(where))
        res = cli("compare", "base", "cand", "--export", "wandb", "--json", *(["--out", str(where)] if how == "--out"
                  else []))  # fmt: skip
        assert res.exit_code == 0, res.stderr
        diff = json.loads(res.stdout)["comparisons"][0]["diff_pp"]
        (paired,) = where.glob("wandb/offline-run-*/files/media/table/paired_*.table.json")
        table = json.loads(paired.read_text())
        assert table["columns"][:6] == ["candidate", "subset", "tasks_paired", "base_pct", "cand_pct", "diff_pp"]
        assert table["data"][0][:3] == ["cand", "all", 50] and table["data"][0][5] == diff == 10.0
    assert list(cwd.iterdir()) == []
    res = cli("compare", "base", "cand", "--out", str(out))
    assert res.exit_code == 2 and res.stderr == "error: --out goes with --export wandb\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{folder}/mlflow.db", "--artifacts-destination", str(folder / "art")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=folder,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},  # mlflow imports litellm: no network fetch
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # its start-up imports take 10-120 s on a loaded 2-core machine
            try:
                with urllib.request.urlopen(url + "/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"mlflow server exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
                time.sleep(0.5)
        else:
            pytest.fail("mlflow server did not answer /health in 300 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def test_mlflow_server_holds_the_train_run_and_the_paired_table(cli, train_db, tmp_path, mlflow_server, monkeypatch):
    from mlflow.tracking import MlflowClient

    steps_file, (stall,) = train_db
    res = cli("train", "export", "train-a", "--to", "mlflow", "--tracking-uri", mlflow_server, "--json")
    assert res.exit_code == 0, res.stderr
    rid = json.loads(res.stdout)["run"]
    client = MlflowClient(tracking_uri=mlflow_server)
    run = client.get_run(rid)
    assert run.info.status == "FINISHED" and run.data.tags["trialbook.run"] == "train-a"
    logged = [json.loads(x) for x in steps_file.read_text().splitlines()]
    reward = {m.step: m.value for m in client.get_metric_history(rid, "raw_reward")}
    assert reward == {s["step"]: s["raw_reward"] for s in logged}
    waits = {m.step: m.value for m in client.get_metric_history(rid, "step_wait_s")}
    assert waits[stall] == 4500.0
    assert {m.step: m.value for m in client.get_metric_history(rid, "step_slow")}[stall] == 1.0
    assert max(m.value for m in client.get_metric_history(rid, "staleness_max")) <= 3
    alerts = json.loads(Path(client.download_artifacts(rid, "alerts.json", str(tmp_path))).read_text())
    assert any(row[0] == "epoch_boundary_drain" for row in alerts["data"])

    _eval_runs(cli, tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    assert cli("compare", "base", "cand", "--export", "mlflow").exit_code == 0
    exp = client.get_experiment_by_name("trialbook")
    (cmp_run,) = client.search_runs([exp.experiment_id], "tags.`trialbook.kind` = 'compare'")
    got = client.download_artifacts(cmp_run.info.run_id, "paired_table.json", str(tmp_path))
    table = json.loads(Path(got).read_text())
    assert table["data"][0][:3] == ["cand", "all", 50] and table["data"][0][5] == 10.0
    assert cmp_run.data.metrics["diff_pp.cand"] == 10.0


def test_export_bad_input(cli, train_db, monkeypatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert cli("train", "export", "train-a", "--to", "tensorboard").exit_code == 2
    assert cli("compare", "a", "b", "--export", "nowhere").exit_code == 2
    res = cli("train", "export", "train-a", "--to", "mlflow")  # no --tracking-uri, no MLFLOW_TRACKING_URI
    assert res.exit_code == 2 and "MLFLOW_TRACKING_URI" in res.stderr


def test_each_export_without_its_extra_is_one_line(cli, train_db, db: str, tmp_path: Path) -> None:
    """As without the extras installed (the modules marked missing): one line naming the extra, exit 2, no traceback,
    and no wandb-export/ folder left behind."""
    _eval_runs(cli, tmp_path)
    code = "import sys; sys.modules['wandb'] = sys.modules['mlflow'] = None; from trialbook.cli import main; main()"
    for args in (["train", "export", "train-a", "--to", "wandb"], ["train", "export", "train-a", "--to", "mlflow",
                 "--tracking-uri", "file:///tmp/x"], ["compare", "base", "cand", "--export", "wandb"],
                 ["compare", "base", "cand", "--export", "mlflow"]):  # fmt: skip
        res = subprocess.run([sys.executable, "-c", code, *args, "--db", db], capture_output=True, text=True,
                             cwd=tmp_path)  # fmt: skip
        target = args[args.index("--to") + 1] if "--to" in args else args[-1]
        assert res.returncode == 2, (args, res.stderr)
        assert (
            res.stderr
            == f"error: exporting to {target} needs the '{target}' extra: pip install 'trialbook[{target}]'\n"
        )
    assert not (tmp_path / "wandb-export").exists()


def test_mlflow_sqlite_store_works_and_keeps_its_artifacts_beside_the_database(cli, train_db, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    uri = f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}"
    (tmp_path / "ml").mkdir()
    _eval_runs(cli, tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    res = cli("compare", "base", "cand", "--export", "mlflow")
    assert res.exit_code == 0, res.stderr
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("trialbook")
    assert exp.artifact_location == (tmp_path / "ml" / "mlartifacts").as_uri()
    (run,) = client.search_runs([exp.experiment_id])
    assert run.data.metrics["diff_pp.cand"] == 10.0
    assert list((tmp_path / "ml" / "mlartifacts").rglob("paired_table.json"))
    assert list(cwd.iterdir()) == []  # MLflow's default ./mlruns is not made here


def test_mlflow_folder_and_unknown_uris_are_one_line(cli, train_db, tmp_path, monkeypatch) -> None:
    pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    for uri, says in ((f"file://{tmp_path / 'mlruns'}", "give sqlite:///PATH/mlflow.db or a server's http:// URL"),
                      ("ftp://example/x", "MLflow stores runs at http:, https:, sqlite:")):  # fmt: skip
        res = cli("train", "export", "train-a", "--to", "mlflow", "--tracking-uri", uri)
        assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.stderr
        assert res.stderr.startswith(f"error: MLflow tracking URI {uri}: ") and says in res.stderr, res.stderr


def test_an_mlflow_server_that_does_not_answer_is_one_line(cli, train_db, monkeypatch) -> None:
    pytest.importorskip("mlflow")
    from trialbook.agents.llama import free_port

    res = cli("train", "export", "train-a", "--to", "mlflow", "--tracking-uri", f"http://127.0.0.1:{free_port()}")
    assert res.exit_code == 2 and res.stderr.startswith("error: MLflow tracking URI http://127.0.0.1:")
    assert res.stderr.count("\n") == 1
