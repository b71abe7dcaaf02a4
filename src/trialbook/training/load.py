"""Load a training run's trajectories as numpy columns with one SQL query (no dict per row).

This is what keeps `train report` fast on a million trajectories: every later statistic is a
vectorised numpy operation over these arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import orjson
from sqlalchemy import and_, case, or_, select

from trialbook.ledger.schema import trials
from trialbook.ledger.store import Ledger
from trialbook.records import GRADED, Outcome

OUTCOME_LIST: tuple[str, ...] = tuple(o.value for o in Outcome)
_OUTCOME_CODE = {name: i for i, name in enumerate(OUTCOME_LIST)}
_GRADED_CODES = np.array([name in GRADED for name in OUTCOME_LIST])
P2P_BAD = frozenset(("fail", "error", "missing"))
CHUNK = 200_000


@dataclass
class TrainData:
    """One row per current trajectory; -1 marks a missing step/wv/epoch."""

    task: np.ndarray  # int32 code into task_names
    task_names: list[str]
    repo: np.ndarray  # int32 code into repo_names
    repo_names: list[str]
    outcome: np.ndarray  # int8 code into OUTCOME_LIST
    graded: np.ndarray  # bool
    resolved: np.ndarray  # bool: graded and reward >= 1.0 (records.is_resolved)
    p2p: np.ndarray  # bool: graded, unresolved, a PASS_TO_PASS test not passing
    step: np.ndarray  # int64
    wv: np.ndarray  # int64
    epoch: np.ndarray  # int64
    duration: np.ndarray  # float64, nan when unknown

    def __len__(self) -> int:
        return len(self.task)

    def subset(self, mask: np.ndarray) -> TrainData:
        arrays = {k: v[mask] for k, v in vars(self).items() if isinstance(v, np.ndarray)}
        return TrainData(task_names=self.task_names, repo_names=self.repo_names, **arrays)

    def outcome_mask(self, name: str) -> np.ndarray:
        return self.outcome == _OUTCOME_CODE[name]


def _p2p_regression(tests: str | None) -> bool:
    if tests is None:
        return False
    p2p = (orjson.loads(tests) or {}).get("PASS_TO_PASS") or {}
    return any(status in P2P_BAD for status in p2p.values())


def _codes(values: list[str | None], table: dict[str | None, int]) -> np.ndarray:
    get = table.setdefault
    return np.fromiter((get(v, len(table)) for v in values), dtype=np.int32, count=len(values))


def _ints(values: tuple) -> np.ndarray:
    arr = np.array(values, dtype=np.float64)  # None -> nan
    return np.where(np.isnan(arr), -1, arr).astype(np.int64)


def load_trajectories(ledger: Ledger, run_id: int) -> TrainData:
    """The run's current trajectories as columns; tests JSON is read only for unresolved P2P candidates."""
    c = trials.c
    unresolved_with_p2p = and_(c.tests.like('%"PASS_TO_PASS"%'), or_(c.reward.is_(None), c.reward < 1.0))
    q = select(
        c.task_id, c.repo, c.outcome, c.reward, c.step, c.wv, c.epoch, c.duration_s,
        case((unresolved_with_p2p, c.tests), else_=None),
    ).where(c.run_id == run_id, c.superseded_by.is_(None)).order_by(c.id)  # fmt: skip
    tasks: dict[str | None, int] = {}
    repos: dict[str | None, int] = {}
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("task", "repo", "outcome", "reward", "step", "wv")}
    parts.update({"epoch": [], "duration": [], "p2p": []})
    with ledger.engine.connect() as conn:
        result = conn.execute(q)
        while rows := result.fetchmany(CHUNK):
            task, repo, outcome, reward, step, wv, epoch, duration, tests = zip(*rows, strict=True)
            parts["task"].append(_codes(task, tasks))
            parts["repo"].append(_codes(repo, repos))
            parts["outcome"].append(np.fromiter((_OUTCOME_CODE[o] for o in outcome), np.int8, len(outcome)))
            parts["reward"].append(np.array(reward, dtype=np.float64))
            parts["step"].append(_ints(step))
            parts["wv"].append(_ints(wv))
            parts["epoch"].append(_ints(epoch))
            parts["duration"].append(np.array(duration, dtype=np.float64))
            parts["p2p"].append(np.fromiter((t is not None and _p2p_regression(t) for t in tests), bool, len(tests)))
    cols = {
        k: np.concatenate(v) if v else np.empty(0, np.int8 if k == "outcome" else np.float64) for k, v in parts.items()
    }
    outcome = cols["outcome"].astype(np.int8)
    graded = _GRADED_CODES[outcome]
    resolved = graded & (np.nan_to_num(cols["reward"], nan=0.0) >= 1.0)
    return TrainData(
        task=cols["task"].astype(np.int32),
        task_names=[str(t) for t in tasks],
        repo=cols["repo"].astype(np.int32),
        repo_names=[r if r is not None else "" for r in repos],
        outcome=outcome,
        graded=graded,
        resolved=resolved,
        p2p=cols["p2p"].astype(bool) & graded & ~resolved,
        step=cols["step"].astype(np.int64),
        wv=cols["wv"].astype(np.int64),
        epoch=cols["epoch"].astype(np.int64),
        duration=cols["duration"].astype(np.float64),
    )
