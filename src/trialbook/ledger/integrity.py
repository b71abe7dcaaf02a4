"""`trialbook ledger check`: is the ledger whole? What a fault (a killed writer, a database restarted mid-run, a
full disk, writers racing) would leave behind, looked for on SQLite and PostgreSQL alike:

- the database's own check (SQLite `PRAGMA quick_check`);
- rows whose parent is gone (a trial without its run, an artifact without its trial, steps without their run);
- a (run, task, attempt) recorded twice among current (not superseded) rows, and a supersession pointing nowhere or
  at another task's trial;
- a half-written trial: an outcome trialbook does not know, or, in a run `trialbook run` made, no finish time or no
  trial name;
- a JSON column that does not parse (run config, stack, labels; a trial's tests and extra; a step's metrics);
- a run summary (ledger/summary_cache.py) whose fingerprint matches its rows but whose counts do not.

Each problem is one line; none is an OK ledger. Rows are streamed: memory stays flat on a large ledger.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

from sqlalchemy import Connection, func, or_, select, text
from sqlalchemy.orm import aliased

from trialbook.extra_schema import read_extra
from trialbook.ledger.schema import artifacts, run_stats, run_summary, runs, steps, trials
from trialbook.ledger.store import Ledger
from trialbook.ledger.summary_cache import live_fingerprint
from trialbook.outcomes import Outcome

KNOWN_OUTCOMES = {o.value for o in Outcome}
MAX_PER_KIND = 20  # lines per kind of problem; the count says how many more


@dataclass
class CheckResult:
    runs: int = 0
    trials: int = 0
    problems: list[str] = field(default_factory=list)
    hidden: int = 0  # problems beyond MAX_PER_KIND of a kind, counted, not listed

    @property
    def ok(self) -> bool:
        return not self.problems


def _add(out: CheckResult, lines: Iterator[str]) -> None:
    for n, line in enumerate(lines):
        if n < MAX_PER_KIND:
            out.problems.append(line)
        else:
            out.hidden += 1


def _database(conn: Connection) -> Iterator[str]:
    if conn.dialect.name == "sqlite":
        for (row,) in conn.execute(text("PRAGMA quick_check")):
            if row != "ok":
                yield f"sqlite quick_check: {row}"


def _orphans(conn: Connection) -> Iterator[str]:
    for (tid, run_id) in conn.execute(
        select(trials.c.id, trials.c.run_id).where(~select(runs.c.id).where(runs.c.id == trials.c.run_id).exists())
    ):  # fmt: skip
        yield f"trial {tid}: its run (id {run_id}) is missing"
    for (tid, name) in conn.execute(
        select(artifacts.c.trial_id, artifacts.c.name)
        .where(~select(trials.c.id).where(trials.c.id == artifacts.c.trial_id).exists())
    ):  # fmt: skip
        yield f"artifact {name} of trial {tid}: the trial is missing"
    for (run_id, n) in conn.execute(
        select(steps.c.run_id, func.count()).where(~select(runs.c.id).where(runs.c.id == steps.c.run_id).exists())
        .group_by(steps.c.run_id)
    ):  # fmt: skip
        yield f"{n} step(s) of run id {run_id}: the run is missing"


def _duplicates(conn: Connection) -> Iterator[str]:
    key = (trials.c.run_id, trials.c.task_id, trials.c.attempt, trials.c.step, trials.c.epoch)
    q = (
        select(runs.c.name, trials.c.task_id, trials.c.attempt, trials.c.step, func.count(), func.min(trials.c.id))
        .select_from(trials.join(runs, runs.c.id == trials.c.run_id))
        .where(trials.c.superseded_by.is_(None))
        .group_by(*key, runs.c.name)
        .having(func.count() > 1)
    )
    for name, task, attempt, step, n, first in conn.execute(q):
        at = "" if step is None else f" step {step}"
        yield f"run {name}: task {task} attempt {attempt}{at} recorded {n} times as current (first: trial {first})"
    new = aliased(trials)
    q2 = (
        select(trials.c.id, trials.c.superseded_by, new.c.id, new.c.task_id, trials.c.task_id)
        .select_from(trials.outerjoin(new, new.c.id == trials.c.superseded_by))
        .where(trials.c.superseded_by.is_not(None))
        .where(or_(new.c.id.is_(None), new.c.task_id != trials.c.task_id, new.c.run_id != trials.c.run_id))
    )
    for old, by, found, new_task, task in conn.execute(q2):
        what = "which does not exist" if found is None else f"of another task or run ({new_task}, not {task})"
        yield f"trial {old}: superseded by trial {by}, {what}"


def _rows(conn: Connection, out: CheckResult) -> Iterator[str]:
    """Half-written trials and JSON that does not parse, streamed."""
    harness: set[int] = set()
    for run_id, name, *cols in conn.execute(select(runs.c.id, runs.c.name, runs.c.config, runs.c.stack, runs.c.labels)):
        out.runs += 1
        for col, raw in zip(("config", "stack", "labels"), cols, strict=True):
            value = yield from _json(f"run {name}: {col}", raw)
            if col == "config" and isinstance(value, dict) and "agent" in value and "tasks_dir" in value:
                harness.add(int(run_id))
    q = select(trials.c.id, trials.c.run_id, trials.c.outcome, trials.c.finished_at, trials.c.tests, trials.c.extra)
    result = conn.execution_options(yield_per=5000).execute(q)
    for tid, run_id, outcome, finished, tests, extra in result:
        out.trials += 1
        if outcome not in KNOWN_OUTCOMES:
            yield f"trial {tid}: unknown outcome {outcome!r}"
        yield from _json(f"trial {tid}: tests", tests)
        value = yield from _json(f"trial {tid}: extra", extra)
        if run_id in harness:
            if not finished:
                yield f"trial {tid}: half-written (no finish time)"
            if not read_extra(value).trial_name:
                yield f"trial {tid}: half-written (no trial name in extra)"
    for run_id, step, metrics in conn.execute(select(steps.c.run_id, steps.c.step, steps.c.metrics)):
        yield from _json(f"step {step} of run id {run_id}: metrics", metrics)


def _json(what: str, raw: str | None) -> Generator[str, None, object]:
    """The value `raw` holds (None when it is NULL or not JSON), yielding a line for JSON that does not parse."""
    if raw is None:
        return None
    try:
        value: object = json.loads(raw)
        return value
    except json.JSONDecodeError as exc:
        yield f"{what}: not JSON ({exc.msg} at {exc.pos})"
        return None


def _summaries(conn: Connection) -> Iterator[str]:
    """A stored summary whose fingerprint is the live one must count what the rows count."""
    top, sup = live_fingerprint(runs.c.id)
    current = (
        select(func.count()).where(trials.c.run_id == runs.c.id, trials.c.superseded_by.is_(None)).scalar_subquery()
    )
    stored = select(func.coalesce(func.sum(run_summary.c.trials), 0)).where(run_summary.c.run_id == runs.c.id)
    q = select(runs.c.name, top, sup, run_stats.c.top_id, run_stats.c.superseded, current, stored.scalar_subquery())
    q = q.select_from(runs.join(run_stats, run_stats.c.run_id == runs.c.id))
    for name, live_top, live_sup, s_top, s_sup, n_current, n_stored in conn.execute(q):
        if (live_top, int(live_sup)) == (s_top, int(s_sup)) and int(n_current) != int(n_stored):
            yield f"run {name}: its summary counts {n_stored} current trials, the rows {n_current}"


def check(ledger: Ledger) -> CheckResult:
    """Every check above, in one read transaction (a consistent snapshot while writers go on)."""
    out = CheckResult()
    with ledger.engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
        for part in (_database(conn), _orphans(conn), _duplicates(conn), _rows(conn, out), _summaries(conn)):
            _add(out, part)
    return out
