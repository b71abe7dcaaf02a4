"""A carry that runs past its time: the agent's doing when the image's own tree carries in a tenth of it.

An agent that floods its working tree with files makes carrying its change to the verifier run past its time
(2 x the verifier's timeout). Left an ungraded IsolationError, that would be a free exit from a failure that a policy
could learn (300,000 files took 3 minutes and ended `infra_error`); now it is graded 0 as ChangeTooLargeError. The
same timeout with an image whose own tree takes more than a tenth of the carry's time (the sandbox too slow for the
task) is not charged to the change: an IsolationError, ungraded, as before, its message saying why. The same for a
working tree too big to copy out (a sparse terabyte): graded 0 when the image's own tree is at most half the limit.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path
from typing import Any

import pytest

from ledgerdicts import trial_dicts
from trialbook.harness.trial.state import ImageRef, TrialState
from trialbook.ledger.store import Ledger
from trialbook.sandbox import BoxSpec, DockerEngine, Sandbox, box
from trialbook.sandbox.box import TreeTooLargeError
from trialbook.sandbox.docker import LABEL_RUN
from trialbook.verify import blame, runner
from trialbook.verify.isolation import CarryOutgrown, CarryTimeout, IsolationError

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"
# no fix; 40,000 files in the working tree, written by the agent
FLOOD = """#!/bin/bash
python3 - <<'PY'
import os
for d in range(40):
    os.makedirs(f"/testbed/flood/d{d}")
    for i in range(1000):
        with open(f"/testbed/flood/d{d}/f{i}", "w") as f:
            f.write(str(i))
PY
"""
# an image whose own tree is 40,000 files (untracked, not ignored: the harness's git indexes every one of them)
BIG_IMAGE = """FROM trialbook-base:bookworm
WORKDIR /testbed
RUN python3 -c "import os; [os.makedirs(f'/testbed/data/d{d}') for d in range(40)]; \\
[open(f'/testbed/data/d{d}/f{i}', 'w').write(str(i)) for d in range(40) for i in range(1000)]"
"""
SMALL_IMAGE = "FROM trialbook-base:bookworm\nWORKDIR /testbed\nRUN git init -q && echo x > a.txt\n"


def _copy(tasks: Path, name: str, solve: str) -> None:
    task = tasks / name
    shutil.copytree(EXAMPLE, task)
    (task / "solution" / "solve.sh").write_text(solve)
    toml = (task / "task.toml").read_text()
    (task / "task.toml").write_text(toml.replace("[verifier]\ntimeout_sec = 60", "[verifier]\ntimeout_sec = 2"))


def _run_one(tmp_path: Path, cli: Any, db: str, solve: str) -> dict[str, Any]:
    """The trial of `solve` on a copy of plain-bugfix (verifier timeout 2 s), run by `trialbook run`."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    _copy(tasks, "cheat", solve)
    res = cli("run", str(tasks), "--agent", "oracle", "--run", "carry", "--runs-dir", str(tmp_path / "runs"))
    assert res.exit_code == 0, res.stderr
    (got,) = trial_dicts(Ledger(db), "carry")
    return got


def test_a_flood_of_files_is_graded_0_not_an_infra_error(engine, tmp_path, cli, db):
    flood = _run_one(tmp_path, cli, db, FLOOD)
    assert (flood["outcome"], flood["reward"], flood["exception"]) == ("unresolved", 0.0, "ChangeTooLargeError")
    assert "took over 4 s; the image's own tree took" in flood["exception_message"]
    assert 0 <= flood["extra"]["verifier"]["image_tree_index_s"] <= 0.4


@pytest.fixture()
def tb(engine):
    eng = DockerEngine()
    run = f"carry-{secrets.token_hex(3)}"
    yield eng, run
    eng.clean(run, images=True)


def _blame(tb: tuple[DockerEngine, str], tmp_path: Path, dockerfile: str, budget: float) -> Exception:
    """blame.slow_carry on a carry of `budget` s that timed out, with real fresh containers of the image."""
    eng, run = tb
    context = tmp_path / secrets.token_hex(3)
    context.mkdir()
    (context / "Dockerfile").write_text(dockerfile)
    image = eng.ensure_image("carry", None, context, secrets.token_hex(6), run, False)
    state = TrialState(image=ImageRef(*image))

    def open_box() -> Sandbox:
        return eng.start(BoxSpec(image[0], {LABEL_RUN: run}, 1.0, 512, 256, False), f"tb-{run}-{secrets.token_hex(3)}")

    timeout = CarryTimeout(f"carrying the agent's change into x took over {budget:g} s", "", budget)
    blame._IMAGE_TREE.clear()
    with pytest.raises((CarryOutgrown, IsolationError)) as caught:
        blame.slow_carry(timeout, open_box, "/testbed", state)
    assert eng.containers(run) == [] and state.cleanup_error is None
    return caught.value


def test_a_carry_timeout_is_charged_only_when_the_image_tree_is_quick(tb, tmp_path):
    quick = _blame(tb, tmp_path, SMALL_IMAGE, 4.0)
    assert isinstance(quick, CarryOutgrown) and quick.image_tree_index_s <= 0.4
    # the image's own 40,000 files take more than a tenth of the carry's time: the sandbox's slowness, not the change's
    slow = _blame(tb, tmp_path, BIG_IMAGE, 4.0)
    assert type(slow) is IsolationError and "of it (not the change's doing)" in str(slow)
    took = float(str(slow).split("the image's own tree took ")[1].split(" s")[0])
    assert took > 0.4
    never = _blame(tb, tmp_path, BIG_IMAGE, 0.3)
    assert type(never) is IsolationError and "did not finish in that time either" in str(never)


SPARSE = """#!/bin/bash
# no fix; a sparse file of a terabyte, no disk behind it: copied out, a terabyte of zeros
truncate -s 1T /testbed/big.bin
"""
LIMIT = 64 << 20  # the copy's limit for these tests (SNAPSHOT_LIMIT, 4 GiB, would write 4 GiB of zeros to disk first)


def test_a_sparse_terabyte_is_graded_0_not_copied_without_end(engine, tmp_path, cli, db, monkeypatch):
    monkeypatch.setattr(box, "SNAPSHOT_LIMIT", LIMIT)
    sparse = _run_one(tmp_path, cli, db, SPARSE)
    assert (sparse["outcome"], sparse["reward"], sparse["exception"]) == ("unresolved", 0.0, "ChangeTooLargeError")
    assert f"is over {LIMIT:,} bytes as an archive; the image's own tree: " in sparse["exception_message"]
    assert 0 < sparse["extra"]["verifier"]["image_tree_bytes"] <= LIMIT // 2


def test_an_image_tree_over_half_the_limit_is_not_charged(tb, tmp_path, monkeypatch):
    monkeypatch.setattr(box, "SNAPSHOT_LIMIT", LIMIT)
    eng, run = tb
    (tmp_path / "Dockerfile").write_text(f"{SMALL_IMAGE}RUN head -c 40000000 /dev/zero > /testbed/data.bin\n")
    image = eng.ensure_image("bigtree", None, tmp_path, secrets.token_hex(6), run, False)

    def open_box() -> Sandbox:
        return eng.start(BoxSpec(image[0], {LABEL_RUN: run}, 1.0, 512, 256, False), f"tb-{run}-{secrets.token_hex(3)}")

    blame._IMAGE_TREE.clear()
    with pytest.raises(IsolationError, match="the image's own tree is 40,0[0-9,]+ bytes, over half of it"):
        state = TrialState(image=ImageRef(*image))
        blame.big_tree(TreeTooLargeError("/testbed", "x", LIMIT), open_box, "/testbed", state)
    assert eng.containers(run) == []


FLOOD_OUTPUT = """#!/bin/bash
# no fix; at exit (past pytest's capture) the code under test writes 40 MB to stdout
cat >> /testbed/stats.py <<'PY'

import atexit as _atexit
import sys as _sys

_atexit.register(lambda: _sys.stdout.write(("." * 1023 + "\\n") * 40_000))
PY
"""


def test_the_verifiers_output_is_kept_on_disk_only_up_to_its_limit(engine, tmp_path, cli, db, monkeypatch):
    monkeypatch.setattr(runner, "LOG_DISK_LIMIT", 8 << 20)
    flood = _run_one(tmp_path, cli, db, FLOOD_OUTPUT)
    assert (flood["outcome"], flood["reward"]) == ("unresolved", 0.0)
    assert "verifier_output_cut" in flood["extra"]["tags"], flood["extra"]
