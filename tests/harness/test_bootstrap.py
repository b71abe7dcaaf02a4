"""harness/run/bootstrap.py, the one way a run starts: the run is recorded only under its lock, an existing run
is appended to only when it is of the same kind, and the stack has the same keys whoever starts the run.
No Docker: the executor is a stand-in that only reports a version."""

from __future__ import annotations

import pytest

from paths import EXAMPLES
from trialbook.errors import UserError
from trialbook.harness.run.bootstrap import RunStart, prepare
from trialbook.harness.run.config import RunConfig
from trialbook.ledger import locks
from trialbook.ledger.store import Ledger
from trialbook.records import Run


class StandIn:
    """An executor that runs nothing (not local: no daemon is asked for its runtimes)."""

    name = "stand-in"
    backend = "docker"

    def version(self) -> str:
        return "0.0"


def _start(tmp_path, agent: str = "nop") -> RunStart:
    config = RunConfig(tasks_dir=str(EXAMPLES), agent=agent, tasks=["plain-bugfix"], runs_dir=str(tmp_path / "runs"))
    return prepare(config, StandIn(), grader=False)  # type: ignore[arg-type]


def test_the_run_is_recorded_under_its_lock(tmp_path):
    ledger = Ledger(str(tmp_path / "l.db"))
    start = _start(tmp_path)
    run = Run(name="r", kind="eval", config=start.config.model_dump(), stack=start.stack())
    with start.opened(ledger, run) as run_id:
        with ledger.engine.connect() as conn:
            assert locks.holder(conn, "r") == locks.me()
        assert ledger.get_run("r").id == run_id
    with ledger.engine.connect() as conn:
        assert locks.holder(conn, "r") is None


def test_append_keeps_a_run_of_the_same_kind_and_refuses_another_kind(tmp_path):
    ledger = Ledger(str(tmp_path / "l.db"))
    start = _start(tmp_path)
    train = Run(name="t", kind="train", config={}, stack=start.stack())
    with start.opened(ledger, train, append=True) as first:
        pass
    with start.opened(ledger, train, append=True) as again:
        assert again == first  # a restarted trainer appends
    evaluation = Run(name="e", kind="eval", config={}, stack=start.stack())
    with start.opened(ledger, evaluation):
        pass
    again = Run(name="e", kind="train", config={}, stack={})
    with (
        pytest.raises(UserError, match="run 'e' exists and is not a train run"),
        start.opened(ledger, again, append=True),
    ):
        pass


def test_every_start_records_the_same_stack_keys(tmp_path):
    """An eval run (agent's own serving stack) and a train run (the serving stack its trainer names) carry
    the sandbox's keys alike, so `compare` checks them against the same ones."""
    start = _start(tmp_path)
    train = start.stack("mini", serving={"engine": "skyrl"})
    evaluation = start.stack()
    keys = {"harness", "harness_version", "engine", "engine_version", "agent", "image", "images", "verifier_hash"}
    assert keys <= set(train) and keys <= set(evaluation)
    assert train["agent"] == "mini" and evaluation["agent"] == "nop"
    assert train["verifier_hash"] == evaluation["verifier_hash"]


def test_the_agent_is_built_before_the_tasks_are_read(tmp_path):
    """An unknown agent is refused first, even with a tasks folder that does not exist."""
    config = RunConfig(tasks_dir=str(tmp_path / "missing"), agent="no-such-agent")
    with pytest.raises(UserError, match="no-such-agent"):
        prepare(config, StandIn())  # type: ignore[arg-type]
