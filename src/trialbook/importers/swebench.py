"""SWE-bench results: leaderboard files, the harness's own run report, its log folders.

Every instance is one trial (attempt 0). In a leaderboard file not resolved is `unresolved` (graded),
so the resolved rate equals the published resolved/N; `no_generation` / `no_logs` are kept as exception
tags. The harness's report and logs (swebench_harness.py) map each of their id lists to an outcome.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.files import json_lines
from trialbook.importers import swebench_harness as harness
from trialbook.importers.to_ledger import import_run
from trialbook.ledger.store import Ledger, trial_row
from trialbook.names import safe_name
from trialbook.records import Run, Task, Trial

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
    entry = harness.report_of(logs, instance_id) if "report.json" in files else None
    return files, tests_from_report(entry) if entry is not None else None


def disagreements(logs: Path, resolved: set[str], ids: list[str]) -> tuple[list[str], int]:
    """Instances whose report.json verdict differs from the results file, and how many have a report."""
    differ, checked = [], 0
    for instance_id in ids:
        entry = harness.report_of(logs, instance_id)
        if entry is not None:
            checked += 1
            if entry["resolved"] != (instance_id in resolved):
                differ.append(instance_id)
    return differ, checked


def _leaderboard(results: dict[str, Any], results_path: Path, instances: list[Task]) -> dict[str, str]:
    """instance id -> REPORT_FIELDS list for a leaderboard file: every instance, resolved or not."""
    resolved = set(results["resolved"])
    return {t.task_id: "resolved_ids" if t.task_id in resolved else "unresolved_ids" for t in instances}


def _check_known(ids: dict[str, set[str]], known: set[str], where: Path, instances_path: Path) -> None:
    for label, some in ids.items():
        unknown = sorted(some - known)
        if unknown:
            raise UserError(f"{where}: {len(unknown)} {label} ids are not in {instances_path} (first: {unknown[0]})")


def import_swebench(
    ledger: Ledger,
    results_path: Path,
    instances_path: Path | None,
    run_name: str | None = None,
    logs: Path | None = None,
    replace: bool = False,
    force: bool = False,
    warnings: list[str] | None = None,
) -> tuple[str, int]:
    """Import a leaderboard results file, the harness's run report, or its log folder, as one run.

    A leaderboard file needs `instances_path` (every instance is a trial); the harness's report and logs
    name their instances. Says in `warnings` when attached --logs disagree with the verdicts."""
    if logs is not None and not logs.is_dir():
        raise UserError(f"no such logs directory: {logs}")
    system: str | None = None
    published = None
    if results_path.is_dir():  # logs/run_evaluation/<run_id>/<model>: the verdicts of its report.json files
        if logs is not None:
            raise UserError(f"{results_path} is a log folder: give --logs only with a results or report file")
        logs = harness.model_folder(results_path)
        verdicts = harness.logs_verdicts(logs)
        system, kind = harness.run_name_of(results_path, logs), "harness logs"
    else:
        results = _read_json(results_path)
        if harness.is_report(results):
            verdicts = harness.report_verdicts(results, results_path)
            system, kind = harness.run_name_of(results_path, None), "harness report"
            logs = harness.model_folder(logs) if logs is not None else harness.logs_beside(results_path)
        elif isinstance(results, dict) and isinstance(results.get("resolved"), list):
            if instances_path is None:
                raise UserError(f"{results_path}: a leaderboard results file needs --instances (its 500 ids)")
            system, kind = str(results.get("system") or results_path.stem), "leaderboard"
            published = results.get("published_pct_resolved")
            verdicts = {}  # after the instances are read
        else:
            raise UserError(
                f"{results_path}: not a SWE-bench results file (a leaderboard file's 'resolved' list or the"
                " harness report's 'resolved_ids')"
            )
    tags: dict[str, set[str]] = {}
    if instances_path is not None:
        instances = read_instances(instances_path)
        known = {t.task_id for t in instances}
        if kind == "leaderboard":
            tags = {k: set(results[k]) for k in TAG_LISTS if isinstance(results.get(k), list)}
            _check_known({"resolved": set(results["resolved"]), **tags}, known, results_path, instances_path)
            verdicts = _leaderboard(results, results_path, instances)
        else:
            _check_known({"reported": set(verdicts)}, known, results_path, instances_path)
            instances = [t for t in instances if t.task_id in verdicts]
    else:
        instances = [Task(task_id=i) for i in sorted(verdicts)]
    resolved = {i for i, field in verdicts.items() if field == "resolved_ids"}
    if logs is not None and kind != "harness logs":
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
    name = run_name or safe_name(system)
    files_by_task: dict[str, dict[str, str]] = {}

    def rows(run_id: int) -> Iterator[tuple[Any, ...]]:
        for task in instances:
            rule = harness.REPORT_FIELDS[verdicts[task.task_id]]
            tag = next((k for k, ids in tags.items() if task.task_id in ids), rule.tag)
            tests = None
            if logs is not None:
                files, tests = _logs_for(logs, task.task_id)
                if files:
                    files_by_task[task.task_id] = files
            trial = Trial(
                task_id=task.task_id,
                repo=task.repo,
                outcome=rule.outcome,
                reward=rule.reward,
                exception=tag,
                exception_message=rule.meaning if rule.tag else None,
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

    stack = {"harness": "swebench", "system": system, "source_kind": kind}
    run = Run(
        name=name,
        kind="eval",
        source=str(results_path),
        stack=stack,
        labels={"published_pct_resolved": published} if published is not None else {},
    )
    return name, import_run(ledger, run, rows, replace=replace, after=attach)
