"""SWE-bench results files (+ the instances they are over, + optional official harness logs).

Every instance is one trial (attempt 0). Not resolved is `unresolved` (graded), so the resolved
rate equals the published resolved/N; `no_generation` / `no_logs` are kept as exception tags.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.files import json_lines
from trialbook.importers.common import import_run
from trialbook.ledger.store import Ledger, trial_row
from trialbook.names import safe_name
from trialbook.records import Outcome, Run, Task, Trial

TAG_LISTS = ("no_generation", "no_logs")
# `--logs` whose report.json verdicts disagree with the results file on more instances than this are
# refused (they are most likely another system's logs) unless --force.
MAX_DISAGREE = 3
LOG_FILES = ("report.json", "test_output.txt", "patch.diff", "run_instance.log")


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise UserError(f"no such file: {path}")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not valid JSON ({exc})") from None


def _as_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):  # the HF dataset stores these lists as JSON strings
        value = json.loads(value)
    return [str(v) for v in value]


def read_instances(path: Path) -> list[Task]:
    out: list[Task] = []
    for n, obj in json_lines(path, prefix=f"{path}: "):
        try:
            out.append(
                Task(
                    task_id=obj["instance_id"],
                    repo=obj.get("repo"),
                    instruction=obj.get("problem_statement"),
                    fail_to_pass=_as_list(obj.get("FAIL_TO_PASS")),
                    pass_to_pass=_as_list(obj.get("PASS_TO_PASS")),
                    solution=obj.get("patch"),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{path}: line {n}: not a SWE-bench instance ({exc})") from None
    if not out:
        raise UserError(f"no instances in {path}")
    return out


def tests_from_report(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Official report.json `tests_status` -> {"FAIL_TO_PASS": {test: "pass"|"fail"}, ...}."""
    status = report.get("tests_status") or {}
    out: dict[str, dict[str, str]] = {}
    for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        lists = status.get(group) or {}
        tests = {t: "pass" for t in lists.get("success", [])}
        tests.update({t: "fail" for t in lists.get("failure", [])})
        out[group] = tests
    return out


def _logs_for(logs: Path, instance_id: str) -> tuple[dict[str, str], dict[str, dict[str, str]] | None]:
    folder = logs / instance_id
    files = {name: (folder / name).read_text(errors="replace") for name in LOG_FILES if (folder / name).is_file()}
    tests = None
    if "report.json" in files:
        report = json.loads(files["report.json"]).get(instance_id, {})
        tests = tests_from_report(report)
    return files, tests


def disagreements(logs: Path, resolved: set[str], ids: list[str]) -> tuple[list[str], int]:
    """Instances whose report.json verdict differs from the results file, and how many have a report."""
    differ, checked = [], 0
    for instance_id in ids:
        path = logs / instance_id / "report.json"
        if not path.is_file():
            continue
        try:
            verdict = json.loads(path.read_text()).get(instance_id, {}).get("resolved")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            raise UserError(f"{path}: not an official report.json") from None
        if isinstance(verdict, bool):
            checked += 1
            if verdict != (instance_id in resolved):
                differ.append(instance_id)
    return differ, checked


def import_swebench(
    ledger: Ledger,
    results_path: Path,
    instances_path: Path,
    run_name: str | None = None,
    logs: Path | None = None,
    replace: bool = False,
    force: bool = False,
    warnings: list[str] | None = None,
) -> tuple[str, int]:
    """Import the results file as a run; says in `warnings` when attached --logs disagree with it."""
    results = _read_json(results_path)
    if not isinstance(results, dict) or not isinstance(results.get("resolved"), list):
        raise UserError(f"{results_path}: not a SWE-bench results file (needs a 'resolved' list)")
    if logs is not None and not logs.is_dir():
        raise UserError(f"no such logs directory: {logs}")
    instances = read_instances(instances_path)
    known = {t.task_id for t in instances}
    tags = {k: set(results[k]) for k in TAG_LISTS if isinstance(results.get(k), list)}
    resolved = set(results["resolved"])
    for label, ids in [("resolved", resolved), *tags.items()]:
        unknown = sorted(ids - known)
        if unknown:
            raise UserError(
                f"{results_path}: {len(unknown)} {label} ids are not in {instances_path} (first: {unknown[0]})"
            )
    if logs is not None:
        differ, checked = disagreements(logs, resolved, [t.task_id for t in instances])
        if differ:
            said = f"report.json verdicts disagree with {results_path} on {len(differ)} of {checked} instances"
            if len(differ) > MAX_DISAGREE and not force:
                raise UserError(
                    f"--logs {logs}: {said} (first: {differ[0]}); are they another system's logs? --force attaches"
                    " them anyway"
                )
            if warnings is not None:
                first = ", ".join(differ[:3]) + (", ..." if len(differ) > 3 else "")
                warnings.append(f"--logs {logs}: {said} ({first}); attached anyway, the results file decides outcomes")
    name = run_name or safe_name(str(results.get("system") or results_path.stem))
    files_by_task: dict[str, dict[str, str]] = {}

    def rows(run_id: int) -> Iterator[tuple[Any, ...]]:
        for task in instances:
            tag = next((k for k, ids in tags.items() if task.task_id in ids), None)
            tests = None
            if logs is not None:
                files, tests = _logs_for(logs, task.task_id)
                if files:
                    files_by_task[task.task_id] = files
            ok = task.task_id in resolved
            trial = Trial(
                task_id=task.task_id,
                repo=task.repo,
                outcome=Outcome.RESOLVED if ok else Outcome.UNRESOLVED,
                reward=1.0 if ok else 0.0,
                exception=tag,
                tests=tests,
            )
            yield trial_row(run_id, trial)

    def attach(conn: Any, run_id: int) -> None:
        ledger.upsert_tasks(conn, instances)
        ids = ledger.trial_ids(conn, run_id)
        ledger.insert_artifacts(
            conn,
            ((ids[(tid, 0)], fname, text) for tid, files in files_by_task.items() for fname, text in files.items()),
        )

    stack = {"harness": "swebench", "system": results.get("system") or results_path.stem}
    published = results.get("published_pct_resolved")
    run = Run(
        name=name,
        kind="eval",
        source=str(results_path),
        stack=stack,
        labels={"published_pct_resolved": published} if published is not None else {},
    )
    return name, import_run(ledger, run, rows, replace=replace, after=attach)
