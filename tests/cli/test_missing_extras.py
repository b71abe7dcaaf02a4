"""A missing optional extra: one line naming the pip command, exit 2; and the base commands need none.

Each check runs in a fresh interpreter whose import system refuses the extras' modules (a finder first
on sys.meta_path), as if `pip install trialbook` had installed only the core dependencies.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from paths import EXAMPLES, INSTANCES
from trialbook.extras import EXTRAS

# every module an extra brings that trialbook or the extra's own packages import at top level
BLOCKED = {
    "agent": ["minisweagent", "litellm", "openai"],
    "train": ["trl", "transformers", "datasets", "accelerate", "torch"],
    "postgres": ["psycopg"],
    "swebench": ["swebench", "datasets", "modal"],
    "ray": ["ray"],
    "dev": ["statsmodels"],
    "web": ["starlette", "uvicorn", "jinja2", "matplotlib"],
}

PRELUDE = """
import sys
BLOCKED = {blocked!r}

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)", name=name)
        return None

sys.meta_path.insert(0, Blocker())
"""


def run_blocked(extras: list[str], code: str) -> subprocess.CompletedProcess[str]:
    blocked = sorted({m for extra in extras for m in BLOCKED[extra]})
    return subprocess.run([sys.executable, "-c", PRELUDE.format(blocked=blocked) + code],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def cli_blocked(extras: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_blocked(extras, f"from trialbook.cli import main\nsys.argv = ['trialbook', *{list(args)!r}]\nmain()\n")


def test_the_blocker_really_blocks() -> None:
    res = run_blocked(["postgres"], "import psycopg\n")
    assert res.returncode == 1 and "blocked by the test" in res.stderr


def test_every_extra_named_in_extras_py_exists_in_pyproject() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert set(EXTRAS) <= set(pyproject["project"]["optional-dependencies"])


def test_postgres_ledger_without_the_postgres_extra(tmp_path: Path) -> None:
    res = cli_blocked(["postgres"], "runs", "--db", "postgresql://u:p@127.0.0.1:1/none")
    assert res.returncode == 2
    assert res.stderr == "error: a postgresql:// ledger needs the postgres extra: pip install 'trialbook[postgres]'\n"


def test_tasks_from_swebench_without_the_swebench_extra(tmp_path: Path) -> None:
    res = cli_blocked(["swebench"], "tasks", "from-swebench", str(INSTANCES), "--out", str(tmp_path / "t"))
    assert res.returncode == 2
    assert res.stderr == "error: tasks from-swebench needs the swebench extra: pip install 'trialbook[swebench]'\n"
    assert not (tmp_path / "t").exists()


def test_executor_ray_without_the_ray_extra() -> None:
    res = cli_blocked(["ray"], "clean", "--run", "none", "--executor", "ray", "--ray-address", "127.0.0.1:1")
    assert res.returncode == 2
    assert res.stderr == "error: --executor ray needs the ray extra: pip install 'trialbook[ray]'\n"


def test_mini_agent_without_the_agent_extra() -> None:
    code = """
from trialbook.agents import get_agent
from trialbook.errors import UserError
get_agent("oracle"), get_agent("nop")  # the agents without a model need nothing
try:
    get_agent("mini", {"endpoints": ["http://127.0.0.1:9"]})
except UserError as exc:
    print(exc.exit_code, exc)
"""
    res = run_blocked(["agent"], code)
    assert res.stdout == "2 the mini agent needs the agent extra: pip install 'trialbook[agent]'\n", res.stderr


def test_serve_and_html_report_without_the_web_extra(tmp_path: Path) -> None:
    for args, what in ((["serve"], "trialbook serve"), (["report", "--html", str(tmp_path / "r.html")],
                                                          "trialbook report --html")):  # fmt: skip
        res = cli_blocked(["web"], *args, "--db", str(tmp_path / "none.db"))
        assert res.returncode == 2
        assert res.stderr == f"error: {what} needs the web extra: pip install 'trialbook[web]'\n"
    assert not (tmp_path / "r.html").exists()


def test_train_grpo_without_the_train_extra(tmp_path: Path) -> None:
    code = f"""
from trialbook.errors import UserError
from trialbook.rl.trainers import train_grpo
try:
    train_grpo(None, {str(tmp_path)!r})
except UserError as exc:
    print(exc.exit_code, exc)
"""
    res = run_blocked(["train"], code)
    assert res.stdout == "2 train_grpo needs the train extra: pip install 'trialbook[train]'\n", res.stderr


def test_base_commands_need_no_extra(tmp_path: Path) -> None:
    """import, show, compare, plan, audit, regrade, attribute, sim, train report: `pip install trialbook`."""
    db = str(tmp_path / "ledger.db")
    for k, name in enumerate(("a", "b")):
        rows = [{"task_id": f"t{i}", "outcome": "resolved" if (i + k) % 3 else "unresolved"} for i in range(30)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    train = str(tmp_path / "train.jsonl")
    commands = [
        ["import", "jsonl", str(tmp_path / "a.jsonl"), "--run", "a", "--db", db],
        ["import", "jsonl", str(tmp_path / "b.jsonl"), "--run", "b", "--db", db],
        *([*args, "--json", "--db", db] for args in (
            ["show", "a"], ["compare", "a", "b"], ["plan", "--tasks", "30", "--repeats", "1", "--effect", "5",
            "--from-run", "a"], ["audit", "a"], ["regrade", "a"], ["attribute", "a", "b"])),
        ["sim", "rollouts", "--out", train, "--pool", "40", "--json"],
        ["import", "jsonl", train, "--run", "rl", "--kind", "train", "--db", db],
        ["train", "report", "rl", "--json", "--db", db],
    ]  # fmt: skip
    code = f"""
import json
from typer.testing import CliRunner
from trialbook.cli import load
app, runner = load(), CliRunner()
for args in {commands!r}:
    res = runner.invoke(app, args)
    print(json.dumps([args[:2], res.exit_code, repr(res.exception) if res.exception else None, res.stdout]))
"""
    res = run_blocked(["agent", "train", "postgres", "swebench", "ray", "dev"], code)
    results = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(results) == len(commands), res.stderr
    for command, (args, exit_code, exception, stdout) in zip(commands, results, strict=True):
        assert (exit_code, exception) == (0, None), args
        if "--json" in command:
            assert json.loads(stdout), args
    assert json.loads(results[-1][3])["buckets"]


def test_regrading_logs_without_the_swebench_extra(tmp_path: Path) -> None:
    """Grading a verifier log needs swebench's parsers: one line naming the extra, and the ledger untouched."""
    from paths import SWE

    logs = SWE / "logs" / "20240620_sweagent_claude3.5sonnet"
    db = str(tmp_path / "ledger.db")
    imported = cli_blocked(["swebench"], "import", "swebench", str(logs / "results.json"), "--instances",
                           str(SWE / "instances.jsonl"), "--logs", str(logs), "--run", "s", "--db", db)  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    for command in ("regrade", "audit"):
        res = cli_blocked(["swebench"], command, "s", "--db", db)
        assert res.returncode == 2, (command, res.stderr)
        assert res.stderr == (
            "error: grading test logs with swebench's parsers needs the swebench extra: "
            "pip install 'trialbook[swebench]'\n"
        ), command


def test_running_tasks_with_test_lists_without_the_swebench_extra(tmp_path: Path) -> None:
    """The example tasks list FAIL_TO_PASS / PASS_TO_PASS: without the grader, refused before any trial runs
    (not 12 infra_error trials). Found by running scripts/setup.sh in a fresh Debian container."""
    db = str(tmp_path / "l.db")
    runs = ["--runs-dir", str(tmp_path / "runs")]
    for args in (["run", str(EXAMPLES), "--agent", "oracle", "--run", "r", *runs], ["quickstart"]):
        res = cli_blocked(["swebench"], *args, "--db", db)
        assert res.returncode == 2, res.stderr
        assert res.stderr == (
            "error: grading tasks that list FAIL_TO_PASS / PASS_TO_PASS (the example tasks do) "
            "needs the swebench extra: pip install 'trialbook[swebench]'\n"
        ), args
    assert not (tmp_path / "runs").exists()
