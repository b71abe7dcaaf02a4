"""One option name per concept across commands: the rule, checked over the whole command tree.

NAMES below says what every option name means and what kind of value it takes; a command that uses a name
for anything else (the count `plan --tasks` vs the id list `run --tasks` this table ended), or a new name not
in the table, fails here. Renamed options keep their old spelling as a hidden alias (cli/aliases.py) that
warns with one line; the alias tests below check each is hidden, warns and parses to what today's name does.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from conftest import app
from trialbook.cli.aliases import ALIASES, rewrite

# name -> (kind of value, the one concept it names in every command that has it)
NAMES: dict[str, tuple[str, str]] = {
    # shared by many commands
    "--db": ("text", "the ledger: SQLite path or postgresql:// URL"),
    "--json": ("flag", "machine-readable output on stdout"),
    "--markdown": ("flag", "Markdown output on stdout"),
    "--csv": ("flag", "the tables as CSV on stdout"),
    "--run": ("text", "a run's name (the one written, or the one acted on)"),
    "--replace": ("flag", "overwrite what a run of that name already holds"),
    "--force": ("flag", "go ahead despite a safety refusal"),
    "--out": ("path", "where the command writes its output (file or folder)"),
    "--executor": ("text", "where trials run: local or ray"),
    "--ray-address": ("text", "the Ray cluster's address"),
    "--backend": ("text", "the sandbox backend: docker or podman"),
    "--engine": ("text", "a Docker/Podman endpoint URL trials are spread over"),
    "--hack-policy": ("text", "what a reward-hacking signature does to a rewarded trial's training reward"),
    # tasks and attempts
    "--tasks": ("int", "a number of tasks (planned, or in a simulated pool)"),
    "--task": ("text", "task id(s) to restrict to"),
    "--tasks-dir": ("path", "the folder of task folders"),
    "--attempts": ("int", "attempts per task (per agent in validate)"),
    "--holdout-attempts": ("int", "attempts per held-out task"),
    "--where": ("text", "an outcome selecting trials"),
    # harness
    "--agent": ("text", "the agent that runs: oracle, nop, mini, module:Class, file.py:Class"),
    "--agent-cmd": ("text", "a command run as the agent inside the sandbox"),
    "--concurrency": ("int", "trials at once"),
    "--timeout-multiplier": ("float", "agent timeout = task timeout x this"),
    "--deadline": ("float", "minutes until a run's stragglers are stopped"),
    "--retries": ("int", "retries of infrastructure failures"),
    "--warm-pool": ("flag", "start containers ahead of need"),
    "--no-warm-pool": ("flag", "start containers ahead of need (off)"),
    "--runtime": ("text", "the containers' OCI runtime"),
    "--runs-dir": ("path", "where runs/<run>/<trial>/ folders go"),
    "--endpoint": ("text", "an OpenAI-compatible server URL"),
    "--model": ("text", "the model name at the endpoint"),
    "--max-turns": ("int", "model calls per trial"),
    "--max-tokens": ("int", "tokens per trial"),
    "--max-output-tokens": ("int", "tokens per model reply"),
    "--api-key-env": ("text", "the environment variable holding the endpoint's key"),
    "--header": ("text", "NAME=VALUE sent on every model request"),
    "--agent-config": ("path", "the agent's config file (mini-swe-agent's shape)"),
    "--gateway": ("flag", "the model gateway in front of the endpoint (token ids per turn)"),
    "--chat-template": ("path", "the served model's .gguf, whose chat template the gateway renders"),
    "--all-on-host": ("flag", "every ledger's containers on the host, not this ledger's"),
    "--yes": ("flag", "do not ask for confirmation"),
    "-y": ("flag", "do not ask for confirmation (--yes)"),
    "-c": ("text", "KEY=VALUE over the agent's config"),
    "--config": ("text", "KEY=VALUE over the agent's config (-c)"),
    "--temperature": ("float", "the model's sampling temperature"),
    "--top-p": ("float", "the model's nucleus sampling"),
    "--stop-after-errors": ("int", "the same infra error on this many trials in a row stops the run"),
    "--progress-every": ("float", "seconds between progress lines in a log"),
    "--image-variant": ("text", "LABEL=IMAGE to validate under"),
    # baseline, candidates, statistics
    "--base": ("text", "the baseline run"),
    "--cand": ("text", "a candidate run"),
    "--candidates": ("int", "how many candidates a plan confirms at most"),
    "--compare": ("text", "BASE,CAND[,CAND...]: the runs of a comparison"),
    "--vs": ("text", "a second run contrasted with the first"),
    "--from-run": ("text", "the run whose variances a plan uses"),
    "--min-diff": ("float", "smallest gain (pp) worth claiming"),
    "--metric": ("text", "resolved or reward"),
    "--effect": ("float", "the true gain (pp) a plan must detect"),
    "--base-rate": ("float", "resolved % assumed when no run is given"),
    "--split": ("path", "task list: in/out rows"),
    "--exclude-tasks": ("path", "task list dropped from every run"),
    "--exclude-repo": ("text", "a repository whose tasks are dropped"),
    "--by-repo": ("flag", "per-repository breakdown"),
    "--bootstrap": ("flag", "add a task-bootstrap interval"),
    "--picked-from": ("int", "how many candidates the one compared was picked among"),
    "--list": ("text", "wins or losses: print those task ids"),
    "--check": ("flag", "exit 1 when no candidate claims"),
    "--family": ("text", "the family of looks a comparison belongs to"),
    "--export": ("text", "compare: also send its paired table to wandb or mlflow"),
    "--pool": ("path", "task list of the pool a plan splits"),
    "--train": ("int", "tasks a plan keeps for development"),
    "--holdout": ("int", "held-out tasks of a plan"),
    "--seed": ("int", "seed of a random split, a simulation, a model's sampling or a synthesizer's candidate order"),
    "--ungraded": ("text", "how a plan counts ungraded trials"),
    # imports, ledger, logs
    "--kind": ("text", "eval, train or validate"),
    "--reward-range": ("text", "LO,HI: where the run's rewards lie"),
    "--instances": ("path", "SWE-bench instances JSONL"),
    "--logs": ("path", "SWE-bench harness log folder"),
    "--jsonl": ("path", "the JSONL file export writes"),
    "--verifier": ("flag", "print the verifier's output"),
    "--patch": ("flag", "print the agent's change"),
    # audit and task building
    "--jobs": ("int", "local processes working at once"),
    "--min-trials": ("int", "trials a test must run in before 'fails in most' applies"),
    "--write-tasks": ("path", "file the artifact-showing tasks are written to"),
    "--write-gold": ("flag", "write the gold statuses validate found into each task's tests/config.json"),
    "--leaks": ("flag", "also scan each task's image for its solution (verify/leaks.py)"),
    "--scan-leaks": ("flag", "scan each image built for its solution (verify/leaks.py)"),
    "--no-scan-leaks": ("flag", "do not scan the images built for their solutions"),
    "--build": ("flag", "build images here from source"),
    "--repos": ("path", "folder of <owner>__<name>.git mirrors"),
    # training pools (tasks synthesize / overlap)
    "--repo": ("text", "a repository's OWNER/NAME"),
    "--max-candidates": ("int", "bug candidates a synthesizer tries at most"),
    "--test": ("text", "a test path of the repository that the suite runs"),
    "--pip": ("text", "a package installed beside the repository"),
    "--pytest-arg": ("text", "an extra pytest argument of the suite's run"),
    "--exclude": ("path", "exclusion list: functions and files a synthesizer leaves alone"),
    "--threshold": ("float", "problem-statement similarity from which an overlap is flagged"),
    "--write-split": ("path", "file the evaluation tasks in the overlap are written to"),
    "--write-heldout": ("path", "file the evaluation tasks out of the overlap are written to"),
    "--write-exclusions": ("path", "file the evaluation's changed functions and files are written to"),
    "--image": ("text", "SWE-bench image layout: official or venv"),
    "--registry": ("text", "registry host the official images are pulled from"),
    "--from-lock": ("path", "folder of task folders whose lock files a build reproduces"),
    # training and simulation
    "--bucket": ("int", "weight versions per bucket"),
    "--gpus": ("int", "GPUs of the run, to price stalls"),
    "--eval-set": ("text", "evaluation task list (file or run) to check overlap"),
    "--format": ("text", "jsonl or parquet"),
    "--batch": ("int", "groups per optimizer step"),
    "--group": ("int", "trajectories per group"),
    "--staleness": ("int", "the staleness bound (weight versions a trajectory may lag)"),
    "--epochs": ("int", "passes over the pool"),
    "--train-step-s": ("float", "seconds per optimizer step"),
    "--workers": ("int", "simulated concurrent trajectories"),
    "--durations-from": ("text", "run whose trajectory durations are resampled"),
    "--duration-dist": ("text", "lognormal:MU,SIGMA of durations"),
    "--cross-epoch": ("flag", "no epoch reset"),
    "--steps-out": ("path", "steps JSONL to write"),
    "--gain": ("float", "logit gain per re-encounter of a task"),
    "--incomplete": ("int", "trajectories cut off at the end"),
    "--stall-s": ("float", "wait of the first step of each new epoch"),
    "--speed": ("float", "log seconds per wall-clock second"),
    "--interval": ("float", "seconds between refreshes"),
    "--once": ("flag", "one snapshot, then exit"),
    "--until": ("text", "an alert that ends the watch"),
    "--timeout": ("float", "seconds a watch lasts at most"),
    "--webhook": ("text", "URL each alert is POSTed to"),
    "--infra-error-pct": ("float", "infra-error share that raises an alert"),
    "--top": ("int", "how many tasks are listed"),
    "--to": ("text", "train export: the destination, wandb or mlflow"),
    "--tracking-uri": ("text", "the MLflow server"),
    "--project": ("text", "W&B project / MLflow experiment"),
    # web
    "--host": ("text", "address to bind"),
    "--port": ("int", "TCP port"),
    "--token": ("text", "where the token a server requires is read from (env:VAR or file:PATH)"),
    "--html": ("path", "the HTML file to write"),
    "--train-run": ("text", "a training run (the report's training section)"),
    "--audit": ("text", "a run to audit (the report's signatures section)"),
    "--title": ("text", "title of the report"),
}

# The one name two commands use for different kinds of value, and why it stays: Click refuses a mix-up
# (`log 5 --agent mini` is an unexpected extra argument, exit 2), and issue 43 named it so.
SAME_NAME_OTHER_KIND = {("log", "--agent"): ("flag", "print the agent's log (or its trajectory)")}


def _kind(param: Any) -> str:
    if param.is_flag:
        return "flag"
    name = param.type.name
    return next((k for k in ("int", "float", "path") if name.startswith(k)), "text")


def _options(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, str, Any]]:
    if hasattr(cmd, "commands"):
        for param in cmd.params if path else []:
            yield from ((" ".join(path), name, param) for name in param.opts + param.secondary_opts)
        for name, sub in cmd.commands.items():
            yield from _options(sub, (*path, name))
        return
    for param in cmd.params:
        if param.param_type_name == "option":
            yield from ((" ".join(path), name, param) for name in param.opts + param.secondary_opts)


@pytest.fixture(scope="module")
def tree() -> Any:
    return typer.main.get_command(app)


def test_every_option_name_means_one_thing_in_every_command(tree):
    seen: dict[str, set[str]] = {}
    for command, name, param in _options(tree):
        if name == "--help":
            continue
        kind, concept = SAME_NAME_OTHER_KIND.get((command, name)) or NAMES.get(name, (None, None))
        assert concept is not None, f"`{command} {name}` is not in NAMES: add what it means (or use a name there)"
        assert _kind(param) == kind, f"`{command} {name}` takes a {_kind(param)}, but {name} means: {concept}"
        seen.setdefault(name, set()).add(command)
    assert not set(NAMES) - set(seen), f"NAMES lists names no command has: {sorted(set(NAMES) - set(seen))}"
    # the renames that made the rule hold: each name is now in the commands that share its concept
    assert {"plan", "sim pipeline", "sim rollouts"} == seen["--tasks"]
    assert {"run", "validate", "trials", "tasks from-swebench", "tasks scan-leaks", "tasks from-rebench"} == seen[
        "--task"
    ]
    assert {"quickstart", "grade", "reverify"} == seen["--tasks-dir"]
    assert {"run", "quickstart", "validate", "plan"} <= seen["--attempts"]


def test_one_name_per_concept():
    concepts = [concept for _, concept in NAMES.values()]
    assert len(concepts) == len(set(concepts)), "two names for one concept in NAMES"


def _command(tree: Any, path: str) -> Any:
    cmd = tree
    for part in path.split():
        cmd = cmd.commands[part]
    return cmd


def test_every_alias_is_hidden_and_names_an_option_of_its_command(tree, cli):
    assert len(ALIASES) >= 10
    for path, renames in ALIASES.items():
        cmd = _command(tree, path)
        names = {name for p in cmd.params for name in p.opts + p.secondary_opts}
        help_text = cli(*path.split(), "--help", use_db=False).stdout
        for old, new in renames.items():
            assert new in names and old not in names, (path, old, new)
            assert new in help_text and f"{old} " not in help_text and f"{old}\n" not in help_text, (path, old)


# the least each command needs to parse, without the aliased option
NEEDS = {
    "run": ["tasks", "--run", "r"], "validate": ["tasks"], "grade": ["p.jsonl", "--run", "r"],
    "reverify": ["old", "--run", "r"], "plan": ["--effect", "5"],
    "prereg init": ["--pool", "p", "--train", "1", "--holdout", "1", "--seed", "1", "--out", "o"],
    "tasks from-swebench": ["i.jsonl", "--out", "o"],
    "sim pipeline": ["--batch", "1", "--group", "1", "--staleness", "0", "--epochs", "1", "--train-step-s", "1",
                     "--workers", "1"],
    "sim rollouts": ["--out", "o"], "train watch": ["r"], "train export": ["r", "--to", "wandb"],
    "report": ["--html", "h.html"],
}  # fmt: skip


def _parsed(tree: Any, path: str, args: list[str]) -> dict[str, Any]:
    argv = rewrite(tree, [*path.split(), *args])
    cmd = _command(tree, path)
    return cmd.make_context(path, argv[len(path.split()) :]).params


def test_every_alias_parses_to_what_todays_name_does_and_warns_once(tree, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert set(NEEDS) == set(ALIASES)
    for path, renames in ALIASES.items():
        cmd = _command(tree, path)
        for old, new in renames.items():
            param = next(p for p in cmd.params if new in p.opts)
            value = {"int": "7", "float": "2.5", "path": "x"}.get(_kind(param), "a,b")
            today = _parsed(tree, path, [*NEEDS[path], new, value])
            capsys.readouterr()
            for spelling in ([old, value], [f"{old}={value}"]):
                assert _parsed(tree, path, [*NEEDS[path], *spelling]) == today, (path, old)
                err = capsys.readouterr().err
                assert err == f"warning: {old} is now {new} (the old name still works)\n", (path, old)
            assert today[param.name] not in (None, param.default), (path, new)


def test_an_alias_end_to_end_same_output_one_warning_line(cli):
    old = cli("plan", "--tasks", "100", "--repeats", "2", "--effect", "5", "--json", use_db=False)
    new = cli("plan", "--tasks", "100", "--attempts", "2", "--effect", "5", "--json", use_db=False)
    assert old.exit_code == new.exit_code == 0 and old.stdout == new.stdout
    assert old.stderr.splitlines() == ["warning: --repeats is now --attempts (the old name still works)"]
    assert "warning" not in new.stderr
    bad = cli("plan", "--tasks", "100", "--repeats", "0", "--effect", "5", use_db=False)
    assert bad.exit_code == 2 and bad.stderr.endswith("error: --attempts must be at least 1, not 0\n")


def test_both_spellings_of_one_option_are_refused(cli):
    res = cli("plan", "--tasks", "100", "--repeats", "2", "--attempts", "3", "--effect", "5", use_db=False)
    assert res.exit_code == 2 and "give --attempts or its old name --repeats, not both" in res.stderr


def test_a_repeatable_option_takes_both_spellings_together(tree, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    params = _parsed(tree, "run", ["tasks", "--run", "r", "--tasks", "a,b", "--task", "c"])
    assert list(params["tasks"]) == ["a,b", "c"]


def test_an_option_value_that_looks_like_an_old_name_is_left_alone(tree, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    params = _parsed(tree, "run", ["tasks", "--run", "r", "--agent-cmd", "--tasks"])
    assert params["agent_cmd"] == "--tasks" and not params["tasks"]
    assert rewrite(tree, ["run", "d", "--", "--tasks"]) == ["run", "d", "--", "--tasks"]
    assert rewrite(tree, ["compare", "--tasks", "b"]) == ["compare", "--tasks", "b"]  # not an alias there


def test_through_the_real_entry_point(tmp_path: Path):
    """`trialbook` itself (only the command's area loaded): the warning, then the command's own error."""
    tasks = tmp_path / "tasks"
    (tasks / "a").mkdir(parents=True)
    (tasks / "a" / "task.toml").write_text("")
    res = subprocess.run(
        [sys.executable, "-c", "from trialbook.cli import main; main()", "run", str(tasks), "--agent", "nop",
         "--run", "r", "--tasks", "nosuch", "--db", str(tmp_path / "l.db")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == [
        "warning: --tasks is now --task (the old name still works)",
        "error: unknown task(s) in --task: nosuch",
    ]
