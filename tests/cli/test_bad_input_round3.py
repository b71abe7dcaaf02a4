"""Issue 47, every bad input one line, round three: nothing silently defaulted or re-created. Each case goes
through the real entry point (a subprocess of `trialbook.cli.main`, or the in-process CliRunner where the
command needs nothing it starts) and checks the exit status (errors.py: 2 bad input, 1 runtime), the one line
on stderr (no traceback) and that the ledger and the runs folder are byte for byte as they were."""

from __future__ import annotations

import gc
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import pytest
import typer

from conftest import app
from paths import EXAMPLES
from trialbook.errors import UserError

CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]
ROWS = [
    {"task_id": "a__b-1", "attempt": 0, "outcome": "resolved", "reward": 1.0},
    {"task_id": "a__b-2", "attempt": 0, "outcome": "unresolved", "reward": 0.0},
    {"task_id": "c__d-1", "attempt": 0, "outcome": "resolved", "reward": 1.0},
]


def tb(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


def one_line(proc: Any, code: int, *needles: str) -> str:
    """`proc` (a subprocess's result, or the `cli` fixture's) exited `code` with one line on stderr and no stdout."""
    err, got = proc.stderr, getattr(proc, "returncode", getattr(proc, "exit_code", None))
    assert got == code, (got, err)
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert proc.stdout == ""
    for needle in needles:
        assert needle in err, err
    return err


def snapshot(*roots: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) at or under `roots`; a missing root is absent."""
    out: dict[str, bytes | None] = {}
    for root in roots:
        for p in [root, *(root.rglob("*") if root.is_dir() else [])]:
            if p.is_file():
                out[str(p)] = p.read_bytes()
            elif p.is_dir():
                out[str(p)] = None
    return out


def ledger(folder: Path, *, train: bool = False) -> Path:
    """A ledger with runs `r` and `r2` (and `tr`, a training run, with `train`), as `import jsonl` makes them,
    its connections closed (so that its folder can be made read-only with no -wal left)."""
    from trialbook.importers.jsonl import import_jsonl
    from trialbook.ledger.store import Ledger

    db = folder / "l.db"
    src = folder / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    store = Ledger(str(db))
    for run in ("r", "r2"):
        import_jsonl(store, src, run)
    if train:
        (folder / "train.jsonl").write_text(
            "".join(json.dumps({**r, "step": i, "wv": i}) + "\n" for i, r in enumerate(ROWS))
        )
        import_jsonl(store, folder / "train.jsonl", "tr", kind="train")
    store.engine.dispose()
    return db


def closed(cli: Any, *args: Any) -> Any:
    """The `cli` fixture's result of `args` (the ledger given with --db), every connection it left closed after."""
    res = cli(*map(str, args), use_db=False)
    gc.collect()  # the command's Ledger and its pool: SQLite removes an idle WAL's files at the last close
    return res


@contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """`path` (a file or a folder) read-only for real: as root a read-only bind mount over itself (a read-only
    file system), else its write permission bits removed."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        try:
            yield path
        finally:
            path.chmod(mode)
        return
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)
        yield path
    finally:  # lazy: a connection the in-process CLI left open must not keep the mount
        subprocess.run(["umount", "-l", str(path)], check=True)


# ---- numbers: nan and inf refused wherever a number is read ---------------------------------------------


def test_run_refuses_a_non_finite_number_and_writes_nothing(tmp_path, cli):
    db, runs = ledger(tmp_path), tmp_path / "runs"
    (runs / "old").mkdir(parents=True)
    (runs / "old" / "keep.txt").write_text("x")
    before = snapshot(db, runs)
    run = ["run", EXAMPLES, "--agent", "nop", "--run", "x", "--runs-dir", runs, "--db", db]
    res = tb(*run, "--timeout-multiplier", "nan")  # through main, in a process of its own
    one_line(res, 2, "--timeout-multiplier must be a finite number, not nan")
    for option in (("--timeout-multiplier", "inf"), ("--deadline", "nan"), ("--deadline", "inf")):
        one_line(closed(cli, *run, *option), 2, f"{option[0]} must be a finite number, not {option[1]}")
    assert snapshot(db, runs) == before


def _float_options(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """(command path, option) of every float option (Typer builds them on its own copy of Click: duck-typed)."""
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from _float_options(sub, (*path, name))
        return
    for param in cmd.params:
        if param.param_type_name == "option" and param.type.name in ("float", "float range"):
            yield path, param.opts[0]


def test_every_float_option_of_every_command_refuses_nan_and_inf(cli):
    found = list(_float_options(typer.main.get_command(app)))
    assert len(found) >= 10 and (("run",), "--deadline") in found and (("compare",), "--min-diff") in found
    for path, option in found:
        for value in ("nan", "inf"):  # given first: Click processes it before any missing argument
            res = cli(*path, option, value, use_db=False)
            assert res.exit_code == 2, (path, option, res)
            assert res.stderr == f"error: {option} must be a finite number, not {value}\n", (path, option)


def test_a_stored_config_is_strict_json():
    from pydantic import ValidationError

    from trialbook.harness.run.config import RunConfig

    for field in ("timeout_multiplier", "deadline_minutes", "backoff_s"):
        with pytest.raises(ValidationError, match="finite number"):
            RunConfig(tasks_dir="t", agent="nop", **{field: float("inf")})


# ---- --runs-dir: a file, a read-only file system --------------------------------------------------------


def test_runs_dir_naming_a_file(tmp_path, cli):
    db, file = tmp_path / "new.db", tmp_path / "runs"
    file.write_text("not a folder")
    one_line(tb("run", EXAMPLES, "--agent", "nop", "--run", "x", "--runs-dir", file, "--db", db), 2,
             f"--runs-dir {file}: {file} is a file, not a folder")  # fmt: skip
    for runs_dir, needle in ((file, "is a file, not a folder"), (file / "under", f"{file} is a file")):
        for cmd in (["run", EXAMPLES, "--agent", "nop", "--run", "x"], ["validate", EXAMPLES]):
            one_line(closed(cli, *cmd, "--runs-dir", runs_dir, "--db", db), 2, "--runs-dir", needle)
    assert not db.exists() and file.read_text() == "not a folder"  # the ledger is not even created


def test_runs_dir_on_a_read_only_file_system(tmp_path, cli):
    db, mnt = ledger(tmp_path), tmp_path / "mnt"
    (mnt / "runs" / "old").mkdir(parents=True)
    (mnt / "runs" / "old" / "keep.txt").write_text("x")
    before = snapshot(db, mnt)
    reason = "is on a read-only file system" if os.geteuid() == 0 else "is not writable"
    with read_only(mnt):
        run = ["run", EXAMPLES, "--agent", "nop", "--run", "x", "--db", db]
        one_line(tb(*run, "--runs-dir", mnt / "runs"), 2, f"--runs-dir {mnt / 'runs'}: ", reason)
        for runs_dir in (mnt / "runs" / "new", mnt / "fresh"):
            one_line(closed(cli, *run, "--runs-dir", runs_dir), 2, f"--runs-dir {runs_dir}: ", reason)
    assert snapshot(db, mnt) == before


@pytest.mark.docker  # `resume` connects to the daemon before it takes the run's lock
def test_resume_when_the_stored_runs_dir_became_read_only(tmp_path, cli, db):
    from trialbook.harness.run.config import RunConfig
    from trialbook.ledger.store import Ledger
    from trialbook.records import Run

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    config = RunConfig(tasks_dir=str(EXAMPLES), agent="nop", tasks=["plain-bugfix"], runs_dir=str(mnt / "runs"))
    infinite = {**config.model_dump(), "timeout_multiplier": float("inf")}  # as stored before it was refused
    store = Ledger(db)
    with store.transaction() as conn:
        store.create_run(conn, Run(name="gone", kind="eval", config=config.model_dump(), stack={}, source="t"))
        store.create_run(conn, Run(name="inf", kind="eval", config=infinite, stack={}, source="t"))
    store.engine.dispose()
    before = snapshot(Path(db), mnt)
    with read_only(mnt):
        res = tb("resume", "gone", "--db", db)
    one_line(res, 1, f"cannot write the run's folder {mnt / 'runs' / 'gone'}")
    one_line(
        tb("resume", "inf", "--db", db),
        2,
        "run 'inf': its stored config cannot be run again: timeout_multiplier: Input should be a finite number",
    )
    assert snapshot(Path(db), mnt) == before


# ---- the ledger: never re-initialised, readable when read-only -----------------------------------------


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        ("DROP TABLE meta", "it has trialbook tables (artifacts, "),
        ("DELETE FROM meta WHERE key = 'ledger_id'", "its meta table has no ledger_id"),
        ("DELETE FROM meta WHERE key = 'schema_version'", "its meta table has no schema version"),
    ],
)
def test_a_ledger_that_lost_its_meta_is_refused_never_re_created(tmp_path, cli, damage, needle):
    db = ledger(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute(damage)
    conn.close()
    before = snapshot(db)
    commands = [
        ["runs"], ["show", "r"], ["compare", "r", "r2"], ["import", "jsonl", tmp_path / "rows.jsonl", "--run", "r3"],
        ["run", EXAMPLES, "--agent", "nop", "--run", "x", "--runs-dir", tmp_path / "runs"],
    ]  # fmt: skip
    message = f"ledger sqlite:///{db} is damaged: {needle}"
    one_line(tb("runs", "--db", db), 1, message, "not re-initialised")  # through main
    for args in commands:
        one_line(closed(cli, *args, "--db", db), 1, message, "not re-initialised")
    assert snapshot(db) == before and not (tmp_path / "runs").exists()


READERS = [
    ["runs"], ["runs", "--json"], ["show", "r"], ["show", "r", "--json"], ["compare", "r", "r2"],
    ["compare", "r", "r2", "--json"], ["audit", "r"],
    ["attribute", "r", "r2"], ["train", "report", "tr"], ["plan", "--tasks", "40", "--repeats", "2", "--effect", "5",
    "--from-run", "r"],
]  # fmt: skip


@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_read_only_ledger_is_read_by_every_reporting_command(tmp_path, cli, what):
    """The same output as while it was writable; commands that write are refused with one line, nothing changed."""
    home = tmp_path / "home"
    home.mkdir()
    db = ledger(home, train=True)
    expected = {tuple(args): closed(cli, *args, "--db", db) for args in READERS}
    assert all(res.exit_code == 0 for res in expected.values()), expected
    assert sorted(p.name for p in home.iterdir()) == ["l.db", "rows.jsonl", "train.jsonl"]  # no -wal to read
    before = snapshot(db)
    with read_only(home if what == "folder" else db):
        for args in (["runs", "--json"], ["compare", "r", "r2", "--json"]):  # through main: sqlite3's, SQLAlchemy's
            got = tb(*args, "--db", db)
            assert got.returncode == 0 and got.stdout == expected[tuple(args)].stdout, (args, got.stderr)
        for args in READERS:
            got = closed(cli, *args, "--db", db)
            assert got.exit_code == 0 and got.stdout == expected[tuple(args)].stdout, (args, got.stderr)
        out, html = tmp_path / "out.jsonl", tmp_path / "report.html"
        assert closed(cli, "export", "r", "--jsonl", out, "--db", db).exit_code == 0
        assert len(out.read_text().splitlines()) == 3
        res = closed(cli, "report", "--html", html, "--compare", "r,r2", "--train", "tr", "--db", db)  # as `serve`
        assert res.exit_code == 0 and "r2" in html.read_text(), res.stderr
        one_line(tb("import", "jsonl", home / "rows.jsonl", "--run", "r3", "--db", db), 2, "this command writes")
        for writer in (["runs", "delete", "r"], ["runs", "rename", "r", "r9"], ["rerun", "r", "--where", "resolved"]):
            one_line(closed(cli, *writer, "--db", db), 2, "is on a read-only file system: this command writes"
                     if os.geteuid() == 0 else "this command writes")  # fmt: skip
    assert snapshot(db) == before


def _wal_left_behind(db: Path) -> None:
    """A committed trial only in db's -wal (the writer killed before any checkpoint), as after kill -9."""
    code = (
        "import os, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_autocheckpoint=0');"
        "c.execute(\"UPDATE runs SET name = 'renamed' WHERE name = 'r2'\"); c.commit(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)
    assert Path(f"{db}-wal").stat().st_size > 0


def test_a_read_only_ledger_with_its_wal_is_read_through_it_or_refused(tmp_path, cli):
    home = tmp_path / "home"
    home.mkdir()
    db = ledger(home)
    _wal_left_behind(db)
    with read_only(home):  # -wal and -shm there: SQLite reads the -wal's transaction
        for args in (["runs", "--json"], ["show", "renamed", "--json"]):
            res = closed(cli, *args, "--db", db)
            assert res.exit_code == 0 and "renamed" in res.stdout, (args, res.stderr)
    Path(f"{db}-shm").unlink()  # no -shm, and none can be made: reading the file alone would miss the rename
    before = snapshot(home)
    with read_only(home):
        one_line(tb("runs", "--db", db), 1, "its -wal file holds transactions")
        one_line(closed(cli, "compare", "r", "renamed", "--db", db), 1, "its -wal file holds transactions")
    assert snapshot(home) == before


# ---- task folders ----------------------------------------------------------------------------------------


def test_a_typo_in_task_toml_names_the_nearest_key(tmp_path):
    from trialbook.tasks import load_task

    task = tmp_path / "t"
    shutil.copytree(EXAMPLES / "plain-bugfix", task)
    toml = (task / "task.toml").read_text()
    for typo, message in [
        ("[agent]\ntimeout_secs = 5", "unknown key [agent] timeout_secs (did you mean timeout_sec?)"),
        ("[environment]\nmemory_mbs = 64", "unknown key [environment] memory_mbs (did you mean memory_mb?)"),
        ("timeout_sec = 5", "unknown key timeout_sec (it belongs in [agent] or [verifier])"),
    ]:
        section, line = typo.rsplit("\n", 1) if "\n" in typo else ("", typo)
        text = toml.replace(section, f"{section}\n{line}") if section else f"{line}\n{toml}"
        (task / "task.toml").write_text(text)
        with pytest.raises(ValueError) as err:
            load_task(task)
        assert str(err.value) == f"invalid task.toml: {message}"


def test_harbor_keys_load_and_a_newer_schema_warns(tmp_path):
    from trialbook.errors import InputWarning
    from trialbook.tasks import load_task

    task = tmp_path / "t"
    shutil.copytree(EXAMPLES / "plain-bugfix", task)
    toml = (task / "task.toml").read_text().replace("[environment]", "[environment]\nstorage_mb = 10240")
    (task / "task.toml").write_text('version = "1.0"\n' + toml)
    assert load_task(task).task_id == "t"  # Harbor's own keys are accepted (and not applied)
    (task / "task.toml").write_text('version = "1.3"\n' + toml.replace("[agent]", "[agent]\nturn_budget = 9"))
    with pytest.warns(InputWarning, match=r"task t: task.toml declares schema 1.3, newer than 1.1; keys ignored: "
                                          r"\[agent\] turn_budget$"):  # fmt: skip
        load_task(task)
    (task / "task.toml").write_text("version = 2\n" + toml)
    with pytest.raises(ValueError, match='version must be a string like "1.1", not 2'):
        load_task(task)


def test_main_prints_an_input_warning_as_one_line(capsys, monkeypatch):
    from trialbook import cli as cli_module
    from trialbook.errors import InputWarning

    others: list[object] = []
    monkeypatch.setattr(cli_module, "_python_show", lambda message, *args, **kwargs: others.append(message))
    cli_module._show_warning(InputWarning("task t: newer"), InputWarning, "loader.py", 1)
    cli_module._show_warning(DeprecationWarning("old"), DeprecationWarning, "x.py", 7)
    assert capsys.readouterr().err == "warning: task t: newer\n"
    assert [str(m) for m in others] == ["old"]  # any other warning is Python's to show


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("task.toml", b"\xff\xfe[agent]\n", "task.toml is not UTF-8 text (byte 0xff at offset 0)"),
        ("tests/config.json", b'{"FAIL_TO_PASS": "\xc3\x28"}', "tests/config.json is not UTF-8 text (byte 0xc3 at"),
        ("tests/config.json", b"[1, 2]", "tests/config.json must be a JSON object (FAIL_TO_PASS, ...), not a list"),
        ("tests/config.json", b'{"FAIL_TO_PASS": "tests/x.py::t"}',
         "tests/config.json: FAIL_TO_PASS is a string that is not a JSON list of test names (Expecting value"),
        ("tests/config.json", b'{"PASS_TO_PASS": [1, "a"]}',
         "tests/config.json: PASS_TO_PASS must be a list of test names, not a list holding a number"),
        ("tests/config.json", b'{"FAIL_TO_PASS": {"a": 1}}',
         "tests/config.json: FAIL_TO_PASS must be a list of test names, not an object"),
        ("tests/test.sh", b"\x7fELF\x02\x01\x01\x00\x00garbage", "tests/test.sh is not a script: binary content"),
        ("tests/test.sh", b"#!/usr/bin/env python3\nprint(1)\n",
         "tests/test.sh starts with '#!/usr/bin/env python3': the verifier runs test.sh with bash"),
        ("solution/solve.sh", b"#!/bin/bash\n\xff\n", "solution/solve.sh is not UTF-8 text (byte 0xff at offset 12)"),
    ],
)  # fmt: skip
def test_broken_task_files_are_named_with_what_is_wrong(tmp_path, file, content, message):
    from trialbook.tasks import load_tasks

    task = tmp_path / "tasks" / "broken"
    shutil.copytree(EXAMPLES / "plain-bugfix", task)
    (task / file).write_bytes(content)
    specs, errors = load_tasks(tmp_path / "tasks")
    assert specs == [] and len(errors) == 1 and errors[0].message.startswith(message), errors
    assert "\n" not in errors[0].message


def test_shell_scripts_of_every_spelling_still_load(tmp_path):
    from trialbook.tasks import load_task

    task = tmp_path / "t"
    shutil.copytree(EXAMPLES / "plain-bugfix", task)
    body = (task / "tests" / "test.sh").read_text().split("\n", 1)[1]
    for first in ("#!/bin/bash", "#!/bin/sh", "#!/usr/bin/env bash", "#!/usr/bin/env -S bash -e", "# no shebang"):
        (task / "tests" / "test.sh").write_text(f"{first}\n{body}")
        assert load_task(task).task_id == "t", first


def test_finite_checks_every_item_of_a_list():
    from trialbook.cli.common import finite

    param = click.Option(["--x"])
    assert finite(param, 1.5) == 1.5 and finite(param, None) is None and finite(param, [1.0, 2.0]) == [1.0, 2.0]
    with pytest.raises(UserError, match="--x must be a finite number, not nan"):
        finite(param, [1.0, float("nan")])


def test_numbers_and_files_read_from_other_options_are_checked_too(tmp_path, cli):
    sim = ["sim", "pipeline", "--batch", "2", "--group", "2", "--staleness", "1", "--pool", "8", "--epochs", "1",
           "--train-step-s", "10", "--workers", "2"]  # fmt: skip
    for spec in ("lognormal:nan,1", "lognormal:1,inf", "lognormal:-inf,0"):
        one_line(closed(cli, *sim, "--duration-dist", spec), 2, "(finite, SIGMA >= 0)")
    db, plan = ledger(tmp_path), tmp_path / "plan.yaml"
    plan.write_bytes(b"hash: \xff\xfe\n")
    before = snapshot(db)
    one_line(closed(cli, "prereg", "check", plan, "--base", "r", "--cand", "r2", "--db", db), 2,
             f"{plan}: not UTF-8 text (byte 0xff at offset 6)")  # fmt: skip
    assert snapshot(db) == before
