"""Read-only queries for `trialbook serve`: typed rows, keyset pagination, a read-only connection.

The web pages need less per row than `rows.RunRow` / `rows.TrialRow` (no JSON columns decoded for a
listing) and a run's counts from its stored summary (ledger/summary_cache.py; one grouped scan when that is
stale, where `reads.run_breakdown` makes six); hence these rows of their own.

Every list is paged by id (`WHERE id > after ORDER BY id LIMIT n`), so a page costs the same on the
millionth trial as on the first. `open_readonly` never migrates or writes: SQLite is opened with
`mode=ro`, PostgreSQL sessions are read-only transactions.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, case, create_engine, event, func, select
from sqlalchemy.engine import make_url

from trialbook.errors import UserError
from trialbook.ledger import schema, summary_cache
from trialbook.ledger.reads import loads
from trialbook.ledger.schema import artifacts, run_stats, run_summary, runs, tasks, trials
from trialbook.ledger.statements import current as _current
from trialbook.ledger.statements import graded as _graded
from trialbook.ledger.statements import resolved as _resolved
from trialbook.ledger.statements import sum_if
from trialbook.ledger.store import Ledger
from trialbook.ledger.url import connect_read_only, missing_ledger, resolve_db, sqlite_file
from trialbook.outcomes import GRADED


def _shown(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


class ReadOnlyLedger(Ledger):
    """A Ledger whose connections cannot write; the computation modules take it like any Ledger."""

    def __init__(self, db: str | None = None) -> None:  # noqa: D107 - replaces Ledger's migrating __init__
        self.url = resolve_db(db)
        self.is_sqlite = self.url.startswith("sqlite")
        if self.is_sqlite:
            path = sqlite_file(self.url)
            if not path.is_file():
                raise missing_ledger(path)
            self.engine = create_engine(self.url, creator=lambda: connect_read_only(path, check_same_thread=False))

            def _pragmas(dbapi_conn: Any, _record: Any) -> None:
                dbapi_conn.execute("PRAGMA query_only=ON")
                dbapi_conn.execute("PRAGMA busy_timeout=30000")

            event.listen(self.engine, "connect", _pragmas)
        else:
            self.engine = create_engine(self.url, connect_args={"options": "-c default_transaction_read_only=on"})
        try:
            with self.engine.connect() as conn:
                version = schema.current_version(conn)
        except Exception as exc:  # noqa: BLE001 - any driver error means "cannot open", one line
            raise UserError(f"cannot open ledger {_shown(self.url)}: {str(exc).splitlines()[0]}") from None
        if version != schema.SCHEMA_VERSION:
            raise UserError(
                f"ledger {_shown(self.url)} is at schema v{version}, this trialbook reads v{schema.SCHEMA_VERSION}:"
                " run any trialbook command on it once to upgrade it"
            )


def open_readonly(db: str | None) -> ReadOnlyLedger:
    return ReadOnlyLedger(db)


@dataclass(frozen=True)
class RunHeader:
    id: int
    name: str
    kind: str
    created: str
    source: str | None


@dataclass(frozen=True)
class TrialCounts:
    trials: int
    judged: int
    resolved: int

    @property
    def resolved_pct(self) -> float | None:
        return round(100.0 * self.resolved / self.judged, 2) if self.judged else None


@dataclass
class RepoTally:
    trials: int = 0
    judged: int = 0
    resolved: int = 0

    @property
    def resolved_pct(self) -> float | None:
        return round(100.0 * self.resolved / self.judged, 2) if self.judged else None


@dataclass
class RunOverview:
    run: RunHeader
    config: dict[str, Any]
    stack: dict[str, Any]
    labels: dict[str, Any]
    counts: TrialCounts
    tasks: int
    superseded: int
    outcomes: dict[str, int]
    tags: dict[str, int]
    by_repo: dict[str, RepoTally] = field(default_factory=dict)


@dataclass(frozen=True)
class TrialListing:
    id: int
    run_id: int
    task_id: str
    attempt: int
    repo: str | None
    outcome: str
    reward: float | None
    exception: str | None
    duration_s: float | None
    turns: int | None
    superseded_by: int | None


@dataclass
class TrialDetail:
    trial: TrialListing
    run: RunHeader
    step: int | None
    wv: int | None
    epoch: int | None
    exception_message: str | None
    tokens: int | None
    started_at: str | None
    finished_at: str | None
    tests: dict[str, dict[str, str]] | None
    extra: dict[str, Any] | None
    fail_to_pass: list[str] | None
    pass_to_pass: list[str] | None
    artifact_names: list[str]
    prev_id: int | None
    next_id: int | None


def _run_row(r: Any) -> RunHeader:
    return RunHeader(r.id, r.name, r.kind, r.created, r.source)


def list_runs(
    ledger: Ledger, kind: str | None = None, name: str | None = None, after: int = 0, limit: int = 50
) -> tuple[list[RunHeader], bool]:
    """One page of runs in id order; True when another page follows."""
    q = select(runs.c.id, runs.c.name, runs.c.kind, runs.c.created, runs.c.source).where(runs.c.id > after)
    if kind:
        q = q.where(runs.c.kind == kind)
    if name:
        escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        q = q.where(runs.c.name.like(f"%{escaped}%", escape="\\"))
    with ledger.engine.connect() as conn:
        rows = [_run_row(r) for r in conn.execute(q.order_by(runs.c.id).limit(limit + 1))]
    return rows[:limit], len(rows) > limit


def run_kinds(ledger: Ledger) -> list[str]:
    with ledger.engine.connect() as conn:
        return list(conn.execute(select(runs.c.kind).distinct().order_by(runs.c.kind)).scalars())


def _fresh(conn: Any, run_ids: list[int]) -> set[int]:
    """The runs whose stored summary (ledger/summary_cache.py) still matches their trials: two seeks each."""
    top, sup = summary_cache.live_fingerprint(run_stats.c.run_id)
    q = select(run_stats.c.run_id).where(
        run_stats.c.run_id.in_(run_ids), run_stats.c.top_id.is_not_distinct_from(top), run_stats.c.superseded == sup
    )
    return set(conn.execute(q).scalars())


def run_counts(ledger: Ledger, run_ids: list[int]) -> dict[int, TrialCounts]:
    """Current trials, judged and resolved per run, for the runs of one page: from the stored summaries
    where they are fresh, else counted live."""
    if not run_ids:
        return {}
    with ledger.engine.connect() as conn:
        fresh = _fresh(conn, run_ids)
        graded = run_summary.c.outcome.in_(sorted(GRADED))
        c = run_summary.c
        stored = select(
            c.run_id, func.sum(c.trials), func.sum(case((graded, c.trials), else_=0)),
            func.sum(case((graded, c.resolved), else_=0)),
        ).where(c.run_id.in_(sorted(fresh))).group_by(c.run_id)  # fmt: skip
        live = (
            select(
                trials.c.run_id,
                func.count(),
                sum_if(_graded),
                sum_if(_resolved),
            )
            .where(trials.c.run_id.in_([r for r in run_ids if r not in fresh]), _current)
            .group_by(trials.c.run_id)
        )
        queries = (stored, live) if len(fresh) < len(run_ids) else (stored,)
        got = {rid: TrialCounts(int(n), int(j), int(r)) for q in queries for rid, n, j, r in conn.execute(q)}
    return {rid: got.get(rid, TrialCounts(0, 0, 0)) for rid in run_ids}


def run_by_name(ledger: Ledger, name: str) -> RunHeader:
    q = select(runs.c.id, runs.c.name, runs.c.kind, runs.c.created, runs.c.source).where(runs.c.name == name)
    with ledger.engine.connect() as conn:
        row = conn.execute(q).first()
    if row is None:
        raise UserError(f"no run named '{name}'")
    return _run_row(row)


def run_overview(ledger: Ledger, name: str) -> RunOverview:
    """Outcomes, tags, per-repo counts of a run's current trials: the stored summary (ledger/summary_cache.py)
    when fresh, else one grouped pass over the run's trials (their JSON columns are not read)."""
    meta = ledger.get_run(name)
    run = RunHeader(meta.id, meta.name, meta.kind, meta.created, meta.source)
    mine = trials.c.run_id == run.id
    outcomes: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    by_repo: dict[str, RepoTally] = {}
    n_all = judged_all = resolved_all = 0
    with ledger.engine.connect() as conn:
        if run.id in _fresh(conn, [run.id]):
            c = run_summary.c
            q = select(c.outcome, c.repo, c.exception, c.trials, c.resolved).where(c.run_id == run.id)
            groups = conn.execute(q).all()
            superseded, n_tasks = conn.execute(
                select(run_stats.c.superseded, run_stats.c.tasks).where(run_stats.c.run_id == run.id)
            ).one()
        else:  # written by an older trialbook, or by a writer still at work: count live
            reward_one = sum_if(trials.c.reward >= 1.0)
            key = (trials.c.outcome, trials.c.repo, trials.c.exception)
            groups = conn.execute(select(*key, func.count(), reward_one).where(mine, _current).group_by(*key)).all()
            sup = select(func.count()).where(mine, trials.c.superseded_by.is_not(None))
            superseded = conn.execute(sup).scalar_one()
            per_task = select(trials.c.task_id).where(mine, _current).group_by(trials.c.task_id).subquery()
            n_tasks = conn.execute(select(func.count()).select_from(per_task)).scalar_one()
        for outcome, repo, exception, n, reward_one in groups:
            graded = outcome in GRADED
            resolved = reward_one if graded else 0
            outcomes[outcome] += n
            if exception:
                tags[exception] += n
            cell = by_repo.setdefault(repo or "unknown", RepoTally())
            cell.trials += n
            cell.judged += n if graded else 0
            cell.resolved += resolved
            n_all += n
            judged_all += n if graded else 0
            resolved_all += resolved
    return RunOverview(
        run=run, config=meta.config, stack=meta.stack, labels=meta.labels,
        counts=TrialCounts(n_all, judged_all, resolved_all), tasks=int(n_tasks), superseded=int(superseded),
        outcomes=dict(outcomes.most_common()), tags=dict(tags.most_common()),
        by_repo=dict(sorted(by_repo.items())),
    )  # fmt: skip


_TRIAL_COLS = (
    trials.c.id, trials.c.run_id, trials.c.task_id, trials.c.attempt, trials.c.repo, trials.c.outcome,
    trials.c.reward, trials.c.exception, trials.c.duration_s, trials.c.turns, trials.c.superseded_by,
)  # fmt: skip


def paged_trials(
    ledger: Ledger,
    run_id: int,
    outcome: str | None = None,
    task: str | None = None,
    after: int = 0,
    limit: int = 50,
) -> tuple[list[TrialListing], bool]:
    """One page of a run's trials (superseded ones included, marked) in id order."""
    q = select(*_TRIAL_COLS).where(trials.c.run_id == run_id, trials.c.id > after)
    if outcome:
        q = q.where(trials.c.outcome == outcome)
    if task:
        q = q.where(trials.c.task_id == task)
    with ledger.engine.connect() as conn:
        rows = [TrialListing(*r) for r in conn.execute(q.order_by(trials.c.id).limit(limit + 1))]
    return rows[:limit], len(rows) > limit


def trial_detail(ledger: Ledger, trial_id: int) -> TrialDetail:
    extra_cols = (
        trials.c.step, trials.c.wv, trials.c.epoch, trials.c.exception_message, trials.c.tokens,
        trials.c.started_at, trials.c.finished_at, trials.c.tests, trials.c.extra,
    )  # fmt: skip
    with ledger.engine.connect() as conn:
        row = conn.execute(select(*_TRIAL_COLS, *extra_cols).where(trials.c.id == trial_id)).first()
        if row is None:
            raise UserError(f"no trial with id {trial_id}")
        t = TrialListing(*row[: len(_TRIAL_COLS)])
        step, wv, epoch, message, tokens, started, finished, tests_json, extra_json = row[len(_TRIAL_COLS) :]
        run = _run_row(
            conn.execute(
                select(runs.c.id, runs.c.name, runs.c.kind, runs.c.created, runs.c.source).where(runs.c.id == t.run_id)
            ).one()
        )
        task = conn.execute(
            select(tasks.c.fail_to_pass, tasks.c.pass_to_pass).where(tasks.c.task_id == t.task_id)
        ).first()
        names = list(
            conn.execute(
                select(artifacts.c.name).where(artifacts.c.trial_id == trial_id).order_by(artifacts.c.name)
            ).scalars()
        )
        same = and_(trials.c.run_id == t.run_id, trials.c.task_id == t.task_id)
        prev_id = conn.execute(
            select(trials.c.id).where(same, trials.c.id < t.id).order_by(trials.c.id.desc()).limit(1)
        ).scalar()
        next_id = conn.execute(
            select(trials.c.id).where(same, trials.c.id > t.id).order_by(trials.c.id).limit(1)
        ).scalar()
    return TrialDetail(
        trial=t, run=run, step=step, wv=wv, epoch=epoch, exception_message=message, tokens=tokens,
        started_at=started, finished_at=finished, tests=loads(tests_json), extra=loads(extra_json),
        fail_to_pass=loads(task[0]) if task else None, pass_to_pass=loads(task[1]) if task else None,
        artifact_names=names, prev_id=prev_id, next_id=next_id,
    )  # fmt: skip


@dataclass(frozen=True)
class Artifact:
    name: str
    text: str  # the last `limit_chars` characters when the file is longer
    size: int  # characters in the whole file

    @property
    def cut(self) -> bool:
        return len(self.text) < self.size


def artifact_tails(ledger: Ledger, trial_id: int, limit_chars: int = 200_000) -> dict[str, Artifact]:
    """A trial's artifacts by name, each cut to its last `limit_chars` characters (the end of a log says most)."""
    tail = (func.substr(artifacts.c.content, -limit_chars) if ledger.is_sqlite
            else func.right(artifacts.c.content, limit_chars))  # fmt: skip
    q = select(artifacts.c.name, func.length(artifacts.c.content), tail)
    q = q.where(artifacts.c.trial_id == trial_id).order_by(artifacts.c.name)
    with ledger.engine.connect() as conn:
        return {n: Artifact(n, text, int(size)) for n, size, text in conn.execute(q)}


def latest_trial_id(ledger: Ledger, run_id: int, task_id: str) -> int | None:
    """The current trial of a task in a run with the highest attempt (for links from compare)."""
    q = (
        select(trials.c.id)
        .where(trials.c.run_id == run_id, trials.c.task_id == task_id, _current)
        .order_by(trials.c.attempt.desc(), trials.c.id.desc())
        .limit(1)
    )
    with ledger.engine.connect() as conn:
        return conn.execute(q).scalar()


def run_version(ledger: Ledger, run_id: int) -> tuple[int, int | None]:
    """Changes whenever the run gains a trial (imports and reruns insert; a replaced run gets a new id).

    An index seek, so a cache of a run's counts can be checked on every request."""
    with ledger.engine.connect() as conn:
        return run_id, conn.execute(select(func.max(trials.c.id)).where(trials.c.run_id == run_id)).scalar()


def task_ids_of(ledger: Ledger, run_id: int) -> list[str]:
    """The distinct tasks of a run's current trials, sorted (a split for compare: "tasks of run X")."""
    q = select(trials.c.task_id).where(trials.c.run_id == run_id, _current).distinct().order_by(trials.c.task_id)
    with ledger.engine.connect() as conn:
        return list(conn.execute(q).scalars())
