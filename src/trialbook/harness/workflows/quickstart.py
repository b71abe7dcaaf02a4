"""`trialbook quickstart`: build what is needed, run the example tasks with nop and oracle, compare."""

from __future__ import annotations

import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trialbook.errors import TrialbookError, UserError
from trialbook.harness.placement.executors import Executor
from trialbook.harness.run.bootstrap import check_grader
from trialbook.harness.run.config import RunConfig
from trialbook.harness.run.lifecycle import start_run
from trialbook.harness.run.stack import connect
from trialbook.ledger.rows import TrialRow
from trialbook.ledger.store import Ledger
from trialbook.outcomes import is_graded, is_resolved
from trialbook.result_types import Result
from trialbook.stats.comparison import Comparison
from trialbook.stats.run_summaries import run_summary
from trialbook.tasks import load_tasks

CHECKOUT = Path(__file__).resolve().parents[4]
EXAMPLES = CHECKOUT / "examples" / "tasks"
DOCKER_UP = CHECKOUT / "scripts" / "docker-up.sh"
BASE_IMAGE = "trialbook-base:bookworm"
AGENTS = ("nop", "oracle")
MINI_QUICK = {"max_turns": 3, "max_output_tokens": 64}  # `--agent mini`: keeps a CPU-served model quick


@dataclass(frozen=True)
class RunBrief(Result):
    name: str
    trials: int
    judged: int
    resolved: int
    resolved_pct: float | None
    outcomes: dict[str, int]


@dataclass(frozen=True)
class AgentTally(Result):
    """One agent's attempts at one task."""

    resolved: int
    judged: int
    attempts: int
    outcomes: dict[str, int]


@dataclass(frozen=True)
class QuickTask(Result):
    """One task; its JSON form has one key per agent (nop, then the candidate)."""

    task_id: str
    expected_oracle: str | None
    agents: dict[str, AgentTally]

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        return {**out, **out.pop("agents")}


@dataclass(frozen=True)
class QuickstartResult(Result):
    agent: str  # the candidate
    runs: dict[str, RunBrief]  # agent -> its run
    tasks: list[QuickTask]
    comparison: Comparison | None  # candidate vs nop
    next: str  # the command for the full comparison


def ensure_base_image() -> None:
    engine = connect()
    if engine.image_id(BASE_IMAGE) is not None:
        return
    if not DOCKER_UP.is_file():
        raise UserError(f"the base image {BASE_IMAGE} is missing; build it with scripts/docker-up.sh from a checkout")
    proc = subprocess.run(["bash", str(DOCKER_UP)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise TrialbookError(f"building {BASE_IMAGE} failed: {(proc.stderr or proc.stdout).strip()[-500:]}")


def quickstart(
    ledger: Ledger,
    tasks_dir: Path | None = None,
    attempts: int = 2,
    concurrency: int = 2,
    prefix: str = "quickstart",
    agent: str = "oracle",
    endpoints: list[str] | None = None,
    executor: Executor | None = None,
) -> QuickstartResult:
    """Run every example task with nop and `agent` (`attempts` each) and compare them per task.

    `agent="mini"` without `endpoints` serves SmolLM2-135M locally (llama-cpp-python) for the run."""
    if agent not in ("oracle", "mini") or (endpoints and agent != "mini"):
        raise UserError("quickstart --agent is oracle or mini, and only mini takes --endpoint")
    if agent == "mini" and not endpoints:
        from trialbook.agents.llama import LlamaServer

        with LlamaServer() as server:
            return quickstart(ledger, tasks_dir, attempts, concurrency, prefix, agent, [server.url], executor)
    tasks_dir = tasks_dir or EXAMPLES
    specs, _ = load_tasks(tasks_dir)
    if len(specs) < 2:  # a paired comparison needs two tasks: refuse before running any trial
        raise UserError(f"quickstart compares two agents task by task and needs 2+ tasks; {tasks_dir} has {len(specs)}")
    check_grader(specs, local=executor is None or executor.name == "local")
    if executor is None or executor.name == "local":  # a cluster's nodes bring their own base image
        ensure_base_image()
    expected = {s.task_id: s.metadata.get("expected_oracle", "resolved") for s in specs}
    per_task: dict[str, dict[str, AgentTally]] = defaultdict(dict)
    runs: dict[str, RunBrief] = {}
    candidate = agent
    options = {**MINI_QUICK, "endpoints": endpoints} if agent == "mini" else {}
    for agent in ("nop", candidate):
        name = f"{prefix}-{agent}"
        config = RunConfig(
            tasks_dir=str(tasks_dir),
            agent=agent,
            attempts=attempts,
            concurrency=concurrency,
            agent_options=options if agent == "mini" else {},
        )
        start_run(ledger, name, config, replace=True, executor=executor)
        s = run_summary(ledger, name)
        runs[agent] = RunBrief(s.name, s.trials, s.judged, s.resolved, s.resolved_pct, s.outcomes)
        run_id = ledger.get_run(name).id
        by_task: dict[str, list[TrialRow]] = defaultdict(list)
        for t in ledger.trial_rows(run_id):
            by_task[t.task_id].append(t)
        for task_id, rows in by_task.items():
            per_task[task_id][agent] = AgentTally(
                resolved=sum(is_resolved(r.outcome, r.reward) for r in rows),
                judged=sum(is_graded(r.outcome) for r in rows),
                attempts=len(rows),
                outcomes=dict(Counter(r.outcome for r in rows)),
            )
    tasks = [QuickTask(tid, expected.get(tid), per_task[tid]) for tid in sorted(per_task)]
    return QuickstartResult(
        agent=candidate,
        runs=runs,
        tasks=tasks,
        comparison=_paired(ledger, f"{prefix}-nop", f"{prefix}-{candidate}"),
        next=f"trialbook compare {prefix}-nop {prefix}-{candidate}",
    )


def _paired(ledger: Ledger, base: str, cand: str) -> Comparison | None:
    """The paired comparison row from the stats area (None where that module is not installed, or where
    fewer than 2 tasks were graded in both runs)."""
    try:
        from trialbook.stats.compare import CompareRequest, compare
    except ImportError:
        return None
    try:
        rows = compare(ledger, CompareRequest(base, [cand])).comparisons
    except UserError:  # fewer than 2 tasks graded in both runs: the per-task table still stands
        return None
    return rows[0] if rows else None
