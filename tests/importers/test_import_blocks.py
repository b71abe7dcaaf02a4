"""The JSONL import's fast paths: file blocks in worker processes, and msgspec's typed decoding.

Each is checked against the plain way it replaces: blocks against reading the file line by
line, the typed decoder against the hand-written checks that explain a refused line.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trialbook.errors import LineError, TrialbookError, UserError
from trialbook.importers import blocks
from trialbook.importers.jsonl import DECODE_LINE, FIELD_TYPES, Line, read_line, read_slowly
from trialbook.ledger.store import Ledger
from trialbook.records import Run

# ---- blocks -------------------------------------------------------------------------------


def _numbered_lines(data: bytes) -> list[tuple[int, bytes]]:
    """What checked_blocks must reproduce: (line number, line) for each non-blank line."""
    return [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]


def _as_read_by_blocks(path: Path) -> list[tuple[int, bytes]]:
    out = []
    for before, (numbers, lines) in blocks.checked_blocks(path, blocks.block_lines):
        out += [(before + n, line) for n, line in zip(numbers, lines, strict=True)]
    return out


LINE = st.one_of(st.just(b""), st.just(b"  "), st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b"x")))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE, max_size=60), newline_at_end=st.booleans(), block=st.integers(1, 64))
def test_blocks_partition_the_file_and_number_its_lines(tmp_path, monkeypatch, lines, newline_at_end, block):
    data = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", block)
    with path.open("rb") as fh:
        parts = [blocks.read_block(fh, s, e) for s, e in blocks._bounds(path.stat().st_size)]
    assert b"".join(parts) == data  # every byte in exactly one block, in order
    filled = [p for p in parts if p]
    assert all(p.endswith(b"\n") for p in filled[:-1])  # blocks end at line ends
    assert _as_read_by_blocks(path) == _numbered_lines(data)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_worker_processes_give_the_same_lines_in_order(tmp_path, monkeypatch, workers):
    data = b"".join(b'{"n": %d}\n' % i + (b"\n" if i % 97 == 0 else b"") for i in range(20_000))
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 1000)
    monkeypatch.setattr(blocks, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(blocks, "WORKERS", workers)
    assert _as_read_by_blocks(path) == _numbered_lines(data)


def _fail_at(marker: bytes):
    def check(data: bytes) -> int:
        numbers, lines = blocks.block_lines(data)
        for n, line in zip(numbers, lines, strict=True):
            if marker in line:
                raise LineError(n, "found the marker")
            if b"crash" in line:
                raise ValueError("a bug")
        return len(lines)

    return check


def test_a_workers_line_error_names_the_line_in_the_file(tmp_path, monkeypatch):
    lines = [b"line %d" % i for i in range(5000)]
    lines[3777] = b"MARK"
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 700)
    for minimum in (0, 1 << 30):  # in worker processes, then in this one
        monkeypatch.setattr(blocks, "PARALLEL_MIN_BYTES", minimum)
        with pytest.raises(LineError, match="^line 3778: found the marker$"):
            sum(n for _, n in blocks.checked_blocks(path, _fail_at(b"MARK")))


def test_a_worker_bug_is_raised_and_no_worker_outlives_the_import(tmp_path, monkeypatch):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(5000)) + b"crash\n")
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 700)
    monkeypatch.setattr(blocks, "PARALLEL_MIN_BYTES", 0)
    with pytest.raises(RuntimeError, match="(?s)failed.*ValueError: a bug"):
        list(blocks.checked_blocks(path, _fail_at(b"MARK")))
    early = blocks.checked_blocks(path, _fail_at(b"MARK"))
    next(early)
    early.close()  # the consumer stops after one block (as an import does on a duplicate attempt)
    assert multiprocessing.active_children() == []


def _start_import(path: Path, db: Path) -> subprocess.Popen:
    """`trialbook import jsonl` in its own process group, with Ctrl-C as a terminal would deliver it."""
    argv = [sys.executable, "-c", "from trialbook.cli import main; main()", "import", "jsonl", str(path)]
    proc = subprocess.Popen(
        [*argv, "--run", "big", "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while len(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()) < blocks.WORKERS:
        assert proc.poll() is None and time.monotonic() < deadline, "the import never started its workers"
        time.sleep(0.02)
    return proc


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    line = '{"task_id": "django__django-%d", "outcome": "unresolved", "step": 1, "tokens": 1234, "duration_s": 61.5}\n'
    path.write_text("".join(line % (i % 500) for i in range(400_000)))
    return path


@pytest.mark.parametrize("how", ["ctrl-c", "kill -9"])
def test_an_interrupted_import_leaves_no_run_no_workers_and_a_usable_ledger(tmp_path, big_file, how):
    db = tmp_path / "l.db"
    proc = _start_import(big_file, db)
    workers = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    os.killpg(proc.pid, signal.SIGINT) if how == "ctrl-c" else proc.kill()
    _, err = proc.communicate(timeout=30)
    if how == "ctrl-c":  # Typer's quiet exit 130 (128 + SIGINT), and nothing from the workers
        assert (proc.returncode, err) == (130, "")
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{w}").exists() and "zombie" not in Path(f"/proc/{w}/status").read_text() for w in workers):
        assert time.monotonic() < deadline, "a worker outlived the import"
        time.sleep(0.05)
    assert Ledger(str(db)).run_names() == []
    proc = _start_import(big_file, db)  # the same import again, to the end
    assert proc.wait(timeout=120) == 0
    assert Ledger(str(db)).count_trials(Ledger(str(db)).get_run("big").id) == 400_000


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        next(blocks.checked_blocks(tmp_path / "absent.jsonl", len))


# ---- typed decoding against the hand-written checks ----------------------------------------

VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1]),
    st.floats(-2, 2, allow_nan=False), st.sampled_from(["", "x", "resolved", "unresolved", "agent_timeout", "passed"]),
    st.just({"FAIL_TO_PASS": {"t": "PASSED"}}), st.just([1]),
)  # fmt: skip
KEYS = st.sampled_from([*FIELD_TYPES, "custom", "note"])
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=8).map(lambda d: {"task_id": "django__django-1", **d})


def _outcome(read, raw: bytes):
    try:
        return read(raw, 7)
    except LineError as exc:
        assert exc.line == 7
        return "refused"


@settings(max_examples=1000, deadline=None)
@given(obj=st.one_of(OBJECTS, st.dictionaries(KEYS, VALUES, max_size=4)))
def test_typed_decoder_accepts_exactly_what_the_slow_checks_accept(obj):
    raw = json.dumps(obj).encode()
    slow = _outcome(read_slowly, raw)
    assert _outcome(read_line, raw) == slow  # the same Line and extra, or refused both ways
    try:
        DECODE_LINE(raw)
        fast_accepts = True
    except Exception:
        fast_accepts = False
    assert fast_accepts == (slow != "refused" and slow[1] is None)


def test_line_fields_are_the_known_keys():
    assert set(Line.__struct_fields__) == set(FIELD_TYPES)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"task_id": "a", "resolved": true, "tokens": 18446744073709551615}', "tokens must fit in a 64-bit integer"),
        (b'{"task_id": "a", "resolved": true, "step": 1.5}', "step must be an integer, got 1.5"),
        (b'{"task_id": "a", "attempt": -1, "resolved": true}', "attempt must be a non-negative integer"),
        (b'{"task_id": "", "resolved": true}', "missing or empty 'task_id'"),
        (b'{"task_id": "a", "outcome": "passed"}', "unknown outcome 'passed'"),
    ],
)
def test_refused_lines_are_explained(raw, message):
    with pytest.raises(LineError, match=message):
        read_line(raw, 1)


def test_a_database_error_from_the_bulk_insert_is_one_clear_error(tmp_path):
    ledger = Ledger(str(tmp_path / "l.db"))
    columns = ("run_id", "task_id", "attempt", "outcome")
    failed = pytest.raises(TrialbookError, match="ledger write failed, nothing was changed")
    with failed, ledger.transaction() as conn:
        run_id = ledger.create_run(conn, Run(name="r"))
        ledger.insert_trials(conn, iter([(run_id, None, 0, "unresolved")]), columns)  # task_id NOT NULL
    assert ledger.run_names() == []
