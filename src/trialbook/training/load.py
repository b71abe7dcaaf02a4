"""Load a training run's trajectories as numpy columns with one SQL query (no dict per row).

This is what keeps `train report` fast on a million trajectories. The database groups identical
trajectories - same task, step, weight version, epoch and outcome class, as the G rollouts of one
group mostly are - so Python receives a few hundred thousand integer rows with a count `n`
instead of a million mixed tuples; every later statistic is a weighted numpy operation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
from sqlalchemy import Connection, Select, and_, case, func, or_, select

from trialbook.errors import TrialbookError
from trialbook.ledger.schema import trials
from trialbook.ledger.store import Ledger
from trialbook.records import GRADED, NOT_PASSING, Outcome

OUTCOME_LIST: tuple[str, ...] = tuple(o.value for o in Outcome)
_OUTCOME_CODE = {name: i for i, name in enumerate(OUTCOME_LIST)}
_GRADED_CODES = np.array([name in GRADED for name in OUTCOME_LIST] + [False] * (16 - len(OUTCOME_LIST)))
CHUNK = 100_000
# The `flags` column: outcome code in the low 4 bits, then "reward >= 1.0", then "P2P regression".
_OUTCOME_MASK = 0b1111
_UNKNOWN = 0b1111
_REWARD_1 = 0b10000
_P2P = 0b100000


@dataclass
class TrainData:
    """One row per group of identical trajectories (`n` of them); -1 marks a missing step/wv/epoch."""

    n: np.ndarray  # int64 trajectories the row stands for
    task: np.ndarray  # int32 code into task_names
    task_names: list[str]
    repo: np.ndarray  # int32 code into repo_names (a task's repo as first seen)
    repo_names: list[str]
    outcome: np.ndarray  # int8 code into OUTCOME_LIST
    graded: np.ndarray  # bool
    resolved: np.ndarray  # bool: graded and reward >= 1.0 (records.is_resolved)
    p2p: np.ndarray  # bool: graded, unresolved, a PASS_TO_PASS test not passing
    step: np.ndarray  # int64
    wv: np.ndarray  # int64
    epoch: np.ndarray  # int64

    @property
    def trajectories(self) -> int:
        return int(self.n.sum())

    def count(self, mask: np.ndarray) -> int:
        return int(self.n[mask].sum())

    def subset(self, mask: np.ndarray) -> TrainData:
        arrays = {k: v[mask] for k, v in vars(self).items() if isinstance(v, np.ndarray)}
        return TrainData(task_names=self.task_names, repo_names=self.repo_names, **arrays)

    def outcome_mask(self, name: str) -> np.ndarray:
        return self.outcome == _OUTCOME_CODE[name]


def _chunks(conn: Connection, q: Select) -> Iterator[list[tuple]]:
    """Plain DBAPI tuples for `q` in chunks: skips SQLAlchemy's per-row objects on the hot path."""
    # Literal values (our own ints and fixed strings): PostgreSQL then sees GROUP BY expressions
    # textually equal to the SELECT ones, which it requires.
    sql = str(q.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cur.execute(sql)  # (with no parameters a "%%" stays "%%": in LIKE, the same as "%")
        while rows := cur.fetchmany(CHUNK):
            yield rows
    finally:
        cur.close()


def _p2p_regression() -> Any:
    """Unresolved with a PASS_TO_PASS test failing, erroring or missing, decided in SQL.

    The ledger stores `tests` as canonical JSON (store.dumps: sorted keys, no spaces), so PASS_TO_PASS
    is the last group and, since quotes inside JSON strings are escaped, `:"fail"` after it can only
    be a status value of that group.
    """
    c = trials.c
    bad = or_(*(c.tests.like(f'%"PASS_TO_PASS":{{%:"{s}"%') for s in NOT_PASSING))
    return and_(c.tests.is_not(None), or_(c.reward.is_(None), c.reward < 1.0), bad)


def load_trajectories(ledger: Ledger, run_id: int) -> TrainData:
    c = trials.c
    outcome_code = case({name: i for i, name in enumerate(OUTCOME_LIST)}, value=c.outcome, else_=_UNKNOWN)
    flags = outcome_code + case((c.reward >= 1.0, _REWARD_1), else_=0) + case((_p2p_regression(), _P2P), else_=0)
    key = (c.task_id, c.repo, flags, func.coalesce(c.step, -1), func.coalesce(c.wv, -1), func.coalesce(c.epoch, -1))
    q = select(*key, func.count()).where(c.run_id == run_id, c.superseded_by.is_(None)).group_by(*key)
    tasks: dict[str, int] = {}
    task_repo: list[str] = []
    parts: list[np.ndarray] = []
    with ledger.engine.connect() as conn:
        if ledger.is_sqlite:  # memory-mapped reads make the full scan cheaper
            conn.exec_driver_sql("PRAGMA mmap_size=1073741824")
        for rows in _chunks(conn, q):
            codes = np.empty(len(rows), dtype=np.int64)
            for k, (task_id, repo, *_) in enumerate(rows):
                code = tasks.get(task_id)
                if code is None:
                    code = tasks[task_id] = len(tasks)
                    task_repo.append(repo or "")
                codes[k] = code
            numbers = np.fromiter(chain.from_iterable(r[2:] for r in rows), dtype=np.int64, count=5 * len(rows))
            parts.append(np.column_stack([codes, numbers.reshape(-1, 5)]))
    cols = np.concatenate(parts) if parts else np.empty((0, 6), np.int64)
    repo_names = sorted(set(task_repo))
    repo_index = {r: k for k, r in enumerate(repo_names)}
    repo_of_task = np.array([repo_index[r] for r in task_repo] or [0], dtype=np.int32)
    task = cols[:, 0].astype(np.int32)
    code = cols[:, 1]
    outcome = (code & _OUTCOME_MASK).astype(np.int8)
    if (outcome == _UNKNOWN).any():
        raise TrialbookError("the ledger holds an outcome this version of trialbook does not know")
    graded = _GRADED_CODES[outcome]
    resolved = graded & (code & _REWARD_1 > 0)
    return TrainData(
        n=cols[:, 5].copy(),
        task=task,
        task_names=list(tasks),
        repo=repo_of_task[task] if len(task) else np.empty(0, np.int32),
        repo_names=repo_names,
        outcome=outcome,
        graded=graded,
        resolved=resolved,
        p2p=(code & _P2P > 0) & graded & ~resolved,
        step=cols[:, 2].copy(),
        wv=cols[:, 3].copy(),
        epoch=cols[:, 4].copy(),
    )


def load_durations(ledger: Ledger, run_id: int) -> np.ndarray:
    """Trajectory durations (seconds) of the run's current trials that have one."""
    q = select(trials.c.duration_s).where(
        trials.c.run_id == run_id, trials.c.superseded_by.is_(None), trials.c.duration_s.is_not(None)
    )
    with ledger.engine.connect() as conn:
        return np.array(conn.execute(q).scalars().all(), dtype=np.float64)
