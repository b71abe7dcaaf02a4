"""`train export --to wandb|mlflow` and `compare ... --export wandb|mlflow`: where RL teams already look.

A train run goes out as one tracking run: per optimizer step its logged metrics (raw_reward, entropy, ...),
its wait (`step_wait_s`, with `step_slow` 0/1 from the stall rule as the step arrived), the trajectories it
trained, their pass rate and their staleness (mean and max of step - 1 - wv); the alerts `train watch`
raises on the run as it stands (a W&B Table / an MLflow JSON artifact). A comparison goes out as its paired
table (one row per candidate and subset), with each candidate's paired difference as a metric.

W&B runs in offline mode unless WANDB_MODE says otherwise (files under `--out`, else WANDB_DIR: never the working
directory unasked; `wandb sync` uploads them). MLflow goes to `--tracking-uri` or MLFLOW_TRACKING_URI: a server
(`http(s)://`), a database (`sqlite:///FILE`, its artifacts in `mlartifacts/` beside the file) or, where MLflow still
takes one, a folder (`file:`; MLflow 3 refuses it unless MLFLOW_ALLOW_FILE_STORE=true: one line says so). Both
libraries are optional extras (`wandb`, `mlflow`), each found before it is imported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trialbook.errors import UserError
from trialbook.ledger.store import Ledger
from trialbook.result_types import Result

if TYPE_CHECKING:
    from trialbook.stats.comparison import CompareResult

TARGETS = ("wandb", "mlflow")
PAIRED_COLUMNS = ["candidate", "subset", "tasks_paired", "base_pct", "cand_pct", "diff_pp", "ci_low_pp", "ci_high_pp",
                  "wins", "losses", "ties", "p_value", "claim"]  # fmt: skip
ALERT_COLUMNS = ["rule", "step", "message"]


@dataclass(frozen=True, kw_only=True)
class Exported(Result):
    target: str
    run: str  # the tracking run's id (W&B run id / MLflow run id)
    where: str  # the offline directory or the tracking URI
    steps: int
    alerts: int


def train_series(ledger: Ledger, run_name: str) -> tuple[list[dict[str, float]], list[list[Any]], dict[str, Any]]:
    """(one dict of metrics per step, the alert rows, the run's config) of a train run."""
    from trialbook.training.live import online_waits
    from trialbook.training.load import load_trajectories
    from trialbook.training.stalls import boundary_steps
    from trialbook.training.watch import Watcher

    run = ledger.get_run(run_name)
    w = Watcher(ledger, run_name)
    w.refresh()
    from trialbook.training.ingest import load_steps

    steps = load_steps(ledger, run.id)
    if not steps:
        raise UserError(f"run '{run_name}' has no optimizer steps to export (`import steps`)")
    data = load_trajectories(ledger, run.id)
    waits = {x.step: x for x in online_waits(steps, boundary_steps(data))[0]}
    rows = []
    for s in steps:
        m = (data.step == s["step"]) & (data.wv >= 0)
        row: dict[str, float] = {k: float(v) for k, v in (s["metrics"] or {}).items()}
        sw = waits.get(s["step"])
        if sw is not None and sw.wait_s is not None:
            row["step_wait_s"] = sw.wait_s
            row["step_slow"] = float(sw.slow)
        n = data.count(m)
        if n:
            lag = data.step[m] - 1 - data.wv[m]
            judged = data.count(m & data.graded)
            row["trajectories"] = float(n)
            row["staleness_mean"] = round(float(np.average(lag, weights=data.n[m])), 4)
            row["staleness_max"] = float(lag.max())
            if judged:
                row["pass_pct"] = round(100 * data.score(m & data.graded) / judged, 4)
        rows.append({"step": float(s["step"]), **row})
    alerts = [[a.rule, a.step, a.message] for a in w.raised]
    return rows, alerts, run.config


def paired_rows(res: CompareResult) -> list[list[Any]]:
    return [
        [c.candidate, c.subset, c.tasks_paired, c.base_pct, c.cand_pct, c.diff_pp,
         c.ci_pp[0] if c.ci_pp else None, c.ci_pp[1] if c.ci_pp else None, c.wins, c.losses, c.ties, c.p_value,
         c.claim]
        for c in res.comparisons
    ]  # fmt: skip


def _need(module: str, extra: str) -> Any:
    """The library, imported; or one line naming the extra (call it before any other import of the library)."""
    try:
        return __import__(module)
    except ImportError:
        raise UserError(f"exporting to {extra} needs the '{extra}' extra: pip install 'trialbook[{extra}]'") from None


def has_extra(target: str) -> None:
    """The target's library is installed (found, not imported: W&B's import takes seconds), else the one line."""
    import importlib.util

    if importlib.util.find_spec(target) is None:
        raise UserError(f"exporting to {target} needs the '{target}' extra: pip install 'trialbook[{target}]'")


def check_target(target: str) -> str:
    if target not in TARGETS:
        raise UserError(f"--to/--export must be one of {', '.join(TARGETS)}, not {target!r}")
    has_extra(target)
    return target


def _quiet(fn: Any) -> Any:
    """Run an exporter with the library's own prints (MLflow's "View run ... at") sent to stderr: stdout stays
    clean for --json."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        import contextlib
        import sys

        with contextlib.redirect_stdout(sys.stderr):
            return fn(*args, **kwargs)

    wrapped.__doc__ = fn.__doc__
    return wrapped


# ---- W&B -----------------------------------------------------------------------------------------


def _wandb_run(name: str, directory: Path, project: str, config: dict[str, Any]) -> Any:
    os.environ.setdefault("WANDB_SILENT", "true")
    wandb = _need("wandb", "wandb")
    directory.mkdir(parents=True, exist_ok=True)
    mode = os.environ.get("WANDB_MODE") or "offline"
    return wandb.init(project=project, name=name, dir=str(directory), mode=mode, config=config, reinit="create_new")


def _finish(run: Any) -> None:
    """End the run and stop wandb's service: only then is the offline transaction log complete on disk."""
    import wandb

    run.finish()
    wandb.teardown()


@_quiet
def train_to_wandb(ledger: Ledger, run_name: str, directory: Path, project: str = "trialbook") -> Exported:
    rows, alerts, config = train_series(ledger, run_name)
    wandb = _need("wandb", "wandb")

    run = _wandb_run(run_name, directory, project, {"trialbook_run": run_name, **config})
    try:
        for row in rows:
            step = int(row["step"])
            run.log({k: v for k, v in row.items() if k != "step"}, step=step)
        run.log({"alerts": wandb.Table(columns=ALERT_COLUMNS, data=alerts)})
        run.summary["alerts_raised"] = len(alerts)
        return Exported(target="wandb", run=run.id, where=str(Path(run.dir).parent), steps=len(rows),
                        alerts=len(alerts))  # fmt: skip
    finally:
        _finish(run)


@_quiet
def compare_to_wandb(res: CompareResult, directory: Path, project: str = "trialbook") -> Exported:
    wandb = _need("wandb", "wandb")

    name = f"compare {res.baseline} vs {', '.join(sorted({c.candidate for c in res.comparisons}))}"
    run = _wandb_run(name, directory, project, {"baseline": res.baseline, "metric": res.metric,
                                                "min_diff_pp": res.min_diff_pp})  # fmt: skip
    try:
        run.log({"paired": wandb.Table(columns=PAIRED_COLUMNS, data=paired_rows(res))})
        for c in res.comparisons:
            if c.subset == "all" and c.diff_pp is not None:
                run.summary[f"diff_pp/{c.candidate}"] = c.diff_pp
        return Exported(target="wandb", run=run.id, where=str(Path(run.dir).parent), steps=0, alerts=0)
    finally:
        _finish(run)


# ---- MLflow --------------------------------------------------------------------------------------


SCHEMES = ("http", "https", "sqlite", "postgresql", "mysql", "mssql", "file", "databricks")  # MLflow's stores


def _mlflow_client(tracking_uri: str | None, experiment: str) -> tuple[Any, str, str]:
    _need("mlflow", "mlflow")
    from mlflow.tracking import MlflowClient

    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise UserError("no MLflow tracking server: give --tracking-uri or set MLFLOW_TRACKING_URI")
    scheme = uri.partition(":")[0].partition("+")[0].lower() if ":" in uri else "file"
    if scheme not in SCHEMES:
        raise UserError(f"MLflow tracking URI {uri}: MLflow stores runs at {', '.join(s + ':' for s in SCHEMES)}")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # an unreachable server: one line now, not minutes
    try:
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(experiment)
        exp_id = found.experiment_id if found is not None else client.create_experiment(experiment, _artifacts(uri))
    except Exception as exc:  # noqa: BLE001 - any store error (unreachable, unsupported scheme, missing package): one line
        if "MLFLOW_ALLOW_FILE_STORE" in str(exc):
            raise UserError(
                f"MLflow tracking URI {uri}: this MLflow no longer writes to a folder (its file store): give "
                "sqlite:///PATH/mlflow.db or a server's http:// URL (or set MLFLOW_ALLOW_FILE_STORE=true)"
            ) from None
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise UserError(f"MLflow tracking URI {uri}: {type(exc).__name__}: {first}") from None
    return client, exp_id, uri


def _artifacts(uri: str) -> str | None:
    """A new experiment's artifact folder for a SQLite store: `mlartifacts/` beside the database (MLflow's default,
    `./mlruns`, is a folder in whatever directory the command ran in); a server or folder store chooses its own."""
    if not uri.startswith("sqlite:///"):
        return None
    path = Path(uri.removeprefix("sqlite:///").partition("?")[0])
    return (path.resolve().parent / "mlartifacts").as_uri() if path.name else None


@_quiet
def train_to_mlflow(ledger: Ledger, run_name: str, tracking_uri: str | None, experiment: str = "trialbook") -> Exported:
    _need("mlflow", "mlflow")
    from mlflow.entities import Metric, Param

    client, exp_id, uri = _mlflow_client(tracking_uri, experiment)  # no server: one line before any work
    rows, alerts, config = train_series(ledger, run_name)
    run = client.create_run(exp_id, run_name=run_name, tags={"trialbook.run": run_name, "trialbook.kind": "train"})
    rid = run.info.run_id
    try:
        metrics = [Metric(k, v, 0, int(row["step"])) for row in rows for k, v in row.items() if k != "step"]
        for start in range(0, len(metrics), 1000):  # the server's batch limit
            client.log_batch(rid, metrics=metrics[start : start + 1000])
        client.log_batch(rid, params=[Param(k, str(v)) for k, v in list(config.items())[:100]])
        client.log_dict(rid, {"columns": ALERT_COLUMNS, "data": alerts}, "alerts.json")
        client.set_terminated(rid)
    except Exception:
        client.set_terminated(rid, status="FAILED")
        raise
    return Exported(target="mlflow", run=rid, where=uri, steps=len(rows), alerts=len(alerts))


@_quiet
def compare_to_mlflow(res: CompareResult, tracking_uri: str | None, experiment: str = "trialbook") -> Exported:
    _need("mlflow", "mlflow")
    from mlflow.entities import Metric

    client, exp_id, uri = _mlflow_client(tracking_uri, experiment)
    run = client.create_run(exp_id, run_name=f"compare {res.baseline}",
                            tags={"trialbook.baseline": res.baseline, "trialbook.kind": "compare"})  # fmt: skip
    rid = run.info.run_id
    rows = paired_rows(res)
    client.log_dict(rid, {"columns": PAIRED_COLUMNS, "data": rows}, "paired_table.json")
    metrics = [Metric(f"diff_pp.{c.candidate}", c.diff_pp, 0, 0) for c in res.comparisons
               if c.subset == "all" and c.diff_pp is not None]  # fmt: skip
    if metrics:
        client.log_batch(rid, metrics=metrics)
    client.set_terminated(rid)
    return Exported(target="mlflow", run=rid, where=uri, steps=0, alerts=0)


def wandb_dir(out: Path | None) -> Path:
    """Where a W&B run goes: `--out`, else WANDB_DIR; asked for, so nothing lands in the working directory unasked."""
    given = out or (Path(os.environ["WANDB_DIR"]) if os.environ.get("WANDB_DIR") else None)
    if given is None:
        raise UserError("exporting to wandb writes an offline run: give --out DIR (or set WANDB_DIR)")
    return given


def export_compare(res: CompareResult, target: str, out_dir: Path | None = None) -> Exported:
    """`compare --export`: W&B offline under `out_dir` (or WANDB_DIR), MLflow at MLFLOW_TRACKING_URI."""
    import sys

    check_target(target)
    out: Exported = compare_to_wandb(res, wandb_dir(out_dir)) if target == "wandb" else compare_to_mlflow(res, None)
    print(f"exported the paired table to {out.target} run {out.run} at {out.where}", file=sys.stderr)
    return out
