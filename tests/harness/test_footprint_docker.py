"""verify/footprint.py on real containers: the walk of the overlay upper dir on this host and the reading through
the daemon (`docker diff`, /tests copied out: for a remote daemon) find the same paths left otherwise by a run that
replaced a tool and rewrote a /tests grader, against a run that did what test.sh does in both."""

from __future__ import annotations

import secrets

import pytest

from trialbook.sandbox import BoxSpec, DockerEngine
from trialbook.sandbox.docker import LABEL_RUN
from trialbook.verify import footprint

pytestmark = pytest.mark.docker

IMAGE = "trialbook-base:bookworm"
# what test.sh does in both runs: stage the tests, install a tool of its own, write a log and a report (its bytes differ
# between runs: a shell's pid), fill pytest's cache
BOTH = (
    "mkdir -p /tests/.pytest_cache /logs/verifier /usr/local/bin /testbed && echo 'print(1)' > /tests/grade.py"
    " && echo t > /tests/test.sh && echo tool > /usr/local/bin/tb-grade && echo 0 > /logs/verifier/reward.txt"
    " && echo $$ > /tests/.pytest_cache/lastfailed && echo $$ > /tests/report.xml && echo $$ > /root/.cache"
    " && echo x > /testbed/stats.py"
)
# ... and the run with the change: python3 replaced, the grader rewritten (same size), a .pth planted, /etc/issue gone
CHEAT = (
    " && rm /usr/bin/python3 && printf '#!/bin/sh\\necho 1\\n' > /usr/bin/python3 && echo 'print(0)' > /tests/grade.py"
    " && echo 'import os' > /usr/lib/python3/dist-packages/zz.pth && rm /etc/issue"
)
INTRODUCED = ["/etc/issue", "/tests/grade.py", "/usr/bin/python3", "/usr/lib/python3/dist-packages/zz.pth"]


@pytest.fixture()
def tb(engine):
    run = f"footprint-{secrets.token_hex(3)}"
    eng = DockerEngine()
    yield eng, run
    eng.clean(run, images=True)
    assert engine.containers.list(all=True, sparse=True, filters={"label": f"{LABEL_RUN}={run}"}) == []


def _ran(tb: tuple[DockerEngine, str], script: str):
    eng, run = tb
    box = eng.start(BoxSpec(IMAGE, {LABEL_RUN: run}, 1.0, 256, 128, False), f"tb-{run}-{secrets.token_hex(3)}")
    assert box.run_script(script, timeout=60).exit_code == 0
    return box


def test_both_readings_find_what_only_the_change_left(tb) -> None:
    base, cheat = _ran(tb, BOTH), _ran(tb, BOTH + CHEAT)
    assert base.upper_dir() is not None  # the daemon is on this host: the walk is the reading `read` takes
    tests = frozenset({"/tests/grade.py", "/tests/test.sh"})  # what the harness staged; report.xml is test.sh's own
    walked = {box: footprint.read(box, "/testbed", tests) for box in (base, cheat)}
    daemon = {box: footprint.through_daemon(box, "/testbed", tests) for box in (base, cheat)}
    assert footprint.introduced(walked[cheat], walked[base]) == INTRODUCED
    assert footprint.introduced(daemon[cheat], daemon[base]) == INTRODUCED
    assert footprint.introduced(walked[base], walked[base]) == footprint.introduced(daemon[base], daemon[base]) == []
    assert "/usr/local/bin/tb-grade" in walked[base] and "/usr/local/bin/tb-grade" in daemon[base]
    for box in (base, cheat):
        box.remove()
